"""Choosing the text a merge keeps, without writing a new sentence."""

from __future__ import annotations

from collections.abc import Sequence

from memory_app.judge import text_norm as tn


def information(text: str) -> int:
    """How many distinct content words and numbers a text states."""
    return len(tn.content_words(text)) + len(tn.numbers(text))


def merge_text(texts: Sequence[str]) -> str:
    """The most informative member, verbatim: most content words and numbers, then the longer, then first.

    Offline merges never invent a sentence; the LLM judge's merged text is used instead when present.
    """
    candidates = [t for t in texts if t and t.strip()]
    if not candidates:
        raise ValueError("merge_text needs at least one non-empty text")
    best_index = max(
        range(len(candidates)),
        key=lambda i: (information(candidates[i]), len(candidates[i].strip()), -i),
    )
    return candidates[best_index]
