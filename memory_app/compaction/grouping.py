"""Cohesive groups from near-duplicate pairs, without chaining.

A union of pairs links A~B and B~C into one group even when A and C say different things (two
facts in similar words each close to a third). Here a group only grows when EVERY new member is
within the radius of EVERY current member (complete linkage): pairs are taken closest first, and
two groups join only if all their cross pairs are candidate pairs and none was kept apart by a
reviewer. A group's diameter is therefore at most the radius.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Group:
    members: tuple[int, ...]  # row indexes, ascending
    max_distance: float  # the largest pairwise distance inside the group


def _key(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def cohesive_groups(
    left: np.ndarray,
    right: np.ndarray,
    distance: np.ndarray,
    *,
    cannot_link: Iterable[tuple[int, int]] = (),
    max_group_size: int = 50,
) -> list[Group]:
    """Complete-linkage groups over the given candidate pairs (row indexes), closest pairs first."""
    edges: dict[tuple[int, int], float] = {
        _key(int(a), int(b)): float(d) for a, b, d in zip(left, right, distance, strict=True)
    }
    forbidden = {_key(a, b) for a, b in cannot_link}
    group_of: dict[int, int] = {}
    groups: dict[int, list[int]] = {}
    next_id = 0

    def joinable(xs: list[int], ys: list[int]) -> bool:
        if len(xs) + len(ys) > max_group_size:
            return False
        for x in xs:
            for y in ys:
                key = _key(x, y)
                if key not in edges or key in forbidden:
                    return False
        return True

    for idx in np.argsort(distance, kind="stable"):
        a, b = _key(int(left[idx]), int(right[idx]))
        if (a, b) in forbidden:
            continue
        ga, gb = group_of.get(a), group_of.get(b)
        if ga is not None and ga == gb:
            continue
        xs = groups[ga] if ga is not None else [a]
        ys = groups[gb] if gb is not None else [b]
        if not joinable(xs, ys):
            continue
        target = ga if ga is not None else gb
        if target is None:
            target = next_id
            next_id += 1
            groups[target] = []
        for other, members in ((ga, xs), (gb, ys)):
            if other == target:
                continue
            if other is not None:
                del groups[other]
            groups[target].extend(members)
            for m in members:
                group_of[m] = target

    result = []
    for members in groups.values():
        ordered = tuple(sorted(members))
        diameter = max(edges[_key(x, y)] for i, x in enumerate(ordered) for y in ordered[i + 1 :])
        result.append(Group(ordered, diameter))
    result.sort(key=lambda g: g.members[0])
    return result
