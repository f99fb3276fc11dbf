"""Procedural-memory arithmetic (pure): running averages and the recommendation confidence."""

from __future__ import annotations


def running_average(average: float, count: int, value: float) -> float:
    """The mean of `count` values that averaged `average`, after one more `value`."""
    return (average * count + value) / (count + 1)


def procedure_confidence(avg_success_score: float, execution_count: int, divisor: float = 10.0) -> float:
    """min(avg_success_score x (1 + execution_count / divisor), 1.0): a good average counts for more
    the more often it was observed."""
    return min(avg_success_score * (1.0 + execution_count / divisor), 1.0)


def is_recommended(confidence: float, threshold: float) -> bool:
    return confidence >= threshold
