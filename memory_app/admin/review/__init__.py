"""The duplicate-review screens: the queue (admins.py), the cluster page and its decisions
(views.py), word diffs (diffs.py) and the LLM's suggested text (llm.py).

Modules: admins, diffs, llm, views.
"""
