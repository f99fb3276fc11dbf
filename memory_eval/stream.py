"""LoCoMo as a memory stream: the facts (or turns) of each conversation, in the order they were said.

`observation` holds, per session, per speaker, the facts LoCoMo's authors extracted with the dialog
ids each came from (`[fact, "D1:3"]`; the evidence is sometimes a list or malformed, so ids are read
with a pattern). The stream keeps the file's order: session after session, and inside a session the
speakers and their facts as listed. A scope is one speaker or one conversation (its user_id); every
conversation has a namespace of its own, so a search over the namespace covers both speakers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memory_eval.locomo import EVIDENCE, Question, load_locomo, parse_date, turn_text

SOURCES = ("observations", "turns")
SCOPES = ("speaker", "conversation")
OBSERVATION_KEY = re.compile(r"session_(\d+)_observation")


@dataclass(frozen=True)
class StreamFact:
    conversation: int
    session: int
    speaker: str
    text: str
    dia_ids: frozenset[str]
    date: datetime | None


def parse_conversations(spec: str) -> list[int]:
    """'0-4' / '0,2,7' / '3' / '0-2,5' -> sorted indices; ValueError on anything else."""
    chosen: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        if re.fullmatch(r"\d+-\d+", part):
            low, high = (int(x) for x in part.split("-"))
            if low > high:
                raise ValueError(f"empty range {part!r}")
            chosen.update(range(low, high + 1))
        elif part.isdigit():
            chosen.add(int(part))
        else:
            raise ValueError(f"not a conversation index or range: {part!r}")
    if not chosen:
        raise ValueError("no conversation chosen")
    return sorted(chosen)


def namespace_of(conversation: int) -> str:
    return f"locomo-{conversation}"


def user_of(fact: StreamFact, scope: str) -> str:
    if scope == "speaker":
        return f"locomo-{fact.conversation}-{fact.speaker.lower()}"
    return f"locomo-{fact.conversation}"


def _observations(data: list[dict], conversations: list[int]) -> list[StreamFact]:
    facts = []
    for index in conversations:
        sample = data[index]
        dates = sample["conversation"]
        sessions = sorted(
            (int(match.group(1)), value)
            for key, value in sample.get("observation", {}).items()
            if (match := OBSERVATION_KEY.fullmatch(key)) and isinstance(value, dict)
        )
        for session, by_speaker in sessions:
            date = parse_date(str(dates.get(f"session_{session}_date_time", "")))
            for speaker, entries in by_speaker.items():
                for entry in entries:
                    if isinstance(entry, str):
                        text, evidence = entry, ""
                    else:
                        text, evidence = str(entry[0]), json.dumps(entry[1:])
                    if text.strip():
                        ids = frozenset(EVIDENCE.findall(evidence))
                        facts.append(StreamFact(index, session, speaker, text.strip(), ids, date))
    return facts


def load_stream(
    path: Path, *, source: str, conversations: list[int]
) -> tuple[list[StreamFact], list[Question]]:
    """The stream of the chosen conversations and their questions (categories 1-4, with evidence)."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}")
    data = json.loads(Path(path).read_text())
    missing = [c for c in conversations if c >= len(data)]
    if missing:
        raise ValueError(f"the file holds {len(data)} conversations; no conversation {missing[0]}")
    turns, questions = load_locomo(path)
    keep = set(conversations)
    questions = [q for q in questions if q.conversation in keep]
    if source == "observations":
        return _observations(data, conversations), questions
    facts = [
        StreamFact(t.conversation, t.session, t.speaker, turn_text(t), frozenset([t.dia_id]), t.date)
        for t in turns
        if t.conversation in keep and (t.text.strip() or t.caption)
    ]
    return facts, questions
