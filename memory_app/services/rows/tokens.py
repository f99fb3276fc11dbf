"""Writing the content-word vectors of memories' texts (models.MemoryTokens).

Every path that creates a memory or changes its text keeps the vectors the token encoder already
holds for that text: the forward pass that embedded it (local provider) or the judge's own
computation. None of them runs the model for the table; a text the encoder does not hold gets no
row, and the judge computes it when it first needs it. `memory_tokens_fill` (`manage.py reindex
--tokens`) computes the missing and stale rows in the background, with the model.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from django.db import transaction

from memory_app.db import citus_mode
from memory_app.judge.facts import reading_encode
from memory_app.judge.signals.alignment import text_digest, token_encoder, tokens_bytes
from memory_app.models import MemoryTokens, Tenant
from memory_app.selectors.store.tokens import memory_tokens_missing, memory_tokens_stale

# What an upsert of a memory's row replaces (the row of an older text of the same memory).
TOKEN_FIELDS = ["text_digest", "words", "vectors", "fact_reading"]


def token_conflict_key() -> list[str]:
    """The unique key an upsert of token rows names: the primary key (memory_id), which on Citus
    is (tenant_id, memory_id) (`manage.py citus_distribute` widens every key of a distributed table)."""
    return ["tenant", "memory"] if citus_mode() else ["memory"]


def memory_tokens_rows(*, tenant_id: int, memories: Sequence[tuple[int, str]]) -> list[MemoryTokens]:
    """Unsaved rows for the (id, text) pairs whose vectors the encoder holds (no model run)."""
    known = token_encoder().known([text for _, text in memories])
    return [
        MemoryTokens(
            memory_id=memory_id,
            tenant_id=tenant_id,
            text_digest=text_digest(text),
            words=len(known[text].stems),
            vectors=tokens_bytes(known[text]),
            fact_reading=reading_encode(text),
        )
        for memory_id, text in memories
        if text in known
    ]


def memory_tokens_save(*, tenant: Tenant, memories: Sequence[tuple[int, str]]) -> int:
    """Keep the vectors of these memories' texts that the encoder holds; one INSERT ... ON CONFLICT
    (a row of an older text of the same memory is replaced), none when it holds nothing. Runs in
    the caller's transaction: a single statement needs no savepoint of its own."""
    rows = memory_tokens_rows(tenant_id=tenant.pk, memories=memories)
    if rows:
        MemoryTokens.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=token_conflict_key(),
            update_fields=TOKEN_FIELDS,
        )
    return len(rows)


def memory_tokens_fill(
    *, tenant: Tenant | None, batch_size: int = 64, on_batch: Callable[[int], None] | None = None
) -> int:
    """Compute and keep the vectors of every active memory that has no fitting row: none or one of
    an older text (memories stored by a remote provider and never judged, rows from before the
    table), then rows whose word count the judge's current word rules no longer give (written
    before those rules changed: every reader ignores them, so each such text costs a model run
    wherever it is judged). Runs the token model, batch by batch, each batch committed on its own, so an
    interrupted run resumes: what it rewrote fits and is not found again."""
    done = 0
    encoder = token_encoder()
    batches = itertools.chain(
        memory_tokens_missing(tenant=tenant, batch_size=batch_size),
        memory_tokens_stale(tenant=tenant, batch_size=batch_size),
    )
    for batch in batches:
        encoder.tokens([text for _, _, text in batch])
        by_tenant: dict[int, list[tuple[int, str]]] = {}
        for memory_id, tenant_id, text in batch:
            by_tenant.setdefault(tenant_id, []).append((memory_id, text))
        with transaction.atomic():
            for tenant_id, memories in by_tenant.items():
                rows = memory_tokens_rows(tenant_id=tenant_id, memories=memories)
                MemoryTokens.objects.bulk_create(
                    rows,
                    update_conflicts=True,
                    unique_fields=token_conflict_key(),
                    update_fields=TOKEN_FIELDS,
                )
                done += len(rows)
        if on_batch:
            on_batch(len(batch))
    return done
