"""Text normalisation and hashes shared by the memory store and the embedding cache."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_PUNCT_OR_SPACE = re.compile(r"[\W_]+", re.UNICODE)


def normalize_text(text: str) -> str:
    """NFKC, case-folded, punctuation and whitespace collapsed to single spaces."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _PUNCT_OR_SPACE.sub(" ", folded).strip()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalized_hash(text: str) -> str:
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()
