"""Writing the fact readings of token rows written without one (`manage.py reindex --readings`)."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from memory_app.db import execute
from memory_app.judge.facts import reading_encode
from memory_app.models import Tenant
from memory_app.selectors.store.readings import memory_readings_missing


def memory_readings_fill(
    *, tenant: Tenant | None, batch_size: int = 500, on_batch: Callable[[int], None] | None = None
) -> int:
    """Read the text of every memory whose token row holds no reading of the current rules and keep
    it there, batch by batch, each committed on its own (an interrupted run resumes where it
    stopped). Nothing of the memory itself changes."""
    done = 0
    for batch in memory_readings_missing(tenant=tenant, batch_size=batch_size):
        by_tenant: dict[int, list[tuple[int, str]]] = {}
        for pk, tenant_id, text in batch:
            by_tenant.setdefault(tenant_id, []).append((pk, reading_encode(text)))
        with transaction.atomic():
            for tenant_id, readings in by_tenant.items():
                # One tenant's rows at a time: on Citus, a statement on the tenant's one shard.
                execute(
                    "UPDATE memory_app_memorytokens t SET fact_reading = r.reading "
                    "FROM unnest(%s::bigint[], %s::text[]) AS r(id, reading) "
                    "WHERE t.tenant_id = %s AND t.memory_id = r.id",
                    [[pk for pk, _ in readings], [reading for _, reading in readings], tenant_id],
                )
        done += len(batch)
        if on_batch:
            on_batch(len(batch))
    return done
