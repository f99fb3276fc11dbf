"""Reads of the other kinds of memory: `procedure_suggest` (procedures.py), `session_get`,
`session_messages` and `session_find` (sessions.py).

Modules: procedures, sessions.
"""
