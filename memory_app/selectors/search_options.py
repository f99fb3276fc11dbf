"""Search options: per request, per agent profile (AgentProfile.config), then global settings."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from django.conf import settings

from memory_app.embeddings import embedding_model_name
from memory_app.models import AgentProfile, Tenant

MODES = ("hybrid", "vector", "fulltext")
# Load-time dedup distance per embedding model when SEARCH_DEDUP_THRESHOLD is unset.
DEDUP_THRESHOLDS = {"all-MiniLM-L6-v2": 0.4}
DEFAULT_DEDUP_THRESHOLD = 0.4


@dataclass(frozen=True)
class SearchOptions:
    """Per-request knobs; None means "the agent profile's value, else the global setting"."""

    deduplicate: bool | None = None
    dedup_threshold: float | None = None
    dedup_use_llm: bool | None = None
    clustering: bool | None = None
    dbscan_epsilon: float | None = None
    dbscan_min_points: int | None = None
    mmr: bool | None = None
    mmr_lambda: float | None = None
    half_life_days: float | None = None
    fusion: str | None = None
    vector_weight: float | None = None
    lexical: str | None = None
    candidates: int | None = None
    touch: bool = True  # count an access for each returned row


@dataclass(frozen=True)
class ResolvedOptions:
    deduplicate: bool
    dedup_threshold: float
    dedup_use_llm: bool
    clustering: bool
    dbscan_epsilon: float
    dbscan_min_points: int
    mmr: bool
    mmr_lambda: float
    half_life_days: float
    fusion: str
    vector_weight: float
    lexical: str
    candidates: int
    touch: bool


def _defaults() -> ResolvedOptions:
    threshold = settings.SEARCH_DEDUP_THRESHOLD
    if threshold is None:
        threshold = DEDUP_THRESHOLDS.get(embedding_model_name(), DEFAULT_DEDUP_THRESHOLD)
    return ResolvedOptions(
        deduplicate=settings.SEARCH_DEDUP_ENABLED,
        dedup_threshold=float(threshold),
        dedup_use_llm=settings.SEARCH_DEDUP_USE_LLM,
        clustering=settings.SEARCH_CLUSTERING_ENABLED,
        dbscan_epsilon=settings.SEARCH_DBSCAN_EPSILON,
        dbscan_min_points=settings.SEARCH_DBSCAN_MIN_POINTS,
        mmr=settings.SEARCH_MMR_ENABLED,
        mmr_lambda=settings.SEARCH_MMR_LAMBDA,
        half_life_days=settings.SEARCH_DECAY_HALF_LIFE_DAYS,
        fusion=settings.SEARCH_FUSION,
        vector_weight=settings.SEARCH_VECTOR_WEIGHT,
        lexical=settings.SEARCH_LEXICAL,
        candidates=settings.SEARCH_CANDIDATES,
        touch=True,
    )


# Keys an AgentProfile.config may set, with the type each must have (bad values are ignored, logged).
PROFILE_KEYS: dict[str, type | tuple[type, ...]] = {
    "deduplicate": bool,
    "dedup_threshold": (int, float),
    "dedup_use_llm": bool,
    "clustering": bool,
    "dbscan_epsilon": (int, float),
    "dbscan_min_points": int,
    "mmr": bool,
    "mmr_lambda": (int, float),
    "half_life_days": (int, float),
}


def profile_overrides(*, tenant: Tenant, agent_id: str | None) -> dict[str, Any]:
    """The search keys of the agent's profile config (its "search" object, or the top level)."""
    if not agent_id:
        return {}
    profile = AgentProfile.objects.filter(tenant=tenant, agent_id=agent_id).only("config").first()
    if profile is None or not isinstance(profile.config, dict):
        return {}
    config = profile.config.get("search", profile.config)
    if not isinstance(config, dict):
        return {}
    result: dict[str, Any] = {}
    for key, kind in PROFILE_KEYS.items():
        value = config.get(key)
        if value is None or (isinstance(value, bool) and kind is not bool):
            continue
        if isinstance(value, kind):
            result[key] = value
    return result


def resolve_options(
    *, tenant: Tenant, agent_id: str | None, options: SearchOptions | None
) -> ResolvedOptions:
    resolved = replace(_defaults(), **profile_overrides(tenant=tenant, agent_id=agent_id))
    if options is not None:
        explicit = {
            f.name: getattr(options, f.name) for f in fields(options) if getattr(options, f.name) is not None
        }
        resolved = replace(resolved, **explicit)
    return resolved
