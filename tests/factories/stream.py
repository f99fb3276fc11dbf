"""A small LoCoMo-shaped file (conversations with `observation` facts, turns and questions) for the
stream evaluation's tests, and the report `evaluate_dedup --stream` gives on such a file."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from django.core.management import call_command

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


def locomo_file(path: Path) -> Path:
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


def stream_report(path: Path, *options: str) -> dict[str, Any]:
    """`evaluate_dedup --stream PATH OPTIONS --json`'s report: the last line of its output."""
    out = io.StringIO()
    call_command("evaluate_dedup", "--stream", str(path), *options, "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])
