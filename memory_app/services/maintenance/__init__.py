"""Background work: maintenance jobs, compaction, expiry, HNSW and per-scope indexes,
reindexing to another embedding model, the periodic schedule.

Modules: compaction, expiry, indexes, jobs, reindex, schedule, search_indexes.
"""
