"""What the benchmark scripts in bench/ share: the environment (benchenv, imported first), each
benchmark's database and data (benchdb, *_data, store_real, tokens_data), the served processes
(served, profiled_wsgi, cpu_sampler)."""

# Importing anything from this package first puts the project on sys.path and sets the bench
# environment's defaults, whatever order a script's imports come in.
from . import benchenv  # noqa: F401
