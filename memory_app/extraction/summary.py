"""An extractive summary of trimmed session messages, for when no LLM is configured.

The messages are cut into sentences; a sentence is kept for what it carries that a later turn may
need: names (capitalised words past the first), numbers, dates and times, preferences, and
decisions or plans, with a little credit for a first-person statement and for content words.
Small talk ("Thanks!", "Wow, great") and sentences that carry none of these are dropped. The best
sentences that fit `max_tokens` are kept in the order they were said, one line each with the
speaker attached ("Caroline: I went to the support group yesterday."). The running summary's own
lines are scored again with the new sentences, so an older fact gives way only to better ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory_app.extraction.query_time import may_hold_date
from memory_app.extraction.rules import GOAL_PROGRESSIVE, PREFERENCE_VERBS, entities_of
from memory_app.extraction.smalltalk import content_words, is_small_talk

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_NUMBER = re.compile(r"\d")
_PREFERENCE = re.compile(rf"\b(?:{PREFERENCE_VERBS}|favou?rite)s?\b", re.I)
# Decisions, plans and commitments: the verbs after which something will happen.
_DECISION = re.compile(
    rf"\b(?:decided|decide|chose|choose|agreed|will|won't|going\s+to|gonna|plan(?:s|ned)?|"
    rf"{GOAL_PROGRESSIVE}|promise[ds]?|booked|signed\s+up|scheduled)\b",
    re.I,
)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|we|our)\b")
_LINE = re.compile(r"^(?P<speaker>[^:\n]{1,80}): (?P<text>.+)$")


@dataclass(frozen=True)
class SaidBy:
    """One message of the trimmed part: who said it (speaker, else role) and what."""

    speaker: str
    content: str


def sentence_score(sentence: str) -> float:
    """What a sentence carries worth keeping (0: nothing)."""
    if is_small_talk(sentence):
        return 0.0
    words = content_words(sentence)
    if not words:
        return 0.0
    score = 0.0
    score += 2.0 if _NUMBER.search(sentence) else 0.0
    score += 2.0 if may_hold_date(sentence) else 0.0
    score += min(len(entities_of(sentence)), 3) * 1.0
    score += 2.0 if _PREFERENCE.search(sentence) else 0.0
    score += 2.0 if _DECISION.search(sentence) else 0.0
    if score == 0.0 or (score <= 1.0 and len(words) < 2):
        return 0.0  # content words alone, or a name alone ("Hey Mel!"): chat, not facts
    score += 0.5 if _FIRST_PERSON.search(sentence) else 0.0
    score += min(len(words), 10) / 10
    return score - (1.0 if sentence.rstrip().endswith("?") else 0.0)


def _sentences(message: SaidBy) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(message.content) if s.strip()]


def _previous_lines(previous: str) -> list[tuple[str, str]]:
    """The running summary as (line, text scored): its lines carry their speaker already."""
    lines = []
    for line in previous.splitlines():
        line = line.strip()
        if line:
            match = _LINE.match(line)
            lines.append((line, match.group("text") if match else line))
    return lines


def extractive_summary(
    *, previous: str, messages: Sequence[SaidBy], max_tokens: int, count: Callable[[str], int]
) -> str:
    """The running summary with the fact-bearing sentences of `messages` folded in, at most
    `max_tokens` tokens (`count`), one "speaker: sentence" line each, oldest first."""
    candidates: list[tuple[str, float]] = [
        (line, sentence_score(text)) for line, text in _previous_lines(previous)
    ]
    seen = {line for line, _ in candidates}
    for message in messages:
        for sentence in _sentences(message):
            line = f"{message.speaker}: {sentence}" if message.speaker else sentence
            if line not in seen:
                seen.add(line)
                candidates.append((line, sentence_score(sentence)))
    # Best first; among equals the later one (it is the newer state of things).
    order = sorted(
        (i for i, (_, score) in enumerate(candidates) if score > 0), key=lambda i: (-candidates[i][1], -i)
    )
    chosen: list[int] = []
    used = 0
    for index in order:
        cost = count(candidates[index][0] + "\n")
        if used + cost <= max_tokens:
            chosen.append(index)
            used += cost
    text = "\n".join(candidates[i][0] for i in sorted(chosen))
    while text and count(text) > max_tokens:  # joined text may count a little differently
        text = "\n".join(text.splitlines()[:-1])
    return text
