"""Helpers for write-path tests: vectors at a chosen cosine distance and a judge that says one thing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memory_app.judge.base import JudgeItem, Judgement
from tests.factories import unit_vector


def at_distance(base: np.ndarray, distance: float, seed: int) -> np.ndarray:
    """A unit vector whose cosine distance to `base` is exactly `distance`."""
    other = unit_vector(seed)
    other = other - float(np.dot(other, base)) * base
    other /= np.linalg.norm(other)
    cos = 1.0 - distance
    v = cos * base + np.sqrt(max(0.0, 1.0 - cos * cos)) * other
    return (v / np.linalg.norm(v)).astype(np.float32)


@dataclass
class FixedJudge:
    """Labels every candidate with one relation: isolates the store's actions from the judge's quality
    (the real judges have their own tests; the end-to-end tests use the real offline judge)."""

    relation: str
    confidence: float
    merged_text: str | None = None
    name: str = "offline"
    calls: int = 0

    def judge(self, new: JudgeItem, candidates: list[JudgeItem]) -> list[Judgement]:
        self.calls += 1
        return [
            Judgement(self.relation, self.confidence, merged_text=self.merged_text, judge="offline")
            for _ in candidates
        ]
