"""Fitting ranked texts into a token budget."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


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
    display: Sequence[int] | None = None,
) -> Packed:
    """Greedily take lines in rank order while the whole block stays within `budget` tokens.

    A line that does not fit is skipped (a shorter one further down may still fit). The block is
    counted as a whole at the end and trimmed from the bottom if tokens merged across boundaries
    made the sum of parts wrong, so the result never exceeds the budget. `display` (one key per line)
    orders the chosen lines in the text (a conversation packed newest first, shown oldest first).
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
        shown = sorted(chosen, key=lambda i: display[i]) if display is not None else chosen
        text = _join(header, [lines[i] for i in shown], separator)
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


@dataclass(frozen=True)
class PartLines:
    """One part of a composed context: its ranked lines, the header shown above them, and
    optionally the order in which chosen lines are shown (see `pack`)."""

    lines: Sequence[str]
    header: str = ""
    display: Sequence[int] | None = None


@dataclass(frozen=True)
class Composed:
    parts: dict[str, Packed] = field(default_factory=dict)
    text: str = ""
    tokens: int = 0


def _pack_part(part: PartLines, budget: int, count: Callable[[str], int]) -> Packed:
    return pack(part.lines, budget=budget, count=count, header=part.header, display=part.display)


def compose(
    parts: Mapping[str, PartLines],
    *,
    budget: int,
    shares: Mapping[str, float],
    count: Callable[[str], int],
    priority: Sequence[str] = (),
    separator: str = "\n\n",
) -> Composed:
    """Pack several parts into one block of at most `budget` tokens.

    The parts are joined in the order of `parts`. Each first gets its share of the budget (shares of
    parts with nothing to show are spread over the others); what a part leaves unused then goes,
    part by part in `priority` order (then the order of `parts`), to the parts that had more to
    show. The joined block is counted as a whole and the lowest-priority part gives back lines until
    it fits, so the block never exceeds `budget`.
    """
    ranked = [*[n for n in priority if n in parts], *[n for n in parts if n not in priority]]
    names = [name for name in ranked if parts[name].lines]
    packed: dict[str, Packed] = {name: Packed([], "", 0) for name in parts}
    if budget <= 0 or not names:
        return Composed(parts=packed)
    reserve = count(separator) * (len(names) - 1)
    available = max(budget - reserve, 0)
    _pack_shares(parts, packed, names=names, shares=shares, available=available, count=count)
    _spread_unused(parts, packed, names=names, available=available, count=count)
    return _fit_joined(parts, packed, names=names, budget=budget, count=count, separator=separator)


def _pack_shares(
    parts: Mapping[str, PartLines],
    packed: dict[str, Packed],
    *,
    names: Sequence[str],
    shares: Mapping[str, float],
    available: int,
    count: Callable[[str], int],
) -> None:
    """Each part with lines packed into its share of `available` (equal shares when none is set)."""
    weight = sum(max(shares.get(name, 0.0), 0.0) for name in names)
    for name in names:
        share = max(shares.get(name, 0.0), 0.0) / weight if weight else 1 / len(names)
        packed[name] = _pack_part(parts[name], int(available * share), count)


def _spread_unused(
    parts: Mapping[str, PartLines],
    packed: dict[str, Packed],
    *,
    names: Sequence[str],
    available: int,
    count: Callable[[str], int],
) -> None:
    """What the parts left unused, offered part by part to those that had more to show."""
    for name in names:
        left = available - sum(p.tokens for p in packed.values())
        if left > 0 and len(packed[name].indices) < len(parts[name].lines):
            packed[name] = _pack_part(parts[name], packed[name].tokens + left, count)


def _fit_joined(
    parts: Mapping[str, PartLines],
    packed: dict[str, Packed],
    *,
    names: Sequence[str],
    budget: int,
    count: Callable[[str], int],
    separator: str,
) -> Composed:
    """The joined block, the lowest-priority part giving back lines until it is within `budget`."""
    while True:
        text = separator.join(p.text for p in packed.values() if p.text)
        tokens = count(text) if text else 0
        if tokens <= budget:
            return Composed(parts=packed, text=text, tokens=tokens)
        name = next(n for n in reversed(names) if packed[n].tokens)
        over = tokens - budget
        packed[name] = _pack_part(parts[name], max(packed[name].tokens - over, 0), count)
