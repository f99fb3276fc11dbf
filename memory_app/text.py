"""Text identity shared by the memory store and the embedding cache: two lossless tiers.

- exact (`exact_text`): NFC, surrounding whitespace trimmed. NFC only merges canonically
  equivalent spellings ("é" precomposed or as e + combining accent), which are one text.
- normalised (`normalize_text`): also folds differences that never change meaning: case, Unicode
  compatibility forms (NFKC: full-width letters, ligatures, the one-character "½" and the same
  fraction written with a fraction slash), runs of whitespace, typographic quotes to their ASCII
  form, and trailing sentence punctuation (". ! , ; :" and the full stops of other scripts).
  Everything else is kept: digits, signs, currency and math symbols, `#` and `+`, emoji, inner
  punctuation and every letter of every script.

Two decisions made on purpose:
- Superscripts and subscripts are NOT folded although NFKC would fold them: "m²" is not "m2" and
  "H₂O" is a formula, "x²" is not "x2". Those characters pass through unchanged.
- A trailing "?" is kept: "User likes cats?" asks, "User likes cats." states.

Every pair the old coarse rule (all non-word characters dropped) kept apart this rule keeps apart
too: it folds a subset of what the old one folded, so recomputing stored hashes can only split
old collisions, never create new ones (migration 0008).

`query_pattern` is the coarse rule, kept for procedural memory only: a procedure is found by the
pattern of a query ("Weekly summary?" and "weekly summary" ask for the same tool sequence), it
never decides whether a fact is stored.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata

_WHITESPACE = re.compile(r"\s+", re.UNICODE)
# Compatibility decompositions that change what a character says (m², H₂O): never folded.
_MEANINGFUL_COMPAT_TAGS = ("<super>", "<sub>")
# Typographic quotes (left/right, low-9, high-reversed-9, single and double, guillemets) to ASCII.
_QUOTES = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2039\u203a", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u00ab\u00bb", '"'),
    }
)
# Sentence ends a statement may carry or not: Latin, and the full stops of CJK (U+3002),
# Devanagari (U+0964), Urdu (U+06D4), Ethiopic (U+1362) and Armenian (U+0589). "?" is not here:
# a question is not a statement.
_TRAILING = re.compile(r"[\s.!,;:\u3002\u0964\u06d4\u1362\u0589]+$")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def exact_text(text: str) -> str:
    """The exact tier's form: NFC with surrounding whitespace trimmed."""
    return unicodedata.normalize("NFC", text).strip()


def _compat_fold(text: str) -> str:
    """NFKC, except superscript and subscript characters, which pass through unchanged."""
    if text.isascii():
        return text
    out: list[str] = []
    start = 0
    for i, ch in enumerate(text):
        if ord(ch) > 127 and unicodedata.decomposition(ch).startswith(_MEANINGFUL_COMPAT_TAGS):
            out.append(unicodedata.normalize("NFKC", text[start:i]))
            out.append(ch)
            start = i + 1
    out.append(unicodedata.normalize("NFKC", text[start:]))
    return "".join(out)


def normalize_text(text: str) -> str:
    """The normalised tier's form (see the module docstring for what is folded and what is kept)."""
    folded = _compat_fold(unicodedata.normalize("NFC", text)).casefold().translate(_QUOTES)
    folded = _WHITESPACE.sub(" ", folded).strip()
    stripped = _TRAILING.sub("", folded)
    # A text made only of such punctuation ("...") is its own identity, not the empty string.
    return stripped or folded


# What the skeleton drops: punctuation that only shapes a sentence (a "." or ","
# between digits is part of a number and stays). Signs, "#", "%", "/", "&" and the like stay.
_SOFT_PUNCT = re.compile(r"(?<!\d)[.,]|[.,](?!\d)|[;:!?'\"()\[\]{}\u00a1\u00bf\u2026]")


def identity_skeleton(text: str) -> str:
    """The normalised text without sentence punctuation: the near-duplicate cache tier may reuse an
    embedding only between texts with equal skeletons, so a typo, a changed digit, sign, symbol,
    emoji or letter never shares an embedding, while "e.g. it's" and "eg its" may."""
    return _WHITESPACE.sub(" ", _SOFT_PUNCT.sub("", normalize_text(text))).strip()


def query_pattern(text: str) -> str:
    """The coarse pattern of a query for procedural lookup: word characters only, case-folded."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _NON_WORD.sub(" ", folded).strip()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalized_hash(text: str) -> str:
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


def keyed_hash(key: bytes, text: str) -> str:
    """HMAC-SHA-256 of `text`: a digest that only the holder of `key` can test a guess against."""
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def pattern_hash(text: str) -> str:
    """SHA-256 of `query_pattern(text)` (the key of a procedure)."""
    return content_hash(query_pattern(text))
