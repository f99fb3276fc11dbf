"""The memory table's vectors as float16 (pgvector `halfvec`): 768 B a 384-d vector instead of 1,536,
in the row and in every HNSW graph over it (memory_embedding_hnsw and the per-scope partial indexes
of services/maintenance/search_indexes.py).

Why no decision moves: every vector is rounded to float16 where it is made (db.vectors.half_precision,
applied by embeddings.embed_texts_begin and to a vector a caller gives), so a fresh vector and the
stored one it is compared with are the same numbers; with that rounding every dedup decision on both
pair files, the scenarios and the LoCoMo 0-4 stream was the same as with float32 (docs/SCALING.md).
The conversion here rounds the stored vectors the same way (pgvector and numpy both round to
nearest even).

Every index on the column is dropped, the column converted (the table is rewritten under an
exclusive lock), and each index built again as it was, with the halfvec operator class: the time of
an HNSW build (docs/OPERATIONS.md), with SEARCH_INDEX_BUILD_MEMORY_MB of maintenance_work_mem as in
migration 0005. The column keeps its width (a `reindex --resize` may have changed it from 384). The
embedding cache and the reindex side table stay float32 (`vector`): their rows are rounded when read
(embed_texts_begin) or when written into this column.
"""

import pgvector.django.halfvec
import pgvector.django.indexes
from django.db import migrations, models

TABLE = "memory_app_memory"
COLUMN = "embedding"


def _convert(to: str, source: str):  # type: ignore[no-untyped-def]
    """The column to `to` (halfvec or vector) with its indexes rebuilt for it, when it is `source`."""

    def run(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
        from django.conf import settings

        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT format_type(atttypid, NULL), atttypmod FROM pg_attribute "
                "WHERE attrelid = to_regclass(%s) AND attname = %s AND NOT attisdropped",
                [TABLE, COLUMN],
            )
            row = cursor.fetchone()
            if row is None or row[0] != source:
                return
            width = int(row[1])
            cursor.execute(
                "SELECT i.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x "
                "JOIN pg_class i ON i.oid = x.indexrelid "
                "JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY(x.indkey) "
                "WHERE x.indrelid = to_regclass(%s) AND a.attname = %s ORDER BY i.relname",
                [TABLE, COLUMN],
            )
            indexes = cursor.fetchall()
        memory = int(settings.SEARCH_INDEX_BUILD_MEMORY_MB)
        schema_editor.execute(f"SET LOCAL maintenance_work_mem = '{memory}MB'")
        for name, _ in indexes:
            schema_editor.execute(f'DROP INDEX "{name}"')
        typed = f"{to}({width})" if width > 0 else to
        schema_editor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN {COLUMN} TYPE {typed} USING {COLUMN}::{typed}")
        for _, definition in indexes:
            # pg_get_indexdef spells the key as `embedding vector_cosine_ops` (or _l2_, _ip_ ops).
            schema_editor.execute(definition.replace(f"{COLUMN} {source}_", f"{COLUMN} {to}_"))

    return run


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0019_memory_fillfactor_75")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(_convert("halfvec", "vector"), _convert("vector", "halfvec")),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name="memory_embedding_hnsw"),
                migrations.AlterField(
                    model_name="memory",
                    name="embedding",
                    field=pgvector.django.halfvec.HalfVectorField(blank=True, dimensions=384, null=True),
                ),
                migrations.AddIndex(
                    model_name="memory",
                    index=pgvector.django.indexes.HnswIndex(
                        condition=models.Q(("status", "active")),
                        ef_construction=64,
                        fields=["embedding"],
                        m=16,
                        name="memory_embedding_hnsw",
                        opclasses=["halfvec_cosine_ops"],
                    ),
                ),
            ],
        ),
    ]
