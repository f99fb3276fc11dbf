"""Several statements in one round trip, and rows written or read without the ORM's per-call cost.

Why not the ORM call by call on the store path: one ORM query costs ~0.6 ms of Python (building,
compiling, instantiating) against ~0.12 ms for the round trip itself (2-core machine,
docs/PERFORMANCE.md), and a store-time merge made nine of them. The INSERTs here are still compiled
by Django's own `InsertQuery` from model instances, so columns, defaults (`auto_now`) and value
conversion stay the models'.

Django's private API used here, each pinned by a test in tests/ops/test_db_layer.py or the lineage
tests: `InsertQuery`, `Model._state`, `Model.from_db`, `Field.from_db_value`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.models.expressions import RawSQL
from django.db.models.sql import InsertQuery
from pgvector.django import HalfVectorField, VectorField

from memory_app.db.vectors import vector_sql

M = TypeVar("M", bound=models.Model)
Statement = tuple[str, Sequence[Any]]


def assert_client_side_binding(using: str = DEFAULT_DB_ALIAS) -> None:
    """Several statements with parameters go as one simple query only when the client binds the
    parameters (Django's default psycopg cursor, a `ClientCursor`); with
    `OPTIONS={"server_side_binding": True}` PostgreSQL would refuse the joined statement."""
    if connections[using].settings_dict.get("OPTIONS", {}).get("server_side_binding"):
        raise ImproperlyConfigured(
            "memory_app sends several statements in one round trip and needs client-side parameter "
            "binding: remove OPTIONS['server_side_binding'] from the database settings"
        )


def insert_sql(model: type[models.Model], objs: Sequence[models.Model]) -> tuple[str, list[Any]]:
    """One multi-row INSERT of `objs`, as Django's save would write them; the pk column is left to
    its sequence when no row sets one (as bulk_create does). Vectors go as `vector_sql` literals,
    each array formatted once even when two rows share it (a merge result keeps the incoming
    memory's vector); the objects are left as they were."""
    with_pk = any(obj.pk is not None for obj in objs)
    fields = [
        f for f in model._meta.local_concrete_fields if not f.generated and (with_pk or not f.primary_key)
    ]
    literals: dict[tuple[int, bool], RawSQL] = {}
    arrays = []
    for obj in objs:
        for field in fields:
            value = getattr(obj, field.attname)
            if isinstance(field, VectorField | HalfVectorField) and isinstance(value, np.ndarray):
                arrays.append((obj, field.attname, value))
                key = (id(value), isinstance(field, HalfVectorField))
                if key not in literals:
                    literals[key] = vector_sql(value, half=key[1])
                setattr(obj, field.attname, literals[key])
    try:
        query = InsertQuery(model)
        query.insert_values(fields, list(objs))
        [(sql, params)] = query.get_compiler(connection=connection).as_sql()
    finally:
        for obj, attname, value in arrays:
            setattr(obj, attname, value)
    return sql, list(params)


def execute_all(statements: Sequence[Statement], *, using: str = DEFAULT_DB_ALIAS) -> list[tuple[Any, ...]]:
    """Run the statements in order in one round trip (inside the caller's transaction, or as one
    implicit transaction); the rows of the last one that returns a result set."""
    assert_client_side_binding(using)
    sql = ";\n".join(s for s, _ in statements)
    params = [p for _, statement_params in statements for p in statement_params]
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        rows: list[tuple[Any, ...]] = []
        while True:
            if cursor.description is not None:
                rows = cursor.fetchall()
            if not cursor.nextset():
                return rows


def mark_saved(obj: M) -> M:
    """An instance written here behaves as one the ORM saved (FK assignment, refresh, save)."""
    obj._state.adding = False
    obj._state.db = connection.alias
    return obj


def models_from_rows(
    model: type[M],
    fields: Sequence[models.Field[Any, Any]],
    rows: Sequence[Sequence[Any]],
    *,
    using: str = DEFAULT_DB_ALIAS,
) -> list[M]:
    """Instances built from the leading `len(fields)` columns of plain cursor rows read on `using`,
    as a queryset builds them (`from_db`, with each field's database conversion); a RawQuerySet's
    per-call set-up cost more than the query on the store path, a search's and authentication."""
    read_on = connections[using]
    attnames = [f.attname for f in fields]
    converters = [(i, f) for i, f in enumerate(fields) if hasattr(f, "from_db_value")]
    width = len(fields)
    built = []
    for values in rows:
        row = list(values[:width])
        for i, field in converters:
            row[i] = field.from_db_value(row[i], None, read_on)
        built.append(model.from_db(using, attnames, row))
    return built
