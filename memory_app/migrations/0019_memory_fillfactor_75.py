"""Fill the memory table's heap pages to 75 % instead of 70 % (migration 0012).

Why there is room at all: every read counts an access on the rows it shows (written once a second
by the write-behind thread, services/store/access.py), and an updated row version that fits on its
page is a HOT update: no new entry in any index, the HNSW graph included. 75 % is the fullest fill
that still keeps 2,048 B of each page free, room for one new version of a row up to 2 KB: a row is
about 2 KB (the 384-d vector inline, short texts), so at 70 % a page held two rows, and at 75 % it
holds three when a row is at most 2,032 B (most synthetic rows, about a third of LoCoMo turns) and
two otherwise, each page still with room for one new version. What it gives up: room for a second
new version on a page in the same second (two rows of one page read in one flush: the second
update is not heap-only). Applies to pages written from now on; existing pages get it when the
table is rewritten (docs/OPERATIONS.md).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0018_text_unique_by_hash")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memory_app_memory SET (fillfactor = 75)",
            reverse_sql="ALTER TABLE memory_app_memory SET (fillfactor = 70)",
        ),
    ]
