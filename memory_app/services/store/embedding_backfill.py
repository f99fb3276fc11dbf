"""Memories stored while the embedding provider was down: found, and their vectors filled in.

The write path never drops a memory because its embedding failed: the row is stored without a
vector (found by full text and by its hash, not by vector search or the relation judge) and the
store answers `embedding_pending: true`. Then:
- `embedding_backfill_enqueue` queues `memory.embeddings_fill` for those ids after the commit;
- the task embeds them through the tenant's cache and writes the vectors (`memory_embeddings_fill`),
  retrying with backoff while the provider is still down;
- `memory.embeddings_sweep` (periodic) picks up any row still pending, for instance when the
  broker was down as well, and queues the fill again.
Idempotent throughout: only rows whose vector is still NULL are written, and a row whose text
changed meanwhile is embedded with the text it has now.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable

from django.db import transaction

from memory_app.embeddings import embed_texts_begin, embedding_model_name
from memory_app.models import Memory, Tenant
from memory_app.models.memory import MemoryStatus
from memory_app.services.queue import task_send
from memory_app.services.rows.tokens import memory_tokens_save

logger = logging.getLogger(__name__)

FILL_TASK = "memory.embeddings_fill"


def memories_embedding_pending(*, tenant: Tenant, memory_ids: Iterable[int]) -> set[int]:
    """Which of these memories have no vector yet."""
    return set(
        Memory.objects.filter(tenant=tenant, pk__in=list(memory_ids), embedding__isnull=True).values_list(
            "pk", flat=True
        )
    )


def embedding_backfill_enqueue(*, memory_ids: Iterable[int]) -> None:
    """Queue the fill for after the caller's commit; a broker outage only logs (the sweep retries)."""
    ids = sorted(set(memory_ids))
    if not ids:
        return

    def send() -> None:
        try:
            task_send(FILL_TASK, ids)
        except Exception as exc:  # the broker is a dependency that may be down too
            logger.warning("embedding fill for %d memories not queued (%s); the sweep will", len(ids), exc)

    transaction.on_commit(send, robust=True)


def memory_embeddings_fill(*, memory_ids: Iterable[int]) -> int:
    """Embed and write the vectors of those memories that still have none; returns how many.

    Raises the provider's ApplicationError when it is still down (the task retries)."""
    rows = (
        Memory.objects.filter(pk__in=list(memory_ids), embedding__isnull=True)
        .only("pk", "tenant_id", "text")
        .order_by("pk")
    )
    by_tenant: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for row in rows:
        by_tenant[row.tenant_id].append((row.pk, row.text))
    filled = 0
    for tenant_id, items in by_tenant.items():
        tenant = Tenant.objects.get(pk=tenant_id)
        model = embedding_model_name(tenant)
        job = embed_texts_begin([text for _, text in items], tenant=tenant, model=model)
        vectors = job.vectors()
        with transaction.atomic():
            for (pk, text), vector in zip(items, vectors, strict=True):
                # The text may have been edited meanwhile: then this vector is not its own.
                filled += Memory.objects.filter(pk=pk, embedding__isnull=True, text=text).update(
                    embedding=vector, embedding_model=model
                )
            # The local provider's forward pass computed the token vectors too: kept.
            memory_tokens_save(tenant=tenant, memories=items)
        # The memories keep these vectors and answer the cache for their texts: no cache rows.
        job.finish(held=[text for _, text in items])
    if filled:
        logger.info("embedding fill: %d memories now have vectors", filled)
    return filled


def embedding_backfill_pending_ids(*, limit: int) -> list[int]:
    """The oldest active memories still without a vector (on the partial index
    memory_embedding_pending_idx)."""
    return list(
        Memory.objects.filter(embedding__isnull=True, status=MemoryStatus.ACTIVE)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
