"""Effective dedup settings for one store: request > agent profile > global setting > model calibration
(`judge.calibration.load_calibration`, which applies DEDUP_CANDIDATE_RADIUS / DEDUP_REVIEW_BELOW)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from memory_app.conf import store_config
from memory_app.judge.calibration.params import load_calibration
from memory_app.models import Tenant
from memory_app.overrides import StoreOverrides
from memory_app.selectors.agent_profiles import agent_config

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DedupConfig:
    deduplicate: bool
    judge: str | None  # None: the default judge (DEDUP_JUDGE)
    candidate_radius: float
    review_below: float
    k: int


def _calibration(model: str) -> tuple[float, float]:
    calibration = load_calibration(model)
    return float(calibration.candidate_radius), float(calibration.review_below)


def profile_overrides(*, tenant: Tenant, agent_id: str) -> dict[str, Any]:
    """The store keys the agent's profile sets."""
    return agent_config(tenant=tenant, agent_id=agent_id).store.given()


def resolve_dedup_config(
    *, tenant: Tenant, agent_id: str, options: StoreOverrides | None, model: str
) -> DedupConfig:
    # One layering for every knob: the request's values over the profile's (a request cannot set
    # review_below through the API, so there the profile's holds), else the calibration's.
    chosen = {**profile_overrides(tenant=tenant, agent_id=agent_id), **(options or StoreOverrides()).given()}
    radius, review_below = _calibration(model)
    return DedupConfig(
        deduplicate=bool(chosen.get("deduplicate", store_config().dedup_enabled)),
        judge=chosen.get("judge"),
        candidate_radius=float(chosen.get("candidate_radius", radius)),
        review_below=float(chosen.get("review_below", review_below)),
        k=store_config().candidates_k,
    )
