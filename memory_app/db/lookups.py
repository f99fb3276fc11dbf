"""`field__any=[...]`: `field = ANY(%s)` with the list as one array parameter.

Django's `__in` writes one placeholder per value, so a query over 60 or 360 ids has a new text at
every call, and psycopg (client-side binding) parses each new text again: for the ~360 candidate ids
of a search that parse was half of the step. With one array parameter the text is the same whatever
the list's length. An empty list matches nothing, as `__in` does.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Field, ForeignObject, Lookup


class AnyOf(Lookup):
    lookup_name = "any"
    prepare_rhs = False

    def get_db_prep_lookup(self, value: Any, connection: Any) -> Any:
        field = self.lhs.output_field
        if isinstance(field, ForeignObject):  # a foreign key's values are its target's
            field = field.target_field
        return "%s", [[field.get_db_prep_value(item, connection, prepared=False) for item in value]]

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = ANY({rhs})", (*lhs_params, *rhs_params)


Field.register_lookup(AnyOf)
ForeignObject.register_lookup(AnyOf)
