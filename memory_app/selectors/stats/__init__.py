"""Counts and figures: `stats_get` for an agent (counts.py), `memory_stats` and `storage_stats` for
operators (ops.py), the admin dashboard's series (dashboard.py), `embedding_stats` (embeddings.py).

Modules: counts, dashboard, embeddings, ops.
"""
