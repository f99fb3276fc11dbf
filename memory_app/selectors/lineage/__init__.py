"""Lineage reads: `memory_lineage` for the API (graph.py) and `memory_lineage_tree`, the admin's
two trees of rows (tree.py).

Modules: graph, tree.
"""
