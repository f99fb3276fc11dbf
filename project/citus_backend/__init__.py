"""Django's PostgreSQL backend for a Citus coordinator (chosen by project/database.py when the
server at DATABASE_URL has the citus extension): the same backend with one difference, below."""
