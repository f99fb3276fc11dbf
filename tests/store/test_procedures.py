from __future__ import annotations

import pytest

from memory_app.models import Procedure
from memory_app.retrieval.procedural import is_recommended, procedure_confidence, running_average

pytestmark = pytest.mark.django_db


def record(client, query, score, tools=("search", "summarize"), ms=100.0, user_id="u1"):
    body = {
        "query": query,
        "tool_sequence": list(tools),
        "execution_time_ms": ms,
        "success_score": score,
        "user_id": user_id,
    }
    return client.post("/api/v1/procedures/record", body, format="json")


def suggest(client, query, user_id="u1"):
    return client.post("/api/v1/procedures/suggest", {"query": query, "user_id": user_id}, format="json")


def test_confidence_grows_with_executions_and_is_capped_at_one():
    assert procedure_confidence(0.5, 0) == 0.5
    assert procedure_confidence(0.5, 4) == pytest.approx(0.7)
    assert procedure_confidence(0.9, 5) == 1.0
    assert procedure_confidence(0.6, 2, divisor=4.0) == pytest.approx(0.9)


def test_recommendation_threshold_is_inclusive():
    assert is_recommended(0.7, 0.7)
    assert not is_recommended(0.6999, 0.7)


def test_running_average_folds_one_value_in():
    assert running_average(0.0, 0, 0.8) == 0.8
    assert running_average(0.5, 3, 0.9) == pytest.approx(0.6)


def test_record_upserts_by_normalised_query_with_running_averages(tenant_a, tenant_b):
    assert record(tenant_a.client, "Weekly summary, please!", 0.6, ms=100).status_code == 200
    r = record(tenant_a.client, "  weekly SUMMARY please ", 0.8, tools=("aggregate", "compare"), ms=300)
    assert r.status_code == 200
    body = r.json()
    assert body["pattern"] == "weekly summary please"
    assert body["execution_count"] == 2
    assert body["avg_success_score"] == pytest.approx(0.7)
    assert body["avg_execution_time_ms"] == pytest.approx(200.0)
    assert body["tool_sequence"] == ["aggregate", "compare"]  # the better run's sequence
    assert body["confidence"] == pytest.approx(0.7 * 1.2)
    # a worse run counts in the averages but keeps the better sequence
    body = record(tenant_a.client, "weekly summary please", 0.1, tools=("guess",)).json()
    assert body["tool_sequence"] == ["aggregate", "compare"]
    assert body["execution_count"] == 3
    assert Procedure.objects.filter(tenant=tenant_a.tenant).count() == 1
    assert not Procedure.objects.filter(tenant=tenant_b.tenant).exists()


def test_record_refuses_bad_input_and_stores_nothing(tenant_a):
    assert record(tenant_a.client, "q", 1.5).status_code == 400
    assert record(tenant_a.client, "q", 0.5, tools=()).status_code == 400
    assert record(tenant_a.client, "?!", 0.5).status_code == 400
    r = record(tenant_a.client, "q", 0.5, ms=-1)
    assert r.status_code == 400
    assert "execution_time_ms" in r.json()["error"]["fields"]
    assert not Procedure.objects.exists()


def test_suggest_finds_the_exact_pattern_and_recommends_above_threshold(tenant_a, tenant_b, settings):
    settings.PROCEDURE_RECOMMEND_THRESHOLD = 0.7
    for _ in range(4):
        record(tenant_a.client, "weekly summary", 0.5)
    body = suggest(tenant_a.client, "Weekly summary?").json()
    assert body["match"] == "exact"
    assert body["confidence"] == pytest.approx(0.5 * 1.4)
    assert body["recommended"] is True
    settings.PROCEDURE_RECOMMEND_THRESHOLD = 0.75
    assert suggest(tenant_a.client, "weekly summary").json()["recommended"] is False
    # another tenant and another user see nothing
    assert suggest(tenant_b.client, "weekly summary").json()["match"] == "none"
    assert suggest(tenant_a.client, "weekly summary", user_id="u2").json()["match"] == "none"


def test_suggest_falls_back_to_the_nearest_pattern_within_the_threshold(tenant_a, settings):
    record(tenant_a.client, "show my weekly step count summary", 0.9, tools=("steps", "summarize"))
    record(tenant_a.client, "book a table at an italian restaurant", 0.9, tools=("restaurants",))
    settings.PROCEDURE_MATCH_MAX_DISTANCE = 0.5
    body = suggest(tenant_a.client, "summary of my steps this week").json()
    assert body["match"] == "similar"
    assert body["procedure"]["tool_sequence"] == ["steps", "summarize"]
    assert 0 < body["distance"] <= 0.5
    settings.PROCEDURE_MATCH_MAX_DISTANCE = body["distance"] - 0.01
    assert suggest(tenant_a.client, "summary of my steps this week").json()["match"] == "none"
    settings.PROCEDURE_MATCH_MAX_DISTANCE = 0.5
    assert suggest(tenant_a.client, "quantum chromodynamics lecture notes").json()["match"] == "none"


@pytest.mark.django_db(transaction=True)
def test_concurrent_records_of_one_pattern_lose_no_run(tenant_a):
    import threading

    from django.db import connection

    from memory_app.services.kinds.procedures import procedure_record

    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(4):
                procedure_record(
                    tenant=tenant_a.tenant,
                    query="daily digest",
                    tool_sequence=["news"],
                    execution_time_ms=10,
                    success_score=0.5,
                )
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    proc = Procedure.objects.get(tenant=tenant_a.tenant)
    assert proc.execution_count == 12
    assert proc.avg_success_score == pytest.approx(0.5)
