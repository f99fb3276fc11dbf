"""Re-embed every memory with the configured embedding model, beside the live vectors."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Count
from tqdm import tqdm

from memory_app.embeddings import (
    configured_model_name,
    embed_texts_begin,
    embedding_model_name,
    model_width,
)
from memory_app.models import EmbeddingCacheEntry, Memory, Procedure, ReindexVector
from memory_app.selectors.store.readings import memory_readings_missing_count
from memory_app.selectors.store.tokens import memory_tokens_missing_count, memory_tokens_stale_count
from memory_app.services.maintenance.reindex import (
    active_model_pin,
    reindex_build,
    reindex_pending,
    reindex_procedures,
    reindex_switch,
    vector_columns_resize,
    vector_columns_width,
)
from memory_app.services.rows.readings import memory_readings_fill
from memory_app.services.rows.tokens import memory_tokens_fill

from ._ops import add_tenant_argument, tenant_or_none


class Command(BaseCommand):
    help = (
        "Re-embed every memory (any status) and every procedure pattern with the configured model "
        "(EMBEDDING_PROVIDER / EMBEDDING_MODEL of this process: a sentence-transformers directory or "
        "an installed model package). New memory vectors are built in a side table while searches "
        "and stores keep using the live model; at the end one transaction switches the vectors and "
        "the live model, which running processes follow within seconds, then procedure patterns are "
        "re-embedded in place. An interrupted run resumes where it stopped. A model whose vectors have "
        "another width than the vector columns needs --apply --resize: the columns become the "
        "model's width first (every stored vector is dropped; vector search answers from full text "
        "only until the re-embedding finishes). Dry run by default: prints what it would do; "
        "--apply acts."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("--apply", action="store_true", help="build and switch (default: dry run)")
        parser.add_argument("--batch-size", type=int, default=256, help="texts per embedding call")
        parser.add_argument("--no-switch", action="store_true", help="build the new vectors only")
        parser.add_argument(
            "--resize",
            action="store_true",
            help="with --apply, when the model's vectors have another width than the vector columns: "
            "resize every model vector column to it (all tenants; the old vectors are dropped, the "
            "embedding cache emptied), make the model live, then re-embed",
        )
        parser.add_argument(
            "--tokens",
            action="store_true",
            help="only compute the judge's stored token vectors of active memories that have none, "
            "one of an older text, or one whose word count the judge's current word rules no longer "
            "give or whose vectors are of an older stored form (after an upgrade that changed "
            "them), with the local model; nothing else is touched",
        )

        parser.add_argument(
            "--readings",
            action="store_true",
            help="only read the texts of memories whose token row holds no fact reading of the "
            "current rules (written before it, loaded without one, or kept by an older version) "
            "and keep it there: no model run, nothing else is touched",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_or_none(options["tenant"])
        if options["tokens"]:
            self._tokens(tenant, apply=options["apply"])
            return
        if options["readings"]:
            self._readings(tenant, apply=options["apply"])
            return
        model = configured_model_name()
        scope = Memory.objects.all() if tenant is None else Memory.objects.filter(tenant=tenant)
        pending = reindex_pending(tenant=tenant, model=model).count()
        built = ReindexVector.objects.filter(model=model, memory__in=scope).count()
        current = scope.filter(embedding_model=model).count()
        procedures = Procedure.objects.all() if tenant is None else Procedure.objects.filter(tenant=tenant)
        procedures_pending = procedures.exclude(embedding_model=model).count()
        self.stdout.write(
            f"target model {model}: {current} memories already use it, {built} new vectors built, "
            f"{pending} to embed; {procedures_pending} procedure patterns to embed"
        )
        columns, width = vector_columns_width(), model_width(model)
        resize = columns != width
        if resize:
            self._resize_plan(columns, width, tenant=tenant)
        if not options["apply"]:
            self.stdout.write("dry run: nothing written (use --apply" + (" --resize)" if resize else ")"))
            return
        if resize:
            if not options["resize"]:
                raise CommandError(
                    f"{model} gives {width}-dimensional vectors and the vector columns hold {columns}: "
                    "rerun with --apply --resize (docs/OPERATIONS.md, 'A model of another size')"
                )
            report = vector_columns_resize(dimensions=width, model=model)
            self.stdout.write(
                f"resized the vector columns from {report.before} to {report.after} "
                f"(indexes rebuilt: {', '.join(report.indexes)}; {report.cache_entries} cache entries "
                f"and {report.side_rows} side-table vectors dropped); {model} is live"
            )
        # Searches and stores keep the live model until the switch, whatever this process's setting.
        # Without a registry row the live model is the setting here, i.e. the target: the rows'
        # most common label is what the other processes still use.
        live = embedding_model_name(tenant)
        if live == model:
            labels = scope.exclude(embedding_model="").values("embedding_model").annotate(n=Count("id"))
            top = labels.order_by("-n").values_list("embedding_model", flat=True).first()
            live = top or model
        active_model_pin(tenant=tenant, current=live)

        # One tenant's texts go through its private cache; an all-tenant run uses the tool partition.
        # No cache rows are written: once the model is switched the memories keep these vectors and
        # answer the cache for their texts (embeddings/cache/lookup.py).
        def embed(texts: list[str]) -> np.ndarray:
            return embed_texts_begin(texts, tenant=tenant, model=model).finish(held=texts)

        with tqdm(total=pending, desc="embedding", unit="memory", disable=None) as bar:
            done = reindex_build(
                tenant=tenant,
                model=model,
                embed=embed,
                batch_size=options["batch_size"],
                on_batch=bar.update,
            )
        # Rows the API wrote meanwhile with the old model: one more pass before switching.
        done += reindex_build(tenant=tenant, model=model, embed=embed, batch_size=options["batch_size"])
        self.stdout.write(f"embedded {done} memories with {model}")
        if options["no_switch"]:
            self.stdout.write("vectors built; run again without --no-switch to make them live")
            return
        switched = reindex_switch(tenant=tenant, model=model)
        self.stdout.write(f"switched {switched} memories to {model}")
        with tqdm(total=procedures_pending, desc="procedures", unit="pattern", disable=None) as bar:
            patterns = reindex_procedures(
                tenant=tenant,
                model=model,
                embed=embed,
                batch_size=options["batch_size"],
                on_batch=bar.update,
            )
        self.stdout.write(
            f"re-embedded {patterns} procedure patterns; consider `manage.py rebuild_indexes --apply`"
        )

    def _resize_plan(self, columns: int | None, width: int, *, tenant: Any) -> None:
        if tenant is not None:
            raise CommandError(
                f"the model's vectors are {width}-dimensional and the vector columns {columns}: a "
                "resize changes every tenant's columns, so it runs without --tenant"
            )
        self.stdout.write(
            f"the vector columns will be resized from {columns} to {width} (--apply --resize): every "
            "stored vector is dropped (another width cannot be converted), "
            f"{EmbeddingCacheEntry.objects.count()} embedding cache entries are deleted, each table "
            "is rewritten under an exclusive lock, and vector search answers from full text only "
            "until the re-embedding below finishes"
        )

    def _tokens(self, tenant: Any, *, apply: bool) -> None:
        missing = memory_tokens_missing_count(tenant=tenant)
        # Reads every stored row's text and applies the word rules in Python (no model run).
        stale = memory_tokens_stale_count(tenant=tenant)
        self.stdout.write(
            f"{missing} active memories without stored token vectors of their text, {stale} whose "
            "stored word count the judge's current word rules no longer give or stored form is older"
        )
        if not apply:
            self.stdout.write("dry run: nothing written (use --apply: compute them)")
            return
        with tqdm(total=missing + stale, desc="token vectors", unit="memory", disable=None) as bar:
            done = memory_tokens_fill(tenant=tenant, on_batch=bar.update)
        self.stdout.write(f"stored token vectors of {done} memories")

    def _readings(self, tenant: Any, *, apply: bool) -> None:
        missing = memory_readings_missing_count(tenant=tenant)
        self.stdout.write(f"{missing} token rows without a fact reading of the current rules")
        if not apply:
            self.stdout.write("dry run: nothing written (use --apply: read and keep them)")
            return
        with tqdm(total=missing, desc="fact readings", unit="memory", disable=None) as bar:
            done = memory_readings_fill(tenant=tenant, on_batch=bar.update)
        self.stdout.write(f"kept the fact readings of {done} memories")
