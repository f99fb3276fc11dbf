"""Procedural memory reads: the suggestion for a query (exact pattern, then nearest pattern)."""

from __future__ import annotations

from dataclasses import dataclass

from pgvector.django import CosineDistance

from memory_app.conf import kinds_config
from memory_app.embeddings import embed_text, embedding_model_name
from memory_app.models import Procedure, Tenant
from memory_app.retrieval.procedural import is_recommended, procedure_confidence
from memory_app.text import pattern_hash, query_pattern


@dataclass(frozen=True)
class Suggestion:
    procedure: Procedure | None
    match: str  # "exact" | "similar" | "none"
    distance: float | None
    confidence: float
    recommended: bool


def confidence_of(proc: Procedure) -> float:
    return procedure_confidence(
        proc.avg_success_score, proc.execution_count, kinds_config().procedure_confidence_divisor
    )


def _suggestion(proc: Procedure, match: str, distance: float | None) -> Suggestion:
    confidence = confidence_of(proc)
    return Suggestion(
        procedure=proc,
        match=match,
        distance=distance,
        confidence=confidence,
        recommended=is_recommended(confidence, kinds_config().procedure_recommend_threshold),
    )


def procedure_suggest(
    *, tenant: Tenant, query: str, user_id: str = "", max_distance: float | None = None
) -> Suggestion:
    """The exact pattern of `query` if recorded; else the nearest recorded pattern of this tenant and
    user within `max_distance` (cosine; PROCEDURE_MATCH_MAX_DISTANCE by default)."""
    none = Suggestion(procedure=None, match="none", distance=None, confidence=0.0, recommended=False)
    if not query_pattern(query):
        return none
    scope = Procedure.objects.filter(tenant=tenant, user_id=user_id)
    exact = scope.defer("pattern_embedding").filter(pattern_hash=pattern_hash(query)).first()
    if exact is not None:
        return _suggestion(exact, "exact", 0.0)

    # Vectors of another model are not comparable: only patterns embedded by the current one.
    scope = scope.filter(embedding_model=embedding_model_name(tenant))
    limit = kinds_config().procedure_match_max_distance if max_distance is None else max_distance
    if not scope.filter(pattern_embedding__isnull=False).exists():
        return none
    vector = embed_text(query_pattern(query), tenant=tenant)
    # A user's procedures are few: exact distance over the scope's rows (no approximate index).
    # The threshold is applied after the LIMIT, never inside it.
    nearest = (
        scope.filter(pattern_embedding__isnull=False)
        .defer("pattern_embedding")
        .annotate(distance=CosineDistance("pattern_embedding", vector))
        .order_by("distance", "pk")
        .first()
    )
    if nearest is None or nearest.distance > limit:
        return none
    return _suggestion(nearest, "similar", float(nearest.distance))
