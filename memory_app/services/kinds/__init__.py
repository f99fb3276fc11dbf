"""The other kinds of memory: short-term sessions, procedures, knowledge, conversation ingest.

Modules: interactions, knowledge, procedures, sessions.
"""
