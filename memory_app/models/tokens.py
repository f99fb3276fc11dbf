from __future__ import annotations

from django.db import models


class MemoryTokens(models.Model):
    """The content-word vectors of a memory's text, kept so the relation judge never runs the token
    model again for a stored text (judge/signals/alignment.py: word alignment).

    Only what cannot be recomputed without the model is stored: the vectors, int8 codes with a
    float16 scale per word (`alignment.tokens_bytes`: 386 bytes a word, a quarter of float32's).
    The stems and name flags come from the text itself (`alignment.spelled`). A row whose
    `text_digest` is not the SHA-256 of the memory's current text, whose `words` is not the text's
    count of content words, or whose `vectors` are not of that count's size (a row of the float16
    form written before migration 0013) is stale and ignored (the judge then computes the vectors).

    The foreign key to the memory is declared in the database with ON DELETE CASCADE (migration
    0011) rather than emulated by Django: every delete path of memories (forgetting, the expiry
    purge, the admin) then removes the rows without a statement of its own.
    """

    memory = models.OneToOneField(
        "memory_app.Memory",
        on_delete=models.DO_NOTHING,
        primary_key=True,
        related_name="+",
        db_constraint=False,
    )
    tenant = models.ForeignKey(
        "memory_app.Tenant",
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,  # memorytokens_tenant_memory_idx leads with it
    )
    text_digest = models.BinaryField(max_length=32, help_text="SHA-256 of the exact text")
    words = models.PositiveSmallIntegerField(help_text="content words of the text (rows of vectors)")
    vectors = models.BinaryField(help_text="words float16 scales, then int8 codes, row-major, words x 384")
    # The text's numbers, names and content words as the fact check reads them (judge/facts.py): a
    # search's collapse reads ~30 rows' texts, and reading them anew was most of its time at 100 k.
    # Marked with its rules' version and the text's digest; any other is read again. Here rather
    # than in the memory row: ~85 more bytes there left room for four rows a heap page, not five.
    fact_reading = models.TextField(blank=True, default="", db_default="")

    class Meta:
        indexes = [
            # The judge's bulk read `WHERE tenant_id = %s AND memory_id = ANY(%s)` (the primary key
            # serves it today; on Citus the key becomes (tenant_id, memory_id)), and the tenant's
            # deletion (`WHERE tenant_id IN ...`).
            models.Index(fields=["tenant", "memory"], name="memorytokens_tenant_memory_idx"),
        ]

    def __str__(self) -> str:
        return f"token vectors of memory {self.memory_id}"
