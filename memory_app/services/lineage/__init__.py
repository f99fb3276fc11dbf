"""Merge, supersede and undo: nothing is destroyed (changes.py), in two round trips (sql.py).

Modules: changes, sql.
"""
