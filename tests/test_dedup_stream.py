"""`evaluate_dedup --stream`: a LoCoMo-shaped stream stored in order, outcome shares and fact recall."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory_app.evaluation.stream import load_stream, parse_conversations, user_of
from memory_app.models import Tenant

# Two conversations of different facts about each speaker, told over three sessions. Two facts are
# repeated word for word in a later session: those must come back as duplicate_of, whatever the judge.
CONVERSATIONS = [
    (
        ("Ann", "Bob"),
        [
            {
                "Ann": [
                    ("Ann adopted a grey cat named Milo from the shelter.", "D1:1"),
                    ("Ann works night shifts as a nurse at the Leeds hospital.", "D1:3"),
                    ("Ann is training for a half marathon in October.", "D1:5"),
                ],
                "Bob": [
                    ("Bob is learning to play the cello.", "D1:2"),
                    ("Bob moved to Lisbon for a job at a bakery.", "D1:4"),
                    ("Bob is allergic to peanuts.", "D1:6"),
                ],
            },
            {
                "Ann": [
                    ("Ann's sister Clara is getting married in June.", "D2:1"),
                    ("Ann adopted a grey cat named Milo from the shelter.", "D2:3"),
                    ("Ann bought a second-hand blue bicycle to ride to work.", ["D2:5", "D2:6"]),
                ],
                "Bob": [
                    ("Bob's bakery now sells sourdough on Saturdays.", "D2:2"),
                    ("Bob went hiking in the Serra da Estrela mountains.", "D2:4"),
                ],
            },
            {
                "Ann": [
                    ("Ann is afraid of heights.", "D3:1"),
                    ("Ann likes to sit by the window when flying.", "D3:3"),
                ],
                "Bob": [
                    ("Bob is learning to play the cello.", "D3:2"),
                    ("Bob's favourite film is Amelie.", "D3:4"),
                ],
            },
        ],
    ),
    (
        ("Dee", "Eli"),
        [
            {
                "Dee": [
                    ("Dee plays the guitar in a jazz band.", "D1:1"),
                    ("Dee volunteers at the food bank every Sunday.", "D1:3"),
                ],
                "Eli": [
                    ("Eli is writing a novel about a lighthouse keeper.", "D1:2"),
                    ("Eli has two daughters, aged 4 and 7.", "D1:4"),
                ],
            },
            {
                "Dee": [
                    ("Dee now lives in Hamburg.", "D2:1"),
                    ("Dee started taking Spanish lessons online.", "D2:3"),
                ],
                "Eli": [
                    ("Eli's car broke down on the motorway last week.", "D2:2"),
                    ("Eli grows tomatoes and basil on his balcony.", "D2:4"),
                ],
            },
        ],
    ),
]
QUESTIONS = [
    [
        ("What is the name of Ann's cat?", ["D1:1"], 4),
        ("Where does Ann work?", ["D1:3"], 4),
        ("What instrument is Bob learning?", ["D1:2"], 4),
        ("When is Ann's sister Clara getting married?", ["D2:1"], 2),
        ("Is Ann afraid of heights?", ["D3:1"], 1),
        ("What does Bob's bakery sell on Saturdays?", ["D2:2"], 4),
        ("A question without an answer", [], 5),
    ],
    [
        ("Which instrument does Dee play?", ["D1:1"], 4),
        ("How old are Eli's daughters?", ["D1:4"], 4),
        ("What does Eli grow on his balcony?", ["D2:4"], 3),
    ],
]
FACTS = sum(len(facts) for _, sessions in CONVERSATIONS for session in sessions for facts in session.values())


def _locomo(path: Path) -> Path:
    samples = []
    for (speaker_a, speaker_b), sessions in CONVERSATIONS:
        conversation: dict = {"speaker_a": speaker_a, "speaker_b": speaker_b}
        observation = {}
        for number, session in enumerate(sessions, start=1):
            conversation[f"session_{number}_date_time"] = f"1:56 pm on {number} May, 2023"
            conversation[f"session_{number}"] = [
                {"speaker": speaker, "dia_id": ids if isinstance(ids, str) else ids[0], "text": text}
                for speaker, facts in session.items()
                for text, ids in facts
            ]
            observation[f"session_{number}_observation"] = {
                speaker: [[text, ids] for text, ids in facts] for speaker, facts in session.items()
            }
        samples.append({"conversation": conversation, "observation": observation, "qa": []})
    for sample, questions in zip(samples, QUESTIONS, strict=True):
        sample["qa"] = [
            {"question": q, "evidence": ev, "category": c, "answer": "-"} for q, ev, c in questions
        ]
    path.write_text(json.dumps(samples))
    return path


def test_conversation_ranges_are_parsed():
    assert parse_conversations("0-4") == [0, 1, 2, 3, 4]
    assert parse_conversations("7, 0-1") == [0, 1, 7]
    for bad in ("", "a", "4-2", "1-"):
        with pytest.raises(ValueError):
            parse_conversations(bad)


def test_stream_keeps_the_file_order_and_every_evidence_id(tmp_path):
    facts, questions = load_stream(_locomo(tmp_path / "l.json"), source="observations", conversations=[0, 1])
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
    path = _locomo(tmp_path / "locomo.json")
    tenants_before = Tenant.objects.count()
    out = io.StringIO()
    call_command(
        "evaluate_dedup",
        "--stream",
        str(path),
        "--conversations",
        "0-1",
        "--scope",
        scope,
        "--json",
        stdout=out,
    )
    report = json.loads(out.getvalue().strip().splitlines()[-1])

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


@pytest.mark.django_db
def test_stream_evaluation_rejects_a_missing_conversation(tmp_path):
    path = _locomo(tmp_path / "locomo.json")
    with pytest.raises(CommandError, match="holds 2 conversations; no conversation 2"):
        call_command("evaluate_dedup", "--stream", str(path), "--conversations", "0-5", stdout=io.StringIO())
