"""The active-text unique constraint leads with (tenant, text_hash), so it also serves the embedding
cache's lookup of a stored text's vector (embeddings/cache/lookup.py): a memory the store path
inserts gets no embedding cache row of its own, its row answers for its text. Same columns, same
size; the index is rebuilt once (0.3 s at 100 k memories in bench/storage.py; writes wait for it).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0017_change_redact")]

    operations = [
        migrations.RemoveConstraint(model_name="memory", name="memory_active_text_unique"),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status", "active")),
                fields=("tenant", "text_hash", "user_id", "namespace", "kind"),
                name="memory_active_text_unique",
            ),
        ),
    ]
