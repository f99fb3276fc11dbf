"""The judge's word vectors are kept as int8 codes with a float16 scale per word (386 bytes a word,
768 before). Rows of the float16 form stay until rewritten: every reader ignores them (their size
does not fit their word count), so the judge computes those texts' vectors when it meets them, and
`manage.py reindex --tokens --apply` rewrites them in the background (docs/OPERATIONS.md)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0014_session_window")]

    operations = [
        migrations.AlterField(
            model_name="memorytokens",
            name="vectors",
            field=models.BinaryField(help_text="words float16 scales, then int8 codes, row-major, words x 384"),
        ),
    ]
