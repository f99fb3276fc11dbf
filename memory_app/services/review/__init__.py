"""The duplicate-review queue: clusters of pairs the judge was unsure of, and their decisions.

Modules: clusters, queue.
"""
