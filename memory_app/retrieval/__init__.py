"""Pure ranking functions on numpy arrays and plain data: no database, no Django settings.

fusion (RRF, weighted), decay (half-life, ACE), clustering (DBSCAN on cosine, near-duplicate
groups), mmr, packing (token budget), lexical (BM25 over lexeme counts).
"""
