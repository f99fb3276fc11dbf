"""Vectors as pgvector text literals, and back from pgvector's binary form."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from django.db.models.expressions import RawSQL

from memory_app.db.queries import fetch_one

# The width the migrations give the vector columns (vector(384); the memory table's halfvec(384)):
# the packaged MiniLM's output. The models' vector fields keep it so that the migrations' state
# stays what the migrations built (`makemigrations --check` clean); a resize is an operation on the
# live database, not a schema version. The running service never validates against it: `manage.py
# reindex --apply --resize` (services/maintenance/reindex.vector_columns_resize) makes the columns
# follow the model, and processes read their width from the catalog
# (embeddings/active.vector_dimensions).
DIMENSIONS = 384


def vector_column_dimensions(table: str, column: str) -> int | None:
    """The declared size of a vector column as the catalog has it now (pgvector keeps it as the
    column's type modifier); None for a column without one or no such column. Read where the
    caller's reads run, as the registry it is cached with (a replica replays a resize with it)."""
    row = fetch_one(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = %s "
        "AND NOT attisdropped",
        [table, column],
    )
    return int(row[0]) if row and row[0] > 0 else None


def vector_literal(vector: np.ndarray | Sequence[float]) -> str:
    """`[x1,x2,...]` with nine significant digits: the fewest that give every float32 back exactly
    (pgvector parses with strtof), and formatting them takes ~0.1 ms where pgvector's own
    conversion takes ~0.4 ms. Rejects what pgvector would reject later with a less clear error."""
    values = np.asarray(vector, dtype=np.float32).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("a vector must be non-empty and finite")
    return _formatted(values.tobytes())


@lru_cache(maxsize=64)
def _formatted(raw: bytes) -> str:
    # A search sends its query's vector in three statements (candidates, ranking, a fallback):
    # formatted once.
    return "[" + ",".join(f"{x:.9g}" for x in np.frombuffer(raw, dtype=np.float32).tolist()) + "]"


def vector_sql(vector: np.ndarray | Sequence[float], *, half: bool = False) -> RawSQL:
    """The literal as a query expression (an INSERT value or an annotation); `half` for a halfvec
    column (the memory table's)."""
    return RawSQL("%s::halfvec" if half else "%s::vector", [vector_literal(vector)])


def half_precision(vectors: np.ndarray) -> np.ndarray:
    """float32 rows holding the float16 values the memory table's halfvec column stores. Applied where
    vectors are made (embeddings.embed_texts_begin, a store's given vector), so a fresh vector and
    the stored one it is compared with are the same numbers, never one rounded and one not."""
    return np.asarray(vectors, dtype=np.float32).astype(np.float16).astype(np.float32)


def halfvec_from_binary(raw: bytes | memoryview | None) -> np.ndarray | None:
    """A halfvec read in pgvector's binary form (`halfvec_send(column)`), as float32 rows of its
    float16 values: reading 150 vectors that way costs a fraction of parsing their text form. None
    stays None (a row without a vector)."""
    if raw is None:
        return None
    return np.frombuffer(bytes(raw), dtype=_HALF, offset=_HALF_HEADER).astype(np.float32)


def halfvecs_from_binary(raws: Sequence[bytes | memoryview | None]) -> list[np.ndarray | None]:
    """`halfvec_from_binary` of each of `raws`. When all are vectors of one size, they are decoded
    as one array, float32 rows of one matrix (each row a view of it): one at a time, a search's
    ~30 cost ~0.5 ms of the GIL. Otherwise (a row without a vector, a model of another width)
    each is decoded alone."""
    if not raws:
        return []
    if any(raw is None for raw in raws) or len({len(raw) for raw in raws if raw is not None}) > 1:
        return [halfvec_from_binary(raw) for raw in raws]
    return list(halfvec_matrix([raw for raw in raws if raw is not None]))


def halfvec_matrix(raws: Sequence[bytes | memoryview]) -> np.ndarray:
    """Halfvecs of one width in pgvector's binary form, as the float32 rows of one matrix."""
    joined = b"".join(bytes(raw)[_HALF_HEADER:] for raw in raws)
    return np.frombuffer(joined, dtype=_HALF).astype(np.float32).reshape(len(raws), -1)


def halfvec_binary_size(dimensions: int) -> int:
    """The length of a halfvec of `dimensions` in pgvector's binary form."""
    return _HALF_HEADER + 2 * dimensions


# halfvec_send's form: int16 dimension, int16 unused, then big-endian float16 values.
_HALF_HEADER = 4
_HALF = ">f2"
