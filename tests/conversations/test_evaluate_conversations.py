from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from memory_app.models import Memory, Tenant

TINY = Path(__file__).parents[1] / "data" / "locomo_tiny.json"


@pytest.mark.django_db
def test_the_conversations_replay_through_interactions_and_are_scored_per_budget():
    out = StringIO()
    call_command(
        "evaluate_conversations",
        "--locomo",
        str(TINY),
        "--conversations",
        "0",
        "--budget",
        "5,2000",
        "--tenant-slug",
        "tiny",
        "--json",
        stdout=out,
        stderr=StringIO(),
    )
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    assert report["questions"] == 4  # category 5 is left out
    assert set(report["evidence_recall"]) == {"5", "2000"}
    assert report["evidence_recall"]["2000"] == 1.0  # every evidence message is in a 2,000-token context
    assert report["evidence_recall"]["5"] == 0.0  # 5 tokens hold no memory line
    assert report["answer_containment"]["2000"] >= 0.75
    assert report["budgets"]["2000"]["max_tokens_returned"] <= 2000
    assert report["messages"] == 6
    assert report["dates"]["evidence_messages_with_relative_date"] == 3
    assert report["dates"]["resolved"] == 3
    tenant = Tenant.objects.get(slug="tiny")
    adopted = Memory.objects.get(tenant=tenant, text__startswith="Ana: Hi Ben! I adopted", status="active")
    assert adopted.event_date.date().isoformat() == "2023-05-07"
    assert adopted.metadata["source_message_ids"] == ["D1:1"]
    assert not Memory.objects.filter(tenant=tenant, text__contains="that's great").exists()


def test_a_bad_conversation_range_is_a_clear_error():
    with pytest.raises(CommandError, match="--conversations"):
        call_command("evaluate_conversations", "--locomo", str(TINY), "--conversations", "a-b")


@pytest.mark.django_db
def test_date_resolution_tells_apart_messages_of_two_conversations_with_the_same_dia_id():
    from memory_eval.conversations import date_resolution
    from memory_eval.locomo import Question, Turn
    from tests.factories import MemoryFactory, TenantFactory

    tenant = TenantFactory()
    turns = [Turn(c, 1, 0, "D1:1", "Ana", "I went hiking yesterday.", "", None) for c in (0, 1)]
    questions = [Question(c, "When did Ana hike?", 2, frozenset({"D1:1"})) for c in (0, 1)]
    # Only conversation 0's message got its date read from the text.
    MemoryFactory(
        tenant=tenant,
        user_id="locomo-0",
        metadata={"extracted_by": "message", "source_message_ids": ["D1:1"], "date_expression": "yesterday"},
    )
    MemoryFactory(
        tenant=tenant,
        user_id="locomo-1",
        metadata={"extracted_by": "message", "source_message_ids": ["D1:1"]},
    )
    dates = date_resolution(tenant, turns, questions)
    assert dates["evidence_messages_with_relative_date"] == 2
    assert dates["resolved"] == 1
    assert [(m["conversation"], m["dia_id"]) for m in dates["misses"]] == [(1, "D1:1")]
