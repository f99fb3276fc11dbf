"""POST /api/v1/memories/search through the API, on the real database with the real local model."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory_app.models import AgentProfile, Memory
from memory_app.models.memory import MemoryStatus
from tests.factories.recall import remember

URL = "/api/v1/memories/search"


def search(tc, query: str, **body):
    filters = body.get("filters", {})
    if "user_id" not in body and "user_id" not in filters and filters.get("kind") != "semantic":
        body["all_users"] = True  # these tests read across users on purpose
    response = tc.client.post(URL, {"query": query, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def texts(body) -> list[str]:
    return [hit["text"] for hit in body["results"]]


@pytest.fixture
def garden(tenant_a):
    t = tenant_a.tenant
    remember(t, "Alice grows tomatoes and basil in her garden", topics=["garden"], entities=["Alice"])
    remember(t, "Alice's favourite programming language is Rust", topics=["work"], entities=["Alice"])
    remember(
        t, "Bob is training for the Berlin marathon", user_id="user-2", topics=["sport"], entities=["Bob"]
    )
    return tenant_a


@pytest.mark.parametrize("mode", ["hybrid", "vector", "fulltext"])
def test_each_mode_finds_the_matching_memory_first(garden, mode):
    body = search(garden, "What does Alice grow in the garden?", mode=mode, filters={"user_id": "user-1"})
    assert body["mode"] == mode
    assert texts(body)[0] == "Alice grows tomatoes and basil in her garden"


def test_vector_mode_finds_a_paraphrase_without_shared_words(garden):
    body = search(garden, "vegetables she cultivates outdoors", mode="vector", filters={"user_id": "user-1"})
    assert texts(body)[0].startswith("Alice grows tomatoes")


def test_user_filter_keeps_other_users_out(garden):
    body = search(garden, "marathon training", filters={"user_id": "user-1"})
    assert all("marathon" not in text for text in texts(body))
    body = search(garden, "marathon training", filters={"user_id": "user-2"})
    assert texts(body) == ["Bob is training for the Berlin marathon"]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"topics_any": ["garden", "sport"]}, {"garden", "sport"}),
        ({"topics_all": ["work"]}, {"work"}),
        ({"entities": ["Bob"]}, {"sport"}),
        ({"kind": "semantic"}, set()),
    ],
)
def test_topic_entity_and_kind_filters(garden, filters, expected):
    body = search(garden, "Alice Bob garden marathon Rust", filters=filters)
    assert {hit["memory"]["topics"][0] for hit in body["results"]} == expected


def test_scope_filters_agent_namespace_session(tenant_a):
    t = tenant_a.tenant
    remember(
        t, "The deploy runbook lives in the ops wiki", agent_id="ops-bot", namespace="ops", session_id="s1"
    )
    remember(
        t, "The deploy runbook was rewritten in May", agent_id="helper", namespace="ops", session_id="s2"
    )
    remember(t, "The deploy runbook needs a new owner", agent_id="ops-bot", namespace="team", session_id="s1")
    for filters, count in (
        ({"agent_id": "ops-bot"}, 2),
        ({"namespace": "ops"}, 2),
        ({"session_id": "s2"}, 1),
        ({"agent_id": "ops-bot", "namespace": "ops", "session_id": "s1"}, 1),
    ):
        assert search(tenant_a, "deploy runbook", filters=filters)["count"] == count, filters


def test_created_and_event_date_ranges(tenant_a):
    t = tenant_a.tenant
    now = timezone.now()
    remember(t, "Visited the dentist for a checkup", age_days=40, event_date=now - timedelta(days=40))
    remember(t, "Visited the dentist again for a filling", age_days=2, event_date=now - timedelta(days=2))
    week_ago = (now - timedelta(days=7)).isoformat()
    assert texts(search(tenant_a, "dentist", filters={"created_after": week_ago})) == [
        "Visited the dentist again for a filling"
    ]
    assert texts(search(tenant_a, "dentist", filters={"created_before": week_ago})) == [
        "Visited the dentist for a checkup"
    ]
    assert texts(search(tenant_a, "dentist", filters={"event_after": week_ago})) == [
        "Visited the dentist again for a filling"
    ]
    assert texts(search(tenant_a, "dentist", filters={"event_before": week_ago})) == [
        "Visited the dentist for a checkup"
    ]


def test_min_confidence_and_superseded_rows(tenant_a):
    t = tenant_a.tenant
    low = remember(t, "Carol drinks oat milk", confidence=0.2)
    old = remember(t, "Carol lives in Lisbon", confidence=0.9)
    new = remember(t, "Carol lives in Porto", confidence=0.9)
    Memory.objects.filter(pk=old.pk).update(status=MemoryStatus.SUPERSEDED, superseded_by=new)
    ids = {hit["memory"]["id"] for hit in search(tenant_a, "Carol lives milk")["results"]}
    assert ids == {low.pk, new.pk}
    ids = {
        hit["memory"]["id"] for hit in search(tenant_a, "Carol", filters={"min_confidence": 0.5})["results"]
    }
    assert ids == {new.pk}
    body = search(tenant_a, "Carol lives", filters={"include_superseded": True}, deduplicate=False)
    assert old.pk in {hit["memory"]["id"] for hit in body["results"]}


def test_decay_ranks_an_old_memory_below_a_fresh_equally_relevant_one(tenant_a):
    t = tenant_a.tenant
    remember(t, "Dana adopted a cat named Miso", age_days=400)
    remember(t, "Dana adopted a cat called Miso", age_days=1)
    body = search(tenant_a, "Dana adopted a cat named Miso", half_life_days=30, deduplicate=False)
    assert texts(body)[0] == "Dana adopted a cat called Miso"
    body = search(tenant_a, "Dana adopted a cat named Miso", half_life_days=0, deduplicate=False)
    assert texts(body)[0] == "Dana adopted a cat named Miso"


def test_load_time_dedup_returns_one_entry_with_every_member(tenant_a):
    t = tenant_a.tenant
    short = remember(t, "Erin prefers green tea")
    rich = remember(t, "Erin prefers green tea in the morning")
    other = remember(t, "Erin's BMI goal is 23")
    body = search(tenant_a, "Erin green tea in the morning")
    first = body["results"][0]
    assert first["text"] == "Erin prefers green tea in the morning"
    assert sorted(first["member_ids"]) == sorted([short.pk, rich.pk])
    assert other.pk not in first["member_ids"]
    body = search(tenant_a, "Erin green tea in the morning", deduplicate=False)
    assert all(len(hit["member_ids"]) == 1 for hit in body["results"])
    assert body["count"] == 3


GINA = [
    "Gina is afraid of heights",
    "Gina likes to sit by the window when flying",
    "Gina loves looking down from tall towers",
    "Gina is scared of flying over the sea",
]


@pytest.mark.parametrize("query", ["Is Gina afraid of heights?", "Gina heights fear"])
def test_a_collapsed_result_shows_the_memory_the_query_matches_best_as_itself(tenant_a, query):
    rows = {text: remember(tenant_a.tenant, text) for text in GINA}
    body = search(tenant_a, query)
    first = body["results"][0]
    assert first["text"] == "Gina is afraid of heights"
    assert first["memory"]["id"] == rows["Gina is afraid of heights"].pk
    shown = [hit["text"] for hit in body["results"]]
    members = [i for hit in body["results"] for i in hit["member_ids"]]
    assert sorted(members) == sorted(m.pk for m in rows.values())  # nothing is dropped
    # Every entry shows the text of its own best-ranked member, never another member's.
    for hit in body["results"]:
        assert hit["text"] == Memory.objects.get(pk=hit["member_ids"][0]).text
    assert len(shown) == len(set(shown))


def test_a_poorer_best_match_is_not_hidden_under_a_richer_text(tenant_a):
    t = tenant_a.tenant
    remember(t, "Hal prefers green tea")
    remember(t, "Hal prefers green tea in the morning")
    body = search(tenant_a, "Hal prefers green tea")
    assert texts(body)[:2] == ["Hal prefers green tea", "Hal prefers green tea in the morning"]


def test_agent_profile_turns_dedup_off_and_the_request_turns_it_back_on(tenant_a):
    t = tenant_a.tenant
    remember(t, "Fay prefers green tea", agent_id="bot")
    remember(t, "Fay prefers green tea in the morning", agent_id="bot")
    AgentProfile.objects.create(tenant=t, agent_id="bot", config={"search": {"deduplicate": False}})
    query = "Fay green tea in the morning"
    assert search(tenant_a, query, filters={"agent_id": "bot"})["count"] == 2
    assert search(tenant_a, query, filters={"agent_id": "bot"}, deduplicate=True)["count"] == 1


def test_returned_rows_have_their_access_counted_once_after_commit(
    tenant_a, django_capture_on_commit_callbacks
):
    memory = remember(tenant_a.tenant, "Gus plays the cello")
    with django_capture_on_commit_callbacks(execute=True):
        search(tenant_a, "cello")
    memory.refresh_from_db()
    assert memory.access_count == 1 and memory.last_accessed_at is not None


def test_another_tenant_never_sees_the_memories(garden, tenant_b):
    assert search(tenant_b, "Alice garden tomatoes")["count"] == 0
    assert search(tenant_b, "Alice garden tomatoes", mode="fulltext")["count"] == 0


def test_search_needs_an_api_key(anon_client):
    assert anon_client.post(URL, {"query": "x"}, format="json").status_code == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "x", "mode": "semantic"}, "mode"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 1000}, "limit"),
        ({"query": "x", "filters": {"min_confidence": 2}}, "filters"),
        ({"query": "x", "filters": {"topics_any": "garden"}}, "filters"),
        (
            {
                "query": "x",
                "filters": {
                    "created_after": "2024-02-01T00:00:00Z",
                    "created_before": "2024-01-01T00:00:00Z",
                },
            },
            "filters",
        ),
        ({"query": "x", "mmr_lambda": 1.5}, "mmr_lambda"),
        ({"query": "x" * 5000}, "query"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(tenant_a, body, field):
    response = tenant_a.client.post(URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
