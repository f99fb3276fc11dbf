"""Drop FK indexes that other indexes already cover (each was paid on every insert and status change).

Only the indexes go: Django's own AlterField would also drop and re-add each foreign key, which
re-validates it under an exclusive lock (a full scan of a large memory table), so the database side
is plain DROP INDEX and the state side records db_index=False.
"""

import django.db.models.deletion
from django.db import migrations, models

# (index, table, column): each is covered by the named index in the model's comment.
REDUNDANT = [
    ("memory_app_clustermember_cluster_id_fef38c64", "memory_app_clustermember", "cluster_id"),
    ("memory_app_clustermember_memory_id_f80cb79b", "memory_app_clustermember", "memory_id"),
    ("memory_app_duplicatecluster_tenant_id_da3c78c2", "memory_app_duplicatecluster", "tenant_id"),
    ("memory_app_keptapartpair_memory_low_id_761319b1", "memory_app_keptapartpair", "memory_low_id"),
    ("memory_app_memory_tenant_id_e8458118", "memory_app_memory", "tenant_id"),
    ("memory_app_memorychange_tenant_id_ce87823f", "memory_app_memorychange", "tenant_id"),
    ("memory_app_memorychangesource_change_id_4293eabc", "memory_app_memorychangesource", "change_id"),
    ("memory_app_memorychangesource_memory_id_8f7e2622", "memory_app_memorychangesource", "memory_id"),
]


class Migration(migrations.Migration):

    dependencies = [
        ('memory_app', '0005_hnsw_active_rows_only'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{name}" ON "{table}" ("{column}")',
                )
                for name, table, column in REDUNDANT
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='clustermember',
                    name='cluster',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='members', to='memory_app.duplicatecluster'),
                ),
                migrations.AlterField(
                    model_name='clustermember',
                    name='memory',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='cluster_memberships', to='memory_app.memory'),
                ),
                migrations.AlterField(
                    model_name='duplicatecluster',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='duplicate_clusters', to='memory_app.tenant'),
                ),
                migrations.AlterField(
                    model_name='keptapartpair',
                    name='memory_low',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memory_app.memory'),
                ),
                migrations.AlterField(
                    model_name='memory',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='memories', to='memory_app.tenant'),
                ),
                migrations.AlterField(
                    model_name='memorychange',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='memory_changes', to='memory_app.tenant'),
                ),
                migrations.AlterField(
                    model_name='memorychangesource',
                    name='change',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='sources', to='memory_app.memorychange'),
                ),
                migrations.AlterField(
                    model_name='memorychangesource',
                    name='memory',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='source_of', to='memory_app.memory'),
                ),
            ],
        ),
    ]
