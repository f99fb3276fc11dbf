"""Recompute every memory's `text_hash` with the lossless normalisation (memory_app/text.py).

The old rule dropped every non-word character, so "A+" and "A-" had one hash. The new rule folds
a subset of what the old one folded (case, compatibility forms, whitespace, quote styles, trailing
punctuation), so two texts with equal new hashes already had equal old hashes: two rows that are
both active in one scope had different old hashes and get different new ones, and the partial
unique constraint `memory_active_text_unique` cannot fail here. Should it ever fail (a text whose
NFKC and case folding interact in an unforeseen way), the row keeps its old hash, which no new
text can match, and the migration logs it instead of stopping.

Batches of 2,000 rows in their own transactions (the migration is not atomic), so a large table
is not locked as a whole and an interrupted run simply resumes: rows already done are unchanged.
"""

from __future__ import annotations

import logging

from django.db import IntegrityError, migrations, transaction

logger = logging.getLogger(__name__)
BATCH = 2000


def _update(connection, table: str, ids: list[int], hashes: list[str]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS m SET text_hash = v.h FROM unnest(%s::bigint[], %s::text[]) AS v(id, h) "
            "WHERE m.id = v.id AND m.text_hash <> v.h",
            [ids, hashes],
        )


def recompute(apps, schema_editor) -> None:
    from memory_app.text import normalized_hash

    Memory = apps.get_model("memory_app", "Memory")
    table = Memory._meta.db_table
    connection = schema_editor.connection
    last = 0
    while True:
        rows = list(
            Memory.objects.filter(pk__gt=last).order_by("pk").values_list("pk", "text", "text_hash")[:BATCH]
        )
        if not rows:
            return
        last = rows[-1][0]
        fresh = [(pk, normalized_hash(text), old) for pk, text, old in rows]
        changed = [(pk, new) for pk, new, old in fresh if new != old]
        if not changed:
            continue
        try:
            with transaction.atomic(using=schema_editor.connection.alias):
                _update(connection, table, [c[0] for c in changed], [c[1] for c in changed])
        except IntegrityError:
            for pk, new in changed:
                try:
                    with transaction.atomic(using=schema_editor.connection.alias):
                        _update(connection, table, [pk], [new])
                except IntegrityError:
                    logger.warning("memory %s keeps its old text_hash: its new one is taken in its scope", pk)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memory_app", "0006_drop_redundant_fk_indexes")]

    operations = [migrations.RunPython(recompute, migrations.RunPython.noop, elidable=True)]
