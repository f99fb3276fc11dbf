"""Time in a query: an expression becomes a window of event dates, applied as a boost or a filter,
reported in the response; through the API for search, /context and /context/all."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_app.extraction.query_time import query_window
from tests.factories.recall import remember

pytestmark = pytest.mark.django_db

NOW = datetime(2023, 10, 22, 12, 0, tzinfo=UTC)  # a Sunday


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end", "period"),
    [
        ("what did Caroline do yesterday", datetime(2023, 10, 21), datetime(2023, 10, 22), "day"),
        ("what did Jon do last week?", datetime(2023, 10, 9), datetime(2023, 10, 16), "week"),
        ("where did Melanie go in May", datetime(2023, 5, 1), datetime(2023, 6, 1), "month"),
        ("what happened in 2022", datetime(2022, 1, 1), datetime(2023, 1, 1), "year"),
        ("what did we do last weekend", datetime(2023, 10, 21), datetime(2023, 10, 23), "day"),
        ("trips during the summer", datetime(2023, 6, 1), datetime(2023, 9, 1), "season"),
        ("the talk on May 23, 2022", datetime(2022, 5, 23), datetime(2022, 5, 24), "day"),
        ("the party on the 3rd of May", datetime(2023, 5, 3), datetime(2023, 5, 4), "day"),
        ("notes of 2023-05-08", datetime(2023, 5, 8), datetime(2023, 5, 9), "day"),
    ],
)
def test_a_time_expression_becomes_a_window_read_against_now(query, start, end, period):
    window = query_window(query, NOW)
    assert window is not None
    assert (window.start, window.end, window.period) == (
        start.replace(tzinfo=UTC),
        end.replace(tzinfo=UTC),
        period,
    )


@pytest.mark.parametrize(
    "query",
    [
        "May I ask what Caroline likes?",
        "What did June say about it",
        "what is her 18th birthday wish",
        "hiking",
    ],
)
def test_words_that_only_look_like_dates_name_no_window(query):
    assert query_window(query, NOW) is None


@pytest.fixture
def diary(tenant_a):
    t = tenant_a.tenant
    remember(t, "Caroline went hiking in the mountains", event_date=day(2023, 10, 21))
    remember(t, "Caroline went hiking by the lake", event_date=day(2023, 5, 10))
    remember(t, "Caroline went hiking along the coast", event_date=day(2022, 8, 3))
    return tenant_a


def search(tc, query, **body):
    response = tc.client.post(
        "/api/v1/memories/search",
        {"query": query, "filters": {"user_id": "user-1"}, "now": NOW.isoformat(), **body},
        format="json",
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_a_time_expression_boosts_the_memories_dated_in_its_window_and_is_reported(diary):
    body = search(diary, "where did Caroline go hiking in May")
    assert body["results"][0]["text"] == "Caroline went hiking by the lake"
    assert len(body["results"]) == 3  # a boost reorders, it keeps the others
    assert body["time_window"] == {
        "start": "2023-05-01T00:00:00Z",
        "end": "2023-06-01T00:00:00Z",
        "expression": "in May",
        "period": "month",
        "applied": "boost",
    }


def test_as_a_filter_only_memories_dated_in_the_window_are_returned(diary):
    body = search(diary, "where did Caroline go hiking yesterday", query_time="filter")
    assert [hit["text"] for hit in body["results"]] == ["Caroline went hiking in the mountains"]
    assert body["time_window"]["applied"] == "filter"
    assert body["time_window"]["start"] == "2023-10-21T00:00:00Z"


def test_the_filter_keeps_the_narrower_of_the_window_and_the_given_event_dates(diary):
    body = search(
        diary,
        "hiking in 2023",
        query_time="filter",
        filters={"user_id": "user-1", "event_after": "2023-06-01T00:00:00Z"},
    )
    assert [hit["text"] for hit in body["results"]] == ["Caroline went hiking in the mountains"]


def test_off_ignores_the_time_and_a_query_without_one_reports_no_window(diary):
    assert search(diary, "hiking in May", query_time="off")["time_window"] is None
    assert search(diary, "where does Caroline hike")["time_window"] is None


def test_without_now_the_window_is_read_against_the_server_time(diary):
    response = diary.client.post(
        "/api/v1/memories/search",
        {"query": "hiking in 2022", "query_time": "filter", "user_id": "user-1"},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["time_window"]["start"] == "2022-01-01T00:00:00Z"


def test_a_bad_query_time_or_now_is_a_400_naming_the_field(diary):
    for body, field in (({"query_time": "sometimes"}, "query_time"), ({"now": "late"}, "now")):
        response = diary.client.post("/api/v1/memories/search", {"query": "x", **body}, format="json")
        assert response.status_code == 400
        assert field in response.json()["error"]["fields"]


def test_the_setting_makes_filter_the_default(diary, settings):
    settings.SEARCH_QUERY_TIME = "filter"
    body = search(diary, "hiking in 2022")
    assert [hit["text"] for hit in body["results"]] == ["Caroline went hiking along the coast"]


def test_context_reports_and_applies_the_window(diary):
    response = diary.client.post(
        "/api/v1/context",
        {
            "query": "hiking yesterday",
            "filters": {"user_id": "user-1"},
            "now": NOW.isoformat(),
            "query_time": "filter",
        },
        format="json",
    )
    assert response.status_code == 200
    body = response.json()
    assert [fact["text"] for fact in body["facts"]] == ["Caroline went hiking in the mountains"]
    assert body["time_window"]["expression"] == "yesterday"


def test_context_all_applies_the_window_to_the_episodes(diary):
    response = diary.client.post(
        "/api/v1/context/all",
        {
            "query": "where did Caroline hike in May",
            "user_id": "user-1",
            "now": NOW.isoformat(),
            "query_time": "filter",
            "include_short_term": False,
            "include_procedural": False,
        },
        format="json",
    )
    assert response.status_code == 200
    body = response.json()
    assert [m["text"] for m in body["episodic"]["memories"]] == ["Caroline went hiking by the lake"]
    assert body["time_window"]["applied"] == "filter"


def test_another_tenant_sees_nothing_of_the_window_search(diary, tenant_b):
    response = tenant_b.client.post(
        "/api/v1/memories/search",
        {"query": "hiking in May", "now": NOW.isoformat(), "filters": {"user_id": "user-1"}},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["results"] == []


@pytest.mark.parametrize("now", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"])
def test_a_now_at_the_ends_of_the_calendar_is_no_error(diary, now):
    windows = [search(diary, q, now=now)["time_window"] for q in ("last summer", "next month", "tomorrow")]
    # a window past the calendar's ends is none; one inside it is read as usual
    assert None in windows
