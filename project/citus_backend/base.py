from __future__ import annotations

from django.db.backends.postgresql import base, features, operations


class DatabaseFeatures(features.DatabaseFeatures):
    # Read by memory_app.db.citus_mode(): the few statements Citus plans differently take
    # another form there (each says why where it branches).
    is_citus = True
    # The primary keys of distributed tables are (tenant_id, id): PostgreSQL no longer sees the
    # other columns as functionally dependent on `id`, so GROUP BY names every selected column.
    allows_group_by_selected_pks = False


class DatabaseOperations(operations.DatabaseOperations):
    compiler_module = "project.citus_backend.compiler"


class DatabaseWrapper(base.DatabaseWrapper):
    features_class = DatabaseFeatures
    ops_class = DatabaseOperations
