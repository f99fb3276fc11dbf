"""Leave room on each heap page of the memory table for an updated row version.

Every search and /context/all call counts an access on the rows it returns (`memory_touch`: two
columns of up to a few hundred rows). A row is about 2 KB (the 384-d vector is stored inline), so a
page filled to 100 % has no room for the new version; PostgreSQL then writes it to another page and
adds an entry for it to every index, the HNSW graph included (measured at 100 k memories: two
thirds of these updates were not in place, and the access count cost 20-65 ms of a /context/all
call). With 30 % of each page free, one new version fits and the update is HOT (heap-only: no index
entry), since no index covers the access columns. The cost is about 0.9 KB of heap per memory.
Applies to pages written from now on; existing pages get it when the table is rewritten
(docs/OPERATIONS.md).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0011_memory_tokens")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memory_app_memory SET (fillfactor = 70)",
            reverse_sql="ALTER TABLE memory_app_memory RESET (fillfactor)",
        ),
    ]
