"""The row helpers every writer of memories builds on: the scope lock (locks), plain inserts and
edits of memory rows (memories) and the judge's token rows (tokens). Below both the write path
(services/store) and lineage (services/lineage), which call each other's services only one way:
store -> lineage.

Modules: locks, memories, tokens.
"""
