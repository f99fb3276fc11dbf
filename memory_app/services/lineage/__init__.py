"""Merge, supersede and undo: nothing is destroyed (changes.py), in two round trips (sql.py); the
pairs a person kept apart (apart.py).

Modules: apart, changes, sql.
"""
