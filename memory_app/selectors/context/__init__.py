"""Memory for a prompt: `context_all`, the four kinds for one agent turn (turn.py), and
`memory_context`, facts packed into a token budget (injection.py).

Modules: injection, turn.
"""
