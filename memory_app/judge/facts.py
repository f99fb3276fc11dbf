"""What a text states as the fact check reads it, and that reading kept with a memory.

The fact check (`merge.loses_facts`) asks of two texts whether one lacks a number, an amount, a
name or a content word of the other. Reading a text for those (tokens, stems, names, amounts)
costs ~70-170 us, and a search's collapse reads ~30 texts that are new to the process: at 100 k
memories that was most of the collapse's time (docs/PERFORMANCE.md). A memory therefore keeps its
text's reading beside its token vectors (`MemoryTokens.fact_reading`, written with them), and a
search hands the readings of the rows it read to the check (`readings_given`).

A kept reading names the version of the rules that made it and a digest of the exact text; one
of another version or text is ignored and the text is read again, so a stale or foreign reading
can cost time but never change a decision.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

from memory_app.judge.signals import lexicon, quantities
from memory_app.judge.signals import text_norm as tn

# Bump whenever text_norm's numbers or content words, `names` or the amounts reader change what
# they return for some text (tests/judge/test_fact_readings.py pins a digest of a sample).
READING_VERSION = 1
_FIELDS = "\t"
_ITEMS = " "

# A capitalised word that does not open a sentence: a name, a place, a brand, an acronym.
WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*")
_SENTENCE_ENDS = frozenset({"", ".", "!", "?", ":", ";"})


@lru_cache(maxsize=8192)
def names(text: str) -> frozenset[str]:
    """Proper names as written, without a possessive 's: the words a merge must keep."""
    found = set()
    for match in WORD.finditer(text):
        word = match.group(0).rstrip("'-")
        # One letter is a unit or an initial ("37°C", "J. Smith"), not a name a merge must keep.
        if len(word) < 2 or not word[0].isupper() or word.casefold() in lexicon.STOPWORDS:
            continue
        # A word opens a sentence when the last character before it that is not a space ends one,
        # or when there is none (looked up only for capitalised words: most words are not).
        if text[: match.start()].rstrip()[-1:] not in _SENTENCE_ENDS:
            found.add(word.removesuffix("'s"))
    return frozenset(found)


@dataclass(frozen=True)
class FactReading:
    numbers: frozenset[float]  # text_norm.numbers
    names: frozenset[str]  # names
    words: frozenset[str]  # text_norm.content_words
    amounts: bool  # whether the amounts reader finds any (quantities, spans)


def read_facts(text: str) -> FactReading:
    """The text read anew by the rules themselves."""
    return FactReading(
        numbers=tn.numbers(text),
        names=names(text),
        words=tn.content_words(text),
        amounts=bool(quantities.spans(text)),
    )


_GIVEN: ContextVar[Mapping[str, FactReading] | None] = ContextVar("fact_readings", default=None)


@contextmanager
def readings_given(readings: Mapping[str, FactReading]) -> Iterator[None]:
    """Within the block, the fact check takes these texts' readings as given (kept ones, checked
    by `reading_decode`) rather than reading the texts again."""
    token = _GIVEN.set(readings)
    try:
        yield
    finally:
        _GIVEN.reset(token)


def _given(text: str) -> FactReading | None:
    given = _GIVEN.get()
    return None if given is None else given.get(text)


# Each part of a text's reading: the given one, else read by its own rule, and only that part (the
# fact check stops at the first loss it finds, and reads nothing of a text beyond it).
def numbers_of(text: str) -> frozenset[float]:
    reading = _given(text)
    return tn.numbers(text) if reading is None else reading.numbers


def names_of(text: str) -> frozenset[str]:
    reading = _given(text)
    return names(text) if reading is None else reading.names


def words_of(text: str) -> frozenset[str]:
    reading = _given(text)
    return tn.content_words(text) if reading is None else reading.words


def states_amounts(text: str) -> bool:
    reading = _given(text)
    return bool(quantities.spans(text)) if reading is None else reading.amounts


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()


def reading_encode(text: str) -> str:
    """The reading of `text` as a memory keeps it: version, text digest, then the numbers, names
    and words; empty when an item would not survive the encoding (then the text is read again)."""
    reading = read_facts(text)
    numbers = [repr(n) for n in sorted(reading.numbers)]
    items = (*numbers, *reading.names, *reading.words)
    if any(not item or _FIELDS in item or _ITEMS in item for item in items):
        return ""
    return _FIELDS.join(
        (
            f"{READING_VERSION}",
            _digest(text),
            "1" if reading.amounts else "0",
            _ITEMS.join(numbers),
            _ITEMS.join(sorted(reading.names)),
            _ITEMS.join(sorted(reading.words)),
        )
    )


def reading_decode(text: str, encoded: str) -> FactReading | None:
    """The kept reading of `text`, or None when there is none, or it was made by other rules or
    from another text."""
    parts = encoded.split(_FIELDS)
    if len(parts) != 6 or parts[0] != f"{READING_VERSION}" or parts[1] != _digest(text):
        return None
    _version, _text, amounts, numbers, found, words = parts
    return FactReading(
        numbers=frozenset(float(n) for n in numbers.split(_ITEMS) if n),
        names=frozenset(n for n in found.split(_ITEMS) if n),
        words=frozenset(w for w in words.split(_ITEMS) if w),
        amounts=amounts == "1",
    )


def kept_readings(rows: Iterable[tuple[str, str | None]]) -> dict[str, FactReading]:
    """{text: reading} of the (text, kept reading) pairs whose reading holds for their text."""
    readings = {}
    for text, encoded in rows:
        reading = reading_decode(text, encoded) if encoded else None
        if reading is not None:
            readings[text] = reading
    return readings
