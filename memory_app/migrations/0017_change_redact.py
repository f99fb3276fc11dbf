"""A `redact` change: an erased user's lines removed from another memory's context
(services/store/quotes.py). Only the field's choices change; nothing is written to the database."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0016_active_embedding_model")]

    operations = [
        migrations.AlterField(
            model_name="memorychange",
            name="operation",
            field=models.CharField(
                choices=[("merge", "Merge"), ("supersede", "Supersede"), ("redact", "Redaction")],
                max_length=16,
            ),
        ),
    ]
