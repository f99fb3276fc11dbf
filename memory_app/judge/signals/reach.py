"""What the offline judge can read: pairs outside it are stored as distinct, never merged or queued.

The word rules, the lexicon and the fitted model know English in Latin script, in sentences about as
long as the facts they were fitted on. A pair in another script or language, or far longer, is unlike
anything they saw: any verdict there would be a guess, and a merge needs positive evidence.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from memory_app.judge.signals.alignment import word_model
from memory_app.judge.signals.lexicon import STOPWORDS

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# Below this many words a text may be a bare noun phrase ("dark mode in editors"), so the absence of
# English function words says nothing about its language.
_FUNCTION_WORDS_FROM = 5
# Texts longer than this many times the longest fitted text are another register (a document, a
# transcript), not a fact; the calibration records the longest fitted text.
LENGTH_FACTOR = 2.0


@lru_cache(maxsize=8192)
def foreign_script(text: str) -> bool:
    """Any letter outside the Latin script (Hangul, Hebrew, Thai, Han, Cyrillic, ...)."""
    return any(ch.isalpha() and not unicodedata.name(ch, "").startswith("LATIN") for ch in text)


@lru_cache(maxsize=8192)
def word_count(text: str) -> int:
    return len(_WORD.findall(text))


# Without a function word, a sentence is still English when at least this share of its words
# (names after the first word left out) are whole words of the local model's English vocabulary:
# "Aiko collects vintage film cameras" (4 of 5), "One tablespoon equals three teaspoons" (3 of 5);
# "Er wohnt jetzt seit Jahren dort" has 1 of 6.
_VOCABULARY_SHARE = 0.6


@lru_cache(maxsize=1)
def _vocabulary() -> frozenset[str]:
    return frozenset(word_model().tokenizer.vocab)


@lru_cache(maxsize=8192)
def not_english(text: str) -> bool:
    """A sentence of several words without a single English function word, most of whose words
    the model's vocabulary lacks: another language written in Latin letters ("Fred wohnt jetzt in
    Hamburg" has "in", but "Er wohnt jetzt seit Jahren dort" none). Short English facts often have
    no function word ("Aiko collects vintage film cameras"), so the absence alone does not decide."""
    written = _WORD.findall(text)
    words = [w.casefold() for w in written]
    if len(words) < _FUNCTION_WORDS_FROM or any(w in STOPWORDS for w in words):
        return False
    common = [w.casefold() for index, w in enumerate(written) if index == 0 or not w[0].isupper()]
    known = sum(1 for w in common if w in _vocabulary())
    return known < _VOCABULARY_SHARE * len(common)


def outside(old: str, new: str, max_words: int = 0) -> str:
    """Why the judge cannot read this pair, or '' when it can."""
    for text in (old, new):
        if foreign_script(text):
            return "a script the judge does not read"
        if not_english(text):
            return "a language the judge does not read"
        if max_words and word_count(text) > LENGTH_FACTOR * max_words:
            return "longer than anything the judge was fitted on"
    return ""


_SPACE = re.compile(r"\s+")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


@lru_cache(maxsize=8192)
def surface(text: str) -> str:
    """The text with only meaning-free differences folded: case, compatibility forms, whitespace,
    quote styles and trailing full stops. Digits, signs, symbols, emoji and letters all stay."""
    folded = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return _SPACE.sub(" ", folded).strip().rstrip(".!").rstrip()


# Characters that state something: signs, currency, math, "#", "%", "@", "&" and every symbol or emoji
# (Unicode categories S*). Sentence punctuation and a hyphen inside a word ("dairy-free") do not.
_MEANINGFUL = frozenset("#%@&*/+-")
_HYPHENS = frozenset("-\u2010\u2011")


@lru_cache(maxsize=8192)
def symbols(text: str) -> tuple[str, ...]:
    """The signs, symbols and emoji of a text in order ("-200", "C#", "C++", "€", "🥜")."""
    folded = unicodedata.normalize("NFKC", text)
    out = []
    for index, ch in enumerate(folded):
        if ch in _HYPHENS:
            before = folded[index - 1] if index else " "
            after = folded[index + 1] if index + 1 < len(folded) else " "
            if before.isalnum() and after.isalnum():
                continue
        if ch in _MEANINGFUL or unicodedata.category(ch).startswith("S"):
            out.append(ch)
    return tuple(out)
