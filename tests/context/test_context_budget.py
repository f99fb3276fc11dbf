from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_app.embeddings.tokens import count_tokens
from memory_app.retrieval.packing import PartLines, compose
from memory_app.services.kinds.sessions import MessageInput, session_append
from tests.factories.kinds import memories_with_embeddings

SHARES = {"short_term": 0.3, "episodic": 0.45, "semantic": 0.15, "procedural": 0.1}
line = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=80)


@settings(max_examples=150, deadline=None)
@given(
    parts=st.dictionaries(st.sampled_from(list(SHARES)), st.lists(line, max_size=12), min_size=1, max_size=4),
    budget=st.integers(min_value=0, max_value=400),
)
def test_composed_context_never_exceeds_its_budget(parts, budget):
    composed = compose(
        {name: PartLines(lines, header=f"{name}:") for name, lines in parts.items()},
        budget=budget,
        shares=SHARES,
        count=count_tokens,
        priority=["episodic", "short_term", "semantic", "procedural"],
    )
    assert composed.tokens == (count_tokens(composed.text) if composed.text else 0)
    assert composed.tokens <= budget
    assert composed.tokens == 0 or all(composed.parts[n].tokens <= budget for n in parts)


def test_a_part_with_nothing_to_show_leaves_its_share_to_the_others():
    lines = [f"- memory number {i} about the garden" for i in range(100)]
    composed = compose(
        {"short_term": PartLines([]), "episodic": PartLines(lines, header="Memories:")},
        budget=300,
        shares=SHARES,
        count=count_tokens,
    )
    assert composed.parts["episodic"].tokens > 0.45 * 300  # more than its own share
    assert composed.tokens <= 300


def test_unused_share_flows_to_a_part_that_has_more_to_show():
    composed = compose(
        {
            "short_term": PartLines(["user: hi"], header="Recent conversation:"),
            "episodic": PartLines([f"- fact {i} about travel plans" for i in range(200)], header="Facts:"),
        },
        budget=400,
        shares=SHARES,
        count=count_tokens,
        priority=["episodic", "short_term"],
    )
    assert composed.parts["short_term"].tokens < 20
    assert composed.tokens > 380  # the short-term share was not left unused


@pytest.mark.django_db
def test_context_all_never_returns_more_than_max_tokens(tenant_a):
    tenant = tenant_a.tenant
    memories_with_embeddings(
        tenant,
        [
            f"User mentioned plan number {i}: a long trip to the mountains with friends in June"
            for i in range(60)
        ],
        user_id="u1",
    )
    memories_with_embeddings(
        tenant,
        [f"Mountain fact {i}: altitude sickness starts near 2500 m" for i in range(20)],
        kind="semantic",
    )
    session_append(
        tenant=tenant,
        session_id="long",
        user_id="u1",
        messages=[
            MessageInput(
                "user" if i % 2 == 0 else "assistant", f"Message {i} about packing for the trip " * 5
            )
            for i in range(200)
        ],
    )
    for budget in (1, 3, 10, 25, 60, 150, 400, 1500):
        r = tenant_a.client.post(
            "/api/v1/context/all",
            {"query": "mountain trip", "user_id": "u1", "session_id": "long", "max_tokens": budget},
            format="json",
        )
        assert r.status_code == 200, r.json()
        body = r.json()
        assert body["max_tokens"] == budget
        assert count_tokens(body["formatted"]) <= budget
        assert body["tokens"]["total"] == (count_tokens(body["formatted"]) if body["formatted"] else 0)
        parts = ("short_term", "episodic", "semantic", "procedural")
        assert sum(body["tokens"][p] for p in parts) <= budget
        for part in parts:
            assert count_tokens(body[part]["formatted"]) == body["tokens"][part]
    # with room, every part is there, the latest messages of the session first to be kept
    big = tenant_a.client.post(
        "/api/v1/context/all",
        {"query": "mountain trip", "user_id": "u1", "session_id": "long", "max_tokens": 1500},
        format="json",
    ).json()
    assert big["counts"]["episodic"] > 0 and big["counts"]["semantic"] > 0 and big["counts"]["short_term"] > 0
    positions = [m["position"] for m in big["short_term"]["messages"]]
    assert positions == sorted(positions) and positions[-1] == 199


@pytest.mark.django_db
def test_context_all_embeds_the_query_once_for_all_its_searches(tenant_a, monkeypatch):
    import memory_app.selectors.search.query as search

    tenant = tenant_a.tenant
    memories_with_embeddings(tenant, ["User likes hiking in the Alps"], user_id="u1")
    memories_with_embeddings(tenant, ["The Alps' highest peak is Mont Blanc"], kind="semantic")
    embedded: list[str] = []
    real = search.embed_texts_begin

    def counting(texts, *, tenant, **options):  # type: ignore[no-untyped-def]
        embedded.extend(texts)
        return real(texts, tenant=tenant, **options)

    monkeypatch.setattr(search, "embed_texts_begin", counting)
    body = tenant_a.client.post(
        "/api/v1/context/all", {"query": "hiking in the Alps", "user_id": "u1"}, format="json"
    ).json()
    assert body["counts"]["episodic"] == 1 and body["counts"]["semantic"] == 1
    assert embedded == ["hiking in the Alps"]


@pytest.mark.django_db
def test_context_all_counts_the_query_embedding_once_and_a_local_model_caches_no_row_of_it(tenant_a):
    from memory_app.embeddings.cache.keys import CacheKeys
    from memory_app.models import EmbeddingCacheEntry

    tenant = tenant_a.tenant
    memories_with_embeddings(tenant, ["User likes hiking in the Alps"], user_id="u1")
    body = tenant_a.client.post(
        "/api/v1/context/all", {"query": "a walk in the Alps", "user_id": "u1"}, format="json"
    ).json()
    assert body["counts"]["episodic"] == 1
    digest = CacheKeys.of(tenant.pk).exact("a walk in the Alps")
    assert not EmbeddingCacheEntry.objects.filter(tenant=tenant, content_hash=digest).exists()


@pytest.mark.django_db
def test_the_default_budget_applies_when_none_is_given(tenant_a, settings):
    settings.CONTEXT_ALL_MAX_TOKENS = 40
    memories_with_embeddings(
        tenant_a.tenant, [f"User likes hiking trail {i}" for i in range(30)], user_id="u1"
    )
    body = tenant_a.client.post(
        "/api/v1/context/all", {"query": "hiking", "user_id": "u1"}, format="json"
    ).json()
    assert body["max_tokens"] == 40 and 0 < body["tokens"]["total"] <= 40


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": "lots"}, "max_tokens"),
        ({"max_tokens": 10**9}, "max_tokens"),
        ({"maxtokens": 100}, "maxtokens"),
        ({"episodic_limit": 0}, "episodic_limit"),
    ],
)
def test_bad_context_all_input_is_a_400_naming_the_field(tenant_a, body, field):
    r = tenant_a.client.post("/api/v1/context/all", {"query": "trip", **body}, format="json")
    assert r.status_code == 400
    assert field in r.json()["error"]["fields"]
