"""Search options: per request, per agent profile (AgentProfile.config), then global settings."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from memory_app.conf import search_config
from memory_app.embeddings import embedding_model_name
from memory_app.judge.calibration.params import load_calibration
from memory_app.models import Tenant
from memory_app.overrides import SearchOverrides
from memory_app.selectors.agent_profiles import agent_config

MODES = ("hybrid", "vector", "fulltext")


@dataclass(frozen=True)
class SearchOptions(SearchOverrides):
    """A request's or a profile's overrides, plus the retrieval knobs only evaluation sets (the
    fusion and candidate pool studied by `evaluate_retrieval`); None: the next level's value."""

    fusion: str | None = None
    vector_weight: float | None = None
    lexical: str | None = None
    candidates: int | None = None


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


def _defaults() -> ResolvedOptions:
    config = search_config()
    threshold = config.dedup_threshold
    if threshold is None:
        # Per embedding model, in the model's calibration file beside the store's thresholds.
        threshold = load_calibration(embedding_model_name()).search_dedup_threshold
    return ResolvedOptions(
        deduplicate=config.dedup_enabled,
        dedup_threshold=float(threshold),
        dedup_use_llm=config.dedup_use_llm,
        clustering=config.clustering_enabled,
        dbscan_epsilon=config.dbscan_epsilon,
        dbscan_min_points=config.dbscan_min_points,
        mmr=config.mmr_enabled,
        mmr_lambda=config.mmr_lambda,
        half_life_days=config.decay_half_life_days,
        fusion=config.fusion,
        vector_weight=config.vector_weight,
        lexical=config.lexical,
        candidates=config.candidates,
    )


def profile_overrides(*, tenant: Tenant, agent_id: str | None) -> dict[str, Any]:
    """The search keys the agent's profile sets (its "search" object, or the top level)."""
    return agent_config(tenant=tenant, agent_id=agent_id).search.given()


def resolve_options(
    *, tenant: Tenant, agent_id: str | None, options: SearchOptions | None
) -> ResolvedOptions:
    resolved = replace(_defaults(), **profile_overrides(tenant=tenant, agent_id=agent_id))
    if options is not None:
        resolved = replace(resolved, **options.given())
    return resolved
