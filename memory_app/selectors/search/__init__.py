"""Search: `memory_search` (query.py) fuses `vector_candidates` and `fulltext_candidates`
(candidates.py) with `bm25_candidates` (lexical.py), under `resolve_options` (options.py) and the
`SearchFilters` contract (types.py).

Modules: candidates, lexical, options, query, types.
"""
