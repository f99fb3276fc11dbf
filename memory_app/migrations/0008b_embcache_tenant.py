"""The embedding cache and its counters become private per tenant.

Rows get a tenant, and their digests become HMACs under a per-tenant key (embeddings/cache/keys.py)
over the lossless exact and normalised forms (memory_app/text.py). Old rows carry an unsalted
SHA-256 of the raw text and a normalised digest of the old, lossy rule, and no tenant: they cannot
stay as they are. A row whose text is still some memory's text is copied to every tenant holding
that text, re-keyed (so no stored memory is re-embedded after the upgrade); every old row is then
deleted, which also drops the digests of deleted texts and of search queries. The counters already
counted stay as service-wide rows (tenant NULL).
"""

from __future__ import annotations

import hashlib

import django.db.models.deletion
from django.db import migrations, models

BATCH = 2000


def rekey(apps, schema_editor) -> None:
    from memory_app.embeddings.cache.keys import CacheKeys

    Memory = apps.get_model("memory_app", "Memory")
    Entry = apps.get_model("memory_app", "EmbeddingCacheEntry")
    table = Entry._meta.db_table
    keys: dict[int, CacheKeys] = {}
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {table})")
        if not cursor.fetchone()[0]:
            return
        last = 0
        while True:
            rows = list(
                Memory.objects.filter(pk__gt=last)
                .order_by("pk")
                .values_list("pk", "tenant_id", "text")[:BATCH]
            )
            if not rows:
                break
            last = rows[-1][0]
            columns: list[list] = [[], [], [], [], []]
            for _, tenant_id, text in rows:
                key = keys.setdefault(tenant_id, CacheKeys.of(tenant_id))
                values = (
                    tenant_id,
                    hashlib.sha256(text.encode("utf-8")).hexdigest(),
                    key.exact(text),
                    key.normalized(text),
                    key.skeleton(text),
                )
                for column, value in zip(columns, values, strict=True):
                    column.append(value)
            cursor.execute(
                f"INSERT INTO {table} (tenant_id, model, dimensions, content_hash, normalized_hash,"
                " skeleton_hash, embedding, proxy_embedding, surface_sketch, token_count, created_at,"
                " last_hit_at, hit_count) "
                "SELECT v.tenant_id, e.model, e.dimensions, v.chash, v.nhash, v.skel, e.embedding,"
                " e.proxy_embedding, e.surface_sketch, e.token_count, e.created_at, e.last_hit_at, 0 "
                "FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[])"
                " AS v(tenant_id, legacy, chash, nhash, skel) "
                f"JOIN {table} e ON e.tenant_id IS NULL AND e.content_hash = v.legacy "
                "ON CONFLICT DO NOTHING",
                columns,
            )
        cursor.execute(f"DELETE FROM {table} WHERE tenant_id IS NULL")


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0008_text_hash_lossless")]

    operations = [
        migrations.RemoveConstraint(model_name="embeddingcacheentry", name="embcache_model_hash_unique"),
        migrations.RemoveConstraint(model_name="embeddingcachestats", name="embstats_model_unique"),
        migrations.RemoveIndex(model_name="embeddingcacheentry", name="embcache_model_norm_idx"),
        migrations.AddField(
            model_name="embeddingcacheentry",
            name="skeleton_hash",
            field=models.CharField(
                blank=True,
                db_default="",
                help_text="tenant-keyed HMAC of the identity skeleton",
                max_length=64,
            ),
        ),
        migrations.AddField(
            model_name="embeddingcacheentry",
            name="tenant",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="memory_app.tenant",
            ),
        ),
        migrations.AddField(
            model_name="embeddingcachestats",
            name="tenant",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="memory_app.tenant",
            ),
        ),
        migrations.AlterField(
            model_name="embeddingcacheentry",
            name="content_hash",
            field=models.CharField(help_text="tenant-keyed HMAC of the exact text", max_length=64),
        ),
        migrations.AlterField(
            model_name="embeddingcacheentry",
            name="normalized_hash",
            field=models.CharField(help_text="tenant-keyed HMAC of the normalised text", max_length=64),
        ),
        migrations.RunPython(rekey, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="embeddingcacheentry",
            index=models.Index(
                fields=["tenant", "model", "normalized_hash"], name="embcache_tenant_norm_idx"
            ),
        ),
        migrations.AddConstraint(
            model_name="embeddingcacheentry",
            constraint=models.UniqueConstraint(
                fields=("tenant", "model", "content_hash"),
                name="embcache_tenant_hash_unique",
                nulls_distinct=False,
            ),
        ),
        migrations.AddConstraint(
            model_name="embeddingcachestats",
            constraint=models.UniqueConstraint(
                fields=("tenant", "model"), name="embstats_tenant_model_unique", nulls_distinct=False
            ),
        ),
    ]
