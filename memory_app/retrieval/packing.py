"""Fitting ranked texts into a token budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Packed:
    indices: list[int]  # into the input, in input (rank) order
    text: str
    tokens: int


def pack(
    lines: Sequence[str],
    *,
    budget: int,
    count: Callable[[str], int],
    header: str = "",
    separator: str = "\n",
) -> Packed:
    """Greedily take lines in rank order while the whole block stays within `budget` tokens.

    A line that does not fit is skipped (a shorter one further down may still fit). The block is
    counted as a whole at the end and trimmed from the bottom if tokens merged across boundaries
    made the sum of parts wrong, so the result never exceeds the budget.
    """
    if budget <= 0:
        return Packed(indices=[], text="", tokens=0)
    chosen: list[int] = []
    used = count(header) if header else 0
    if used > budget:
        return Packed(indices=[], text="", tokens=0)
    for index, line in enumerate(lines):
        cost = count((separator if (chosen or header) else "") + line)
        if used + cost <= budget:
            chosen.append(index)
            used += cost
    while True:
        text = _join(header, [lines[i] for i in chosen], separator)
        tokens = count(text) if text else 0
        if tokens <= budget:
            if not chosen:
                return Packed(indices=[], text="", tokens=0)
            return Packed(indices=chosen, text=text, tokens=tokens)
        chosen.pop()


def _join(header: str, lines: list[str], separator: str) -> str:
    if not lines:
        return ""
    return separator.join([header, *lines]) if header else separator.join(lines)
