"""Time and feedback multipliers applied to fused relevance scores."""

from __future__ import annotations

import numpy as np


def decay_factors(age_seconds: np.ndarray, *, half_life_seconds: float, floor: float = 0.0) -> np.ndarray:
    """0.5 ** (age / half_life), never below `floor`; a half-life of 0 or less disables decay.

    Negative ages (clock skew, future event dates) count as fresh rather than being boosted.
    """
    ages = np.maximum(np.asarray(age_seconds, dtype=np.float64), 0.0)
    if half_life_seconds <= 0:
        return np.ones_like(ages)
    factors = np.power(0.5, ages / half_life_seconds)
    return np.maximum(factors, floor)


def ace_factors(
    confidence: np.ndarray,
    helpful: np.ndarray,
    harmful: np.ndarray,
    *,
    confidence_weight: float = 0.2,
    feedback_weight: float = 0.1,
) -> np.ndarray:
    """Multiplier from the ACE fields: centred on a neutral memory (confidence 0.5, no feedback).

    Confidence moves the score by up to +-confidence_weight/2; net feedback (helpful - harmful)
    by up to +-feedback_weight through tanh, so a flood of votes cannot dominate relevance.
    """
    confidence = np.asarray(confidence, dtype=np.float64)
    net = np.asarray(helpful, dtype=np.float64) - np.asarray(harmful, dtype=np.float64)
    factor = 1.0 + confidence_weight * (confidence - 0.5) + feedback_weight * np.tanh(net / 3.0)
    return np.maximum(factor, 0.0)
