"""Writes of the store path in as few round trips as the work allows.

Why not the ORM call by call there: one ORM query costs ~0.6 ms of Python (building, compiling,
instantiating) against ~0.12 ms for the round trip itself (2-core machine, docs/PERFORMANCE.md),
and a store-time merge made nine of them. The INSERTs here are still compiled by Django's own
`InsertQuery` from model instances, so columns, defaults (`auto_now`) and value conversion stay the
models'; several statements go as one simple query (Django's psycopg cursor binds on the client).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import connection, models
from django.db.models.expressions import RawSQL
from django.db.models.sql import InsertQuery
from pgvector.django import VectorField


def vector_sql(vector: np.ndarray) -> RawSQL:
    """A vector as a text literal: nine significant digits give every float32 back exactly, and
    formatting them takes ~0.1 ms where pgvector's own conversion takes ~0.4 ms."""
    text = ",".join(f"{x:.9g}" for x in np.asarray(vector, dtype=np.float32).tolist())
    return RawSQL("%s::vector", [f"[{text}]"])


def insert_sql(model: type[models.Model], objs: Sequence[models.Model]) -> tuple[str, list[Any]]:
    """One multi-row INSERT of `objs`, as Django's save would write them; the pk column is left to
    its sequence when no row sets one (as bulk_create does). Vectors go as `vector_sql` literals,
    each array formatted once even when two rows share it (a merge result keeps the incoming
    memory's vector); the objects are left as they were."""
    with_pk = any(obj.pk is not None for obj in objs)
    fields = [
        f for f in model._meta.local_concrete_fields if not f.generated and (with_pk or not f.primary_key)
    ]
    literals: dict[int, RawSQL] = {}
    arrays = []
    for obj in objs:
        for field in fields:
            value = getattr(obj, field.attname)
            if isinstance(field, VectorField) and isinstance(value, np.ndarray):
                arrays.append((obj, field.attname, value))
                if id(value) not in literals:
                    literals[id(value)] = vector_sql(value)
                setattr(obj, field.attname, literals[id(value)])
    try:
        query = InsertQuery(model)
        query.insert_values(fields, list(objs))
        [(sql, params)] = query.get_compiler(connection=connection).as_sql()
    finally:
        for obj, attname, value in arrays:
            setattr(obj, attname, value)
    return sql, list(params)


def execute_all(statements: Sequence[tuple[str, Sequence[Any]]]) -> list[tuple[Any, ...]]:
    """Run the statements in order in one round trip (inside the caller's transaction); the rows of
    the last one that returns any."""
    sql = ";\n".join(s for s, _ in statements)
    params = [p for _, statement_params in statements for p in statement_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows: list[tuple[Any, ...]] = []
        while True:
            if cursor.description is not None:
                rows = cursor.fetchall()
            if not cursor.nextset():
                return rows


def mark_saved(obj: models.Model) -> models.Model:
    """An instance written here behaves as one the ORM saved (FK assignment, refresh, save)."""
    obj._state.adding = False
    obj._state.db = connection.alias
    return obj
