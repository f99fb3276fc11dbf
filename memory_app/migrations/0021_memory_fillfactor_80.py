"""Fill the memory table's heap pages to 80 % instead of 75 % (migration 0019), now that a row is
about 1.25 KB (the vector as halfvec, migration 0020) instead of 2 KB.

The rule of 0019 stays: the fullest fill that keeps room on each page for one new version of a row,
so counting an access (services/store/access.py) is a heap-only update (no new entry in any index,
the HNSW graph included). At 75 % a page held four rows of 1.25 KB (5,000 B; a fifth would pass
6,144 B) and kept 3 KB free, room for two new versions; at 80 % (6,553 B) it holds five (about
6,300 B) and keeps at least 1,638 B free, room for one new version of a row up to 1.6 KB (rows of
longer texts: four to a page, with more room). Per memory the heap goes from 2,048 B to about
1,640 B at 100 k synthetic rows (docs/SCALING.md). Applies to pages written from now on; existing
pages get it when the table is rewritten (docs/OPERATIONS.md).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0020_memory_embedding_halfvec")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memory_app_memory SET (fillfactor = 80)",
            reverse_sql="ALTER TABLE memory_app_memory SET (fillfactor = 75)",
        ),
    ]
