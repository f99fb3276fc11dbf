"""Effective dedup settings for one store: request > agent profile > global setting > model calibration
(the judge area's `load_calibration`, which applies DEDUP_CANDIDATE_RADIUS / DEDUP_REVIEW_BELOW)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memory_app.judge.calibration import load_calibration
from memory_app.models import AgentProfile, Tenant
from memory_app.services.store_types import StoreOptions

logger = logging.getLogger(__name__)

JUDGES = ("offline", "llm")
# AgentProfile.config keys read by the store (same names as the per-request options).
PROFILE_KEYS = ("deduplicate", "candidate_radius", "judge", "review_below")


@dataclass(frozen=True)
class DedupConfig:
    deduplicate: bool
    judge: str | None  # None: the judge area's default (DEDUP_JUDGE)
    candidate_radius: float
    review_below: float
    k: int


def _calibration(model: str) -> tuple[float, float]:
    calibration = load_calibration(model)
    return float(calibration.candidate_radius), float(calibration.review_below)


def _valid_profile_value(key: str, value: Any) -> bool:
    if key == "deduplicate":
        return isinstance(value, bool)
    if key == "judge":
        return value in JUDGES
    if key == "candidate_radius":
        return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 2.0
    if key == "review_below":
        return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0
    return False


def profile_overrides(*, tenant: Tenant, agent_id: str) -> dict[str, Any]:
    """The store keys of an agent's profile; a malformed value is ignored with a warning, not a 500."""
    if not agent_id:
        return {}
    config = (
        AgentProfile.objects.filter(tenant=tenant, agent_id=agent_id).values_list("config", flat=True).first()
    )
    if not isinstance(config, dict):
        return {}
    overrides: dict[str, Any] = {}
    for key in PROFILE_KEYS:
        if key not in config:
            continue
        if _valid_profile_value(key, config[key]):
            overrides[key] = config[key]
        else:
            logger.warning("agent profile %s/%s: ignoring bad %s=%r", tenant.pk, agent_id, key, config[key])
    return overrides


def resolve_dedup_config(
    *, tenant: Tenant, agent_id: str, options: StoreOptions | None, model: str
) -> DedupConfig:
    profile = profile_overrides(tenant=tenant, agent_id=agent_id)
    options = options or StoreOptions()
    radius, review_below = _calibration(model)

    def pick(name: str, default: Any) -> Any:
        value = getattr(options, name, None)
        if value is not None:
            return value
        return profile.get(name, default)

    return DedupConfig(
        deduplicate=bool(pick("deduplicate", settings.STORE_DEDUP_ENABLED)),
        judge=pick("judge", None),
        candidate_radius=float(pick("candidate_radius", radius)),
        review_below=float(profile.get("review_below", review_below)),
        k=settings.STORE_CANDIDATES_K,
    )
