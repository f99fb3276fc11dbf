"""The one place for PostgreSQL and pgvector specifics.

Services and selectors write their own SQL (it is their query); every building block underneath
comes from here: how a vector becomes a literal, how HNSW settings are scoped, how an advisory lock
is taken, how a capped count, an index's validity and the planner's element statistics are read,
and how statements reach the server; `field__any=[...]` (lookups.py) filters on a list with one
array parameter.
"""

from memory_app.db.citus import citus_mode
from memory_app.db.counts import LargeScopes, MidScopes, count_up_to
from memory_app.db.indexes import IndexInfo, column_indexes, hnsw_indexes, index_valid
from memory_app.db.locks import advisory_lock_key, advisory_xact_lock
from memory_app.db.lookups import AnyOf
from memory_app.db.pgsettings import (
    fetch_all_with,
    hnsw_settings,
    local_settings,
    session_setting,
    set_local,
    set_local_sql,
)
from memory_app.db.queries import (
    checked_by_first_statement,
    copy_out,
    execute,
    fetch_all,
    fetch_all_prepared,
    fetch_one,
)
from memory_app.db.statements import (
    assert_client_side_binding,
    execute_all,
    insert_sql,
    mark_saved,
    models_from_rows,
)
from memory_app.db.statistics import ElementFrequencies, element_frequencies
from memory_app.db.vectors import (
    half_precision,
    halfvec_binary_size,
    halfvec_from_binary,
    halfvec_matrix,
    halfvecs_from_binary,
    vector_column_dimensions,
    vector_literal,
    vector_sql,
)

__all__ = [
    "AnyOf",
    "ElementFrequencies",
    "IndexInfo",
    "LargeScopes",
    "MidScopes",
    "advisory_lock_key",
    "advisory_xact_lock",
    "assert_client_side_binding",
    "checked_by_first_statement",
    "citus_mode",
    "column_indexes",
    "copy_out",
    "count_up_to",
    "element_frequencies",
    "execute",
    "execute_all",
    "fetch_all",
    "fetch_all_prepared",
    "fetch_all_with",
    "fetch_one",
    "half_precision",
    "halfvec_binary_size",
    "halfvec_from_binary",
    "halfvec_matrix",
    "halfvecs_from_binary",
    "hnsw_indexes",
    "hnsw_settings",
    "index_valid",
    "insert_sql",
    "local_settings",
    "mark_saved",
    "models_from_rows",
    "session_setting",
    "set_local",
    "set_local_sql",
    "vector_column_dimensions",
    "vector_literal",
    "vector_sql",
]
