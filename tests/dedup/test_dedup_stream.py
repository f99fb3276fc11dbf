"""`evaluate_dedup --stream`: a LoCoMo-shaped stream stored in order, outcome shares and fact recall."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory_app.models import Tenant
from memory_eval.stream import load_stream, parse_conversations, user_of
from tests.factories.stream import FACTS, locomo_file, stream_report


def test_conversation_ranges_are_parsed():
    assert parse_conversations("0-4") == [0, 1, 2, 3, 4]
    assert parse_conversations("7, 0-1") == [0, 1, 7]
    for bad in ("", "a", "4-2", "1-"):
        with pytest.raises(ValueError):
            parse_conversations(bad)


def test_stream_keeps_the_file_order_and_every_evidence_id(tmp_path):
    facts, questions = load_stream(
        locomo_file(tmp_path / "l.json"), source="observations", conversations=[0, 1]
    )
    assert len(facts) == FACTS
    assert [f.text for f in facts[:4]] == [
        "Ann adopted a grey cat named Milo from the shelter.",
        "Ann works night shifts as a nurse at the Leeds hospital.",
        "Ann is training for a half marathon in October.",
        "Bob is learning to play the cello.",
    ]
    assert next(f for f in facts if "bicycle" in f.text).dia_ids == {"D2:5", "D2:6"}
    assert user_of(facts[0], "speaker") == "locomo-0-ann"
    assert user_of(facts[0], "conversation") == "locomo-0"
    assert len(questions) == 9  # category 5 is left out
    turns, _ = load_stream(tmp_path / "l.json", source="turns", conversations=[1])
    assert turns[0].text == "Dee: Dee plays the guitar in a jazz band." and turns[0].conversation == 1


@pytest.mark.django_db
@pytest.mark.parametrize("scope", ["speaker", "conversation"])
def test_stream_evaluation_reports_outcome_shares_and_recall(tmp_path, scope):
    path = locomo_file(tmp_path / "locomo.json")
    tenants_before = Tenant.objects.count()
    report = stream_report(path, "--conversations", "0-1", "--scope", scope)

    assert report["facts"] == FACTS and report["questions"] == 9
    shares = report["outcome_shares"]
    assert set(shares) == {"created", "duplicate_of", "merged_into", "superseded", "queued_for_review"}
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-3)
    assert sum(report["outcomes"].values()) == FACTS
    # The two word-for-word repeats are recognised by their hash, before any judge runs.
    assert report["outcomes"]["duplicate_of"] == 2
    assert 0.0 < report["active_share"] <= 1.0
    assert report["active_share_no_dedup"] == 1.0
    for key in ("recall_at_5", "recall_at_10", "recall_at_10_no_dedup", "recall_at_5_no_dedup"):
        assert 0.0 <= report[key] <= 1.0
    # Without dedup every answer is one of two dozen short facts the question almost repeats.
    assert report["recall_at_10_no_dedup"] == 1.0
    assert Tenant.objects.count() == tenants_before  # the scratch tenants are gone


def refining_stream(path: Path) -> Path:
    """One speaker who says a fact and then the same fact with more detail (a refine: merged)."""
    facts = [
        ["Dee plays the guitar in a jazz band.", "D1:1"],
        ["Dee plays the guitar in a jazz band every Friday night.", "D1:2"],
    ]
    sample = {
        "conversation": {
            "speaker_a": "Dee",
            "speaker_b": "Max",
            "session_1_date_time": "1:56 pm on 1 May, 2023",
            "session_1": [{"speaker": "Dee", "dia_id": ids, "text": text} for text, ids in facts],
        },
        "observation": {"session_1_observation": {"Dee": facts}},
        "qa": [{"question": "When does Dee play?", "evidence": ["D1:2"], "category": 1, "answer": "-"}],
    }
    path.write_text(json.dumps([sample]))
    return path


@pytest.mark.django_db
@pytest.mark.parametrize(("examples", "quoted"), [("25", 1), ("0", 0)])
def test_a_held_out_check_can_leave_the_merge_examples_out(tmp_path, examples, quoted):
    path = refining_stream(tmp_path / "locomo.json")
    report = stream_report(path, "--conversations", "0", "--examples", examples)
    assert report["outcomes"]["merged_into"] == 1
    assert len(report["merges"]) == quoted


@pytest.mark.django_db
def test_stream_evaluation_rejects_a_missing_conversation(tmp_path):
    path = locomo_file(tmp_path / "locomo.json")
    with pytest.raises(CommandError, match="holds 2 conversations; no conversation 2"):
        call_command("evaluate_dedup", "--stream", str(path), "--conversations", "0-5", stdout=io.StringIO())


def test_a_merge_result_stands_for_the_dialog_ids_of_every_source_along_a_chain():
    from memory_app.services.store.types import StoreOutcome
    from memory_eval.dedup_stream import _track
    from memory_eval.stream import StreamFact

    def fact(ids: str) -> StreamFact:
        return StreamFact(0, 1, "Ann", "a fact", frozenset(ids.split()), None)

    ids: dict[int, set[str]] = {}
    _track(ids, StoreOutcome("created", 1), fact("D1:1"))
    _track(ids, StoreOutcome("merged_into", 3, related_ids=(1,)), fact("D1:2"))
    _track(ids, StoreOutcome("duplicate_of", 3), fact("D2:7"))
    _track(ids, StoreOutcome("merged_into", 5, related_ids=(3,)), fact("D3:1 D3:2"))
    _track(ids, StoreOutcome("superseded", 6, related_ids=(5,)), fact("D4:1"))
    assert ids[5] == {"D1:1", "D1:2", "D2:7", "D3:1", "D3:2"}
    assert ids[6] == {"D4:1"}  # an update states the new value only


@pytest.mark.django_db
def test_stream_decisions_name_each_fact_and_what_it_was_merged_with_by_place_in_the_stream(tmp_path):
    path = refining_stream(tmp_path / "locomo.json")
    decisions = tmp_path / "decisions.jsonl"
    stream_report(path, "--conversations", "0", "--decisions", str(decisions))
    rows = [json.loads(line) for line in decisions.read_text().splitlines()]
    assert [(r["fact"], r["outcome"]) for r in rows] == [(0, "created"), (1, "merged_into")]
    assert rows[1]["related_facts"] == [0]
    assert rows[1]["kept_by_fact"] == 1  # the merge result is a new row, first reached by fact 1
