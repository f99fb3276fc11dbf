"""A memory's kept fact reading: what the fact check would read in its text, or nothing at all."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_app.judge import facts
from memory_app.judge.facts import (
    READING_VERSION,
    kept_readings,
    read_facts,
    reading_decode,
    reading_encode,
    readings_given,
)
from memory_app.judge.merge import information, loses_facts, lost_facts

# Texts with what the fact check reads: numbers in digits and words, amounts, dates, clock times,
# names at and after a sentence start, possessives, acronyms, contractions and stop words only.
SAMPLE = (
    "User's favorite cuisine is Thai",
    "User's partner's favorite cuisine is Thai",
    "Melanie ran a charity race for mental health last Saturday.",
    "Caroline moved from Sweden 4 years ago.",
    "John paid $1,800 for the flight to Boston on 2025-08-31.",
    "The meeting moved to 3:30 pm with Dr. Smith.",
    "She drinks two cups of coffee and a quarter of a liter of milk.",
    "Their BMI is 22.5; the body mass index was measured at 37°C.",
    "He didn't go; he isn't going to the NBA game in L.A.",
    "Kalomi mentioned that a man is playing a flute.",
    "Type II diabetes runs in the family of Ana-Maria O'Neill.",
    "It is what it is.",
    "The budget is 5k USD, about 14-day trips, number one priority.",
    "Nate's tournament prize was 1200 dollars, a fifth of his pay.",
)

_WORDS = st.sampled_from(
    ["Anna", "anna", "Bob's", "paid", "$5", "5", "five", "twenty", "three", "km", "USD", "2025-01-02",
     "the", "and", "It", "NASA", "didn't", "3:30", "pm", "1,800", "half", "Paris", "paris", ".", "!", "?"]
)  # fmt: skip
TEXTS = st.one_of(
    st.sampled_from(SAMPLE),
    st.lists(_WORDS, min_size=1, max_size=12).map(" ".join),
    st.text(min_size=1, max_size=60),
)


@given(TEXTS)
@settings(max_examples=300, deadline=None)
def test_a_kept_reading_is_what_the_rules_read_in_its_text(text: str) -> None:
    encoded = reading_encode(text)
    if encoded:
        assert reading_decode(text, encoded) == read_facts(text)


@given(TEXTS, TEXTS)
@settings(max_examples=300, deadline=None)
def test_the_fact_check_decides_the_same_with_kept_readings(kept: str, source: str) -> None:
    read = (loses_facts(kept, source), lost_facts(kept, source), information(source))
    with readings_given(kept_readings((t, reading_encode(t)) for t in (kept, source))):
        given_ = (loses_facts(kept, source), lost_facts(kept, source), information(source))
    assert given_ == read


def test_a_reading_kept_for_another_text_is_not_used() -> None:
    encoded = reading_encode("Caroline moved from Sweden 4 years ago.")
    assert reading_decode("Caroline moved from Sweden 5 years ago.", encoded) is None
    assert kept_readings([("Caroline moved from Sweden 5 years ago.", encoded)]) == {}


def test_a_reading_made_by_other_rules_is_not_used() -> None:
    text = "Caroline moved from Sweden 4 years ago."
    version, rest = reading_encode(text).split("\t", 1)
    assert reading_decode(text, f"{int(version) + 1}\t{rest}") is None
    assert reading_decode(text, "") is None


def test_a_given_reading_is_the_one_the_fact_check_reads() -> None:
    text = "Melanie ran a charity race."
    planted = facts.FactReading(numbers=frozenset({7.0}), names=frozenset(), words=frozenset(), amounts=False)
    with readings_given({text: planted}):
        assert lost_facts("Melanie ran a charity race today.", text) == ["7"]
    assert lost_facts("Melanie ran a charity race today.", text) == []


def test_the_rules_read_the_sample_as_when_the_reading_version_was_set() -> None:
    """Fails when text_norm, the name reader or the amounts reader read the sample differently:
    then bump READING_VERSION (kept readings of the old rules are ignored) and the digest here."""
    digest = hashlib.sha256(
        "\n".join(reading_encode(t).split("\t", 2)[2] for t in SAMPLE).encode()
    ).hexdigest()
    assert (READING_VERSION, digest[:16]) == (1, "8359e7b522d0056f")
