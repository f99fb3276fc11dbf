"""REST fields of the overrides a request may set, built from their declarations (memory_app/overrides.py)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory_app.overrides import Knob


def knob_field(knob: Knob, **extra: Any) -> serializers.Field:
    """The optional field of one knob: its type, bounds and help as declared."""
    common: dict[str, Any] = {"required": False, "help_text": knob.help, **extra}
    if knob.kind == "bool":
        return serializers.BooleanField(allow_null=True, default=None, **common)
    if knob.kind == "choice":
        return serializers.ChoiceField(choices=knob.choices, **common)
    if knob.kind == "number":
        return serializers.FloatField(min_value=knob.low, max_value=knob.high, **common)
    low, high = (None if bound is None else int(bound) for bound in (knob.low, knob.high))
    return serializers.IntegerField(min_value=low, max_value=high, **common)


def request_fields(knobs: tuple[Knob, ...]) -> dict[str, serializers.Field]:
    """The fields of the knobs a request may set, for a serializer's class body."""
    return {knob.name: knob_field(knob) for knob in knobs if knob.per_request}


def overrides_serializer(name: str, knobs: tuple[Knob, ...], base: type = serializers.Serializer) -> type:
    """A serializer class (or a mixin of fields) of the knobs a request may set."""
    return type(name, (base,), {"__module__": __name__, **request_fields(knobs)})
