"""Procedural memory: record how a query was answered (tool sequence, time, success)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from memory_app.embeddings import embed_texts, embedding_model_name
from memory_app.errors import ApplicationError
from memory_app.models import Procedure, Tenant
from memory_app.retrieval.procedural import running_average
from memory_app.text import pattern_hash as query_pattern_hash
from memory_app.text import query_pattern

logger = logging.getLogger(__name__)


def pattern_embed(pattern: str, tenant: Tenant) -> tuple[list[float] | None, str]:
    """The pattern's vector, or None when the provider fails: the record is kept either way and
    only the nearest-pattern lookup misses it."""
    try:
        model = embedding_model_name(tenant)
        return embed_texts([pattern], tenant=tenant, model=model)[0].tolist(), model
    except Exception as exc:  # the embedding provider is a dependency that may be down
        logger.warning("procedure pattern not embedded (%s); exact matches still work", exc)
        return None, ""


@transaction.atomic
def procedure_record(
    *,
    tenant: Tenant,
    query: str,
    tool_sequence: Sequence[str],
    execution_time_ms: float,
    success_score: float,
    user_id: str = "",
) -> Procedure:
    """Upsert the procedure of the normalised query and fold this run into its running averages.

    The stored tool sequence is replaced by this run's when this run scored at least the average so
    far: a worse run counts in the averages but does not overwrite a better-working sequence.
    """
    pattern = query_pattern(query)
    if not pattern:
        raise ApplicationError("The query has no words.", fields={"query": ["Give a non-empty query."]})
    if not 0.0 <= success_score <= 1.0:
        raise ApplicationError("success_score must be in [0, 1].", fields={"success_score": ["0..1."]})
    if execution_time_ms < 0:
        raise ApplicationError("execution_time_ms must be >= 0.", fields={"execution_time_ms": [">= 0."]})
    pattern_hash = query_pattern_hash(query)
    rows = Procedure.objects.filter(tenant=tenant, user_id=user_id, pattern_hash=pattern_hash)
    proc = None
    # An erasure may delete the row between its creation and its lock: the second pass creates it again.
    for _attempt in range(2):
        if not rows.exists():
            embedding, model = pattern_embed(pattern, tenant)
            Procedure.objects.get_or_create(
                tenant=tenant,
                user_id=user_id,
                pattern_hash=pattern_hash,
                defaults={"pattern": pattern, "pattern_embedding": embedding, "embedding_model": model},
            )
        # Concurrent records of one pattern serialise here, so no run is lost from the averages.
        proc = rows.select_for_update().first()
        if proc is not None:
            break
    if proc is None:
        raise ApplicationError(
            "The procedure was deleted while this run was recorded; retry.", code="conflict", status=409
        )
    n = proc.execution_count
    if n == 0 or success_score >= proc.avg_success_score:
        proc.tool_sequence = list(tool_sequence)
    proc.avg_success_score = min(max(running_average(proc.avg_success_score, n, success_score), 0.0), 1.0)
    proc.avg_execution_time_ms = max(running_average(proc.avg_execution_time_ms, n, execution_time_ms), 0.0)
    proc.execution_count = n + 1
    proc.last_used_at = timezone.now()
    proc.save()
    return proc
