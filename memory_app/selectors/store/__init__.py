"""Reads of the write path: `scope_neighbours`, the store-time candidates (neighbours.py), and
`memory_tokens_source`, the stored token vectors the judge reads (tokens.py).

Modules: neighbours, tokens.
"""
