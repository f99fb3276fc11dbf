"""The shared HNSW index keeps active rows only (see the model's comment).

Database side in SQL rather than RemoveIndex + AddIndex so that a database that dropped the index on
purpose (the compaction benchmark's bulk-loaded tables) is not given a graph over a million rows on
its next migrate; everywhere else the index is rebuilt with the predicate. Note for operators: the
rebuild takes the time of an HNSW build (docs/OPERATIONS.md); searches use exact plans meanwhile.
The build gets SEARCH_INDEX_BUILD_MEMORY_MB of maintenance_work_mem: with PostgreSQL's default
64 MB a graph of a million rows spills out of memory and took 23 minutes here.
"""

import pgvector.django.indexes
from django.db import migrations, models

def _rebuild(predicate: str):  # type: ignore[no-untyped-def]
    """Rebuild memory_embedding_hnsw with `predicate` (forward) or without (backward), if present."""

    def run(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
        from django.conf import settings

        memory = int(settings.SEARCH_INDEX_BUILD_MEMORY_MB)
        schema_editor.execute(f"SET LOCAL maintenance_work_mem = '{memory}MB'")
        schema_editor.execute(f"""
DO $$
BEGIN
    IF to_regclass('memory_embedding_hnsw') IS NOT NULL THEN
        DROP INDEX memory_embedding_hnsw;
        CREATE INDEX memory_embedding_hnsw ON memory_app_memory
            USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)
            {predicate};
    END IF;
END $$;
""")

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("memory_app", "0004_embcache_surface_sketch"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(_rebuild("WHERE status = 'active'"), _rebuild(""))],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name="memory_embedding_hnsw"),
                migrations.AddIndex(
                    model_name="memory",
                    index=pgvector.django.indexes.HnswIndex(
                        condition=models.Q(("status", "active")),
                        ef_construction=64,
                        fields=["embedding"],
                        m=16,
                        name="memory_embedding_hnsw",
                        opclasses=["vector_cosine_ops"],
                    ),
                ),
            ],
        ),
    ]
