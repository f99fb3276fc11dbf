"""Re-embed every memory with the configured model, beside the live vectors, then switch at once.

1. `reindex_build` embeds, batch by batch, every row (any status, so an undo restores rows with
   vectors of the same model) whose `embedding_model` is not the target and stores the vector in
   `ReindexVector`. Searches keep using the live column meanwhile. An interrupted build resumes:
   rows whose next vector exists for this model and text are skipped.
2. `reindex_switch` copies the new vectors over the live ones in ONE transaction and empties the
   side table; rows written by the API during the build are caught up first.

A model of another width first needs `vector_columns_resize`: every column holding the model's
vectors becomes `vector(N)` (the old vectors cannot be converted and are dropped), then the same
build and switch fill them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from django.db import models, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone
from pgvector.django import HalfVectorField
from psycopg import sql

from memory_app.db import column_indexes, execute, vector_column_dimensions
from memory_app.embeddings.active import active_model_forget
from memory_app.models import (
    ActiveEmbeddingModel,
    EmbeddingCacheEntry,
    Memory,
    MemoryTokens,
    Procedure,
    ReindexVector,
    Tenant,
)
from memory_app.services.rows.tokens import TOKEN_FIELDS, memory_tokens_rows, token_conflict_key

logger = logging.getLogger(__name__)


def _scoped(tenant: Tenant | None) -> QuerySet[Memory]:
    qs = Memory.objects.all()
    return qs if tenant is None else qs.filter(tenant=tenant)


def reindex_pending(*, tenant: Tenant | None, model: str) -> QuerySet[Memory]:
    """Rows that still need a vector under `model` (none built yet for this model and text)."""
    built = ReindexVector.objects.filter(memory=OuterRef("pk"), model=model, text_hash=OuterRef("text_hash"))
    return _scoped(tenant).exclude(embedding_model=model).exclude(Exists(built))


def _batches_by_id(
    pending: Callable[[], QuerySet], fields: tuple[str, ...], batch_size: int
) -> Iterator[list[tuple]]:
    """Batches of `fields` (the primary key first) in id order; each query starts after the last id
    seen, so rows finished by the caller meanwhile are not read again."""
    last = 0
    while True:
        batch = list(pending().filter(pk__gt=last).order_by("pk").values_list(*fields)[:batch_size])
        if not batch:
            return
        yield batch
        last = batch[-1][0]


def reindex_batches(
    *, tenant: Tenant | None, model: str, batch_size: int
) -> Iterator[list[tuple[int, str, str]]]:
    """Batches of (id, text, text_hash) of the memories still to embed."""
    return _batches_by_id(
        lambda: reindex_pending(tenant=tenant, model=model), ("pk", "text", "text_hash"), batch_size
    )


def reindex_build(
    *,
    tenant: Tenant | None,
    model: str,
    embed: Callable[[list[str]], object],
    batch_size: int = 256,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Build the next vectors; returns how many rows were embedded. Each batch commits on its own."""
    done = 0
    for batch in reindex_batches(tenant=tenant, model=model, batch_size=batch_size):
        vectors = np.asarray(embed([text for _, text, _ in batch]), dtype=np.float32)
        with transaction.atomic():
            ReindexVector.objects.bulk_create(
                [
                    ReindexVector(memory_id=pk, embedding=vec, model=model, text_hash=text_hash)
                    for (pk, _, text_hash), vec in zip(batch, vectors, strict=True)
                ],
                update_conflicts=True,
                unique_fields=["memory"],
                update_fields=["embedding", "model", "text_hash", "created_at"],
            )
            _keep_tokens(batch)
        done += len(batch)
        if on_batch:
            on_batch(len(batch))
    return done


def _keep_tokens(batch: list[tuple[int, str, str]]) -> None:
    """The token vectors the embedding's forward pass computed (local provider), per tenant."""
    texts = {pk: text for pk, text, _ in batch}
    by_tenant: dict[int, list[tuple[int, str]]] = {}
    for pk, tenant_id in Memory.objects.filter(pk__in=list(texts)).values_list("pk", "tenant_id"):
        by_tenant.setdefault(tenant_id, []).append((pk, texts[pk]))
    for tenant_id, memories in by_tenant.items():
        rows = memory_tokens_rows(tenant_id=tenant_id, memories=memories)
        if rows:
            MemoryTokens.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=token_conflict_key(), update_fields=TOKEN_FIELDS
            )


@transaction.atomic
def active_model_pin(*, tenant: Tenant | None, current: str) -> None:
    """Before a reindex builds: record the model now live for this scope (if the registry has no row
    for it yet), so processes keep embedding queries and stores with it while their EMBEDDING_MODEL
    already names the next one, until the switch."""
    ActiveEmbeddingModel.objects.get_or_create(tenant=tenant, defaults={"model": current})


@transaction.atomic
def reindex_switch(*, tenant: Tenant | None, model: str) -> int:
    """Make the built vectors live in one transaction, the registry's live model with them (every
    process follows within embeddings/active.ACTIVE_MODEL_CACHE_SECONDS); returns the rows switched."""
    memory, side = Memory._meta.db_table, ReindexVector._meta.db_table
    tenant_sql, params = ("AND m.tenant_id = %s", [model, tenant.pk]) if tenant else ("", [model])
    switched = execute(
        f"UPDATE {memory} AS m SET embedding = n.embedding, embedding_model = n.model "
        f"FROM {side} AS n WHERE n.memory_id = m.id AND n.model = %s "
        f"AND n.text_hash = m.text_hash {tenant_sql}",
        params,
    )
    execute(
        f"DELETE FROM {side} AS n USING {memory} AS m WHERE n.memory_id = m.id "
        f"AND m.embedding_model = n.model {tenant_sql}",
        params[1:],
    )
    ActiveEmbeddingModel.objects.update_or_create(
        tenant=tenant, defaults={"model": model, "switched_at": timezone.now()}
    )
    if tenant is None:  # the tenants' own rows would otherwise keep an older model live for them
        ActiveEmbeddingModel.objects.filter(tenant__isnull=False).delete()
    transaction.on_commit(active_model_forget)
    logger.info("reindex: %d rows now use %s", switched, model)
    return switched


def reindex_procedures(
    *,
    tenant: Tenant | None,
    model: str,
    embed: Callable[[list[str]], object],
    batch_size: int = 256,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Re-embed procedure patterns not yet under `model`, batch by batch, each batch committed.

    Procedures are one row per learned query pattern (thousands, not millions), and the matcher only
    reads rows of the configured model, so they are updated in place rather than through a side
    table: a pattern is unmatched for at most one batch. Rerunning resumes (finished rows carry
    `model`).
    """

    scoped = Procedure.objects.all() if tenant is None else Procedure.objects.filter(tenant=tenant)
    done = 0
    for batch in _batches_by_id(lambda: scoped.exclude(embedding_model=model), ("pk", "pattern"), batch_size):
        vectors = np.asarray(embed([pattern for _, pattern in batch]), dtype=np.float32)
        with transaction.atomic():
            for (pk, _), vector in zip(batch, vectors, strict=True):
                Procedure.objects.filter(pk=pk).update(pattern_embedding=vector, embedding_model=model)
        done += len(batch)
        if on_batch:
            on_batch(len(batch))
    return done


# Every vector column holding the embedding model's vectors: resized together. Not among them: the
# cache's proxy_embedding (the packaged MiniLM's vectors whatever the model, embeddings/cache/near.py)
# and surface_sketch (512 hashed dimensions, embeddings/cache/sketch.py), and the judge's token
# vectors (MiniLM's, stored as bytes in MemoryTokens).
MODEL_VECTOR_COLUMNS: tuple[tuple[type[models.Model], str], ...] = (
    (Memory, "embedding"),
    (ReindexVector, "embedding"),
    (Procedure, "pattern_embedding"),
    (EmbeddingCacheEntry, "embedding"),
)


@dataclass
class ResizeReport:
    before: int | None
    after: int
    indexes: list[str] = field(default_factory=list)
    cache_entries: int = 0
    side_rows: int = 0


def vector_columns_width() -> int | None:
    """The model vector columns' width as the catalog has it now (the memory table's column)."""
    return vector_column_dimensions(Memory._meta.db_table, "embedding")


@transaction.atomic
def vector_columns_resize(*, dimensions: int, model: str) -> ResizeReport:
    """Make every model vector column `vector(dimensions)` (the memory table's `halfvec(dimensions)`) and
    `model` the live one, in one transaction: the indexes on those columns are dropped and built again (on
    empty columns: at once), every stored vector becomes NULL (another width cannot be converted), the
    rows that cannot be NULL (the embedding cache, the reindex side table) are deleted, and the registry
    names `model` for every tenant. Each table is rewritten under an exclusive lock, so reads and writes
    of these tables wait for the commit. Afterwards `reindex_build` and `reindex_switch` (and the
    embedding sweep, for active rows) fill the vectors."""
    report = ResizeReport(before=vector_columns_width(), after=dimensions)
    # ALTER TABLE and CREATE INDEX refuse a table with pending trigger events: the deferred
    # foreign-key checks of rows the caller's transaction wrote.
    execute("SET CONSTRAINTS ALL IMMEDIATE")
    report.side_rows = execute(f"DELETE FROM {ReindexVector._meta.db_table}")
    report.cache_entries = execute(f"DELETE FROM {EmbeddingCacheEntry._meta.db_table}")
    for owner, column in MODEL_VECTOR_COLUMNS:
        table = owner._meta.db_table
        indexes = column_indexes(table, column)
        for name, _ in indexes:
            execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        # The column's own type (the memory table's is halfvec), only the width changes.
        kind = "halfvec" if isinstance(owner._meta.get_field(column), HalfVectorField) else "vector"
        execute(
            sql.SQL("ALTER TABLE {} ALTER COLUMN {} TYPE {}({}) USING NULL").format(
                sql.Identifier(table), sql.Identifier(column), sql.SQL(kind), sql.Literal(int(dimensions))
            )
        )
        for name, definition in indexes:
            execute(definition)
            report.indexes.append(name)
    ActiveEmbeddingModel.objects.update_or_create(
        tenant=None, defaults={"model": model, "switched_at": timezone.now()}
    )
    ActiveEmbeddingModel.objects.filter(tenant__isnull=False).delete()
    # This process at once (its next read sees this transaction), the others within seconds.
    active_model_forget()
    transaction.on_commit(active_model_forget)
    logger.info(
        "reindex: vector columns resized from %s to %d for %s (indexes rebuilt: %s)",
        report.before,
        dimensions,
        model,
        ", ".join(report.indexes),
    )
    return report
