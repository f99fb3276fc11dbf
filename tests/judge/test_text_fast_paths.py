"""The per-text readings skip work a text cannot need (a pattern whose required character is absent,
an amount without a number): each must read exactly what the unguarded reading reads."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory_app.judge import facts, merge
from memory_app.judge.signals import features, quantities
from memory_app.judge.signals import text_norm as tn

# Pieces that trigger each rewrite and each amount reading, joined in any order with plain words.
PIECES = [
    "type II", "IV", "XII", "2025-08-31", "a half", "one third", "number one", "number 1", "50%",
    "don\u2019t", "can't", "1,800", "14-day", "5k", "3:30 pm", "11 p.m.", "$5", "five km", "twenty-five",
    "eighteen hundred dollars", "~7h", "-3\u00b0C", "\u2460", "\ufb01ve", "Mr. Smith", "Bob's", "Alice",
    "US$ 20", "NASA", "J. Doe", ". Then", "? Kim", ": Rome", "\n", "  ", "man", "Kalomi", "two",
]  # fmt: skip
SCRAPS = st.text(alphabet="aIVX0123456789-,.:;%'$ \u00e9\u2019k\n", max_size=6)
texts = st.lists(st.one_of(st.sampled_from(PIECES), SCRAPS), max_size=8).map(" ".join)


def _clean_unguarded(text: str) -> str:
    """`text_norm._clean` with every rewrite always applied."""
    text = unicodedata.normalize("NFKC", text)
    text = tn._ROMAN_TOKEN.sub(lambda m: tn._ROMAN[m.group(1)], text)
    text = tn._ISO_DATE.sub(tn._iso_date, text).casefold()
    text = tn._FRACTION.sub(lambda m: tn._FRACTIONS[m.group(1)] + " percent", text)
    text = re.sub(r"\bnumber (?:one|1)\b", "top", text)
    text = text.replace("%", " percent ")
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"(\w)n't\b", r"\1 n't", text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(\d)([a-z])", r"\1 \2", text)
    return re.sub(r"\b(\d{1,2})(?::(\d{2}))?\s*(?:p\.?\s?m\b\.?)", tn._to_24h, text)


def _names_by_pattern(text: str) -> frozenset[str]:
    """`facts.names` with the sentence start found by a pattern on the text before each word."""
    found = set()
    for match in facts.WORD.finditer(text):
        word = match.group(0).rstrip("'-")
        before = text[: match.start()]
        opens_sentence = not before.strip() or bool(re.search(r"[.!?:;]\s*$", before))
        named = len(word) > 1 and word[0].isupper() and word.casefold() not in tn.STOPWORDS
        if named and not opens_sentence:
            found.add(word.removesuffix("'s"))
    return frozenset(found)


@settings(max_examples=400, deadline=None)
@given(text=texts)
@example(text="I paid 1,800 dollars at 3:30 pm on 2025-08-31 for type II")
def test_cleaning_skips_only_rewrites_that_could_not_match(text):
    assert tn._clean(text) == _clean_unguarded(text)


@settings(max_examples=400, deadline=None)
@given(text=texts)
@example(text="eighteen hundred dollars")
@example(text="the \ufb01ve km run")
def test_a_text_without_a_number_word_or_digit_states_no_amount(text):
    assert quantities._read_matches(text) == quantities._read_tokens(text)


@settings(max_examples=400, deadline=None)
@given(text=texts)
@example(text="Alice met Bob.\n  Then Kim called: Rome")
def test_names_are_the_capitalised_words_that_do_not_open_a_sentence(text):
    assert facts.names.__wrapped__(text) == _names_by_pattern(text)


def test_a_name_outside_every_amount_is_never_inside_one():
    assert not merge._inside_amount("Bob", "Bob paid", [])
    assert merge._inside_amount("C", "it was 5 C", [(7, 10)])


def _slips(word: str) -> set[str]:
    dropped = {word[:i] + word[i + 1 :] for i in range(len(word))}
    return dropped | features._swaps(word)


def _same_word_in_by_every_slip(word: str, others: frozenset[str]) -> bool:
    """`features.same_word_in` with the others' slips listed in full."""
    if not word:
        return False
    if others & tn.SYNONYMS.get(word, frozenset()):
        return True
    if any(features.same_word(word, other) for other in others if other[:1] == word[:1]):
        return True
    if len(word) < features._TYPO_FROM:
        return False
    long_enough = [other for other in others if len(other) >= features._TYPO_FROM]
    slips = set().union(*(_slips(other) for other in long_enough))
    if word in slips:
        if word not in others:
            return True
        if any(other != word and features.spelling_variant(word, other) for other in others):
            return True
    if len(word) - 1 not in {len(other) for other in long_enough}:
        return False
    return any(word[:i] + word[i + 1 :] in others for i in range(len(word)))


# Few letters, so that words are often one another's slips.
words = st.text(alphabet="abcd", min_size=1, max_size=8)


@settings(max_examples=1000, deadline=None)
@given(word=words, others=st.frozensets(words, max_size=8))
@example(word="garden", others=frozenset({"gardens"}))
@example(word="ardens", others=frozenset({"gardens"}))
@example(word="agrdens", others=frozenset({"gardens"}))
@example(word="gardne", others=frozenset({"garden", "gardne"}))
def test_a_spelling_slip_is_found_from_the_word_as_from_every_slip_of_the_others(word, others):
    assert features.same_word_in(word, others) == _same_word_in_by_every_slip(word, others)
