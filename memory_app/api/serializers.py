"""Output serializers shared by several views; input serializers live beside their view."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from operator import attrgetter
from typing import Any, ClassVar

from django.utils import timezone
from rest_framework import ISO_8601, serializers
from rest_framework.settings import api_settings

from memory_app.models import Memory


class PlannedSerializer(serializers.Serializer):
    """An output serializer whose `to_representation` of an instance of `planned_types` reads a
    plan built once per serializer instance: the generic DRF walk looks each field's attribute up
    through several layers for every row, and a search answers with ~27 fields for each of its hits
    and 7 of the hit's own; that lookup was most of the response's serialisation. The output is the
    generic walk's (tests/api/test_represent.py compares); another instance (a dict) takes that
    walk. Each field is read by its `source` (a PrimaryKeyRelatedField by its key column, as DRF's
    pk-only optimisation does; `*` gives the instance), None stays None, and the field's own
    `to_representation` converts the rest (a plain char, integer or float field by its type, a
    datetime in DRF's default format and zone directly)."""

    planned_types: ClassVar[tuple[type, ...]] = ()

    def to_representation(self, instance: Any) -> dict[str, Any]:
        if not isinstance(instance, self.planned_types):
            return dict(super().to_representation(instance))
        plan = self.__dict__.get("_plan")
        if plan is None:
            plan = self.__dict__["_plan"] = _plan(self)
        # DRF looks the current time zone up for each datetime field; it is the same for the row.
        zone = timezone.get_current_timezone()
        out: dict[str, Any] = {}
        for name, is_datetime, read, convert in plan:
            value = read(instance)
            if value is None:
                out[name] = None
            elif is_datetime and isinstance(value, datetime) and timezone.is_aware(value):
                out[name] = _iso(value.astimezone(zone))
            else:
                out[name] = convert(value)
        return out


class MemoryOutputSerializer(PlannedSerializer, serializers.ModelSerializer):
    planned_types = (Memory,)
    supersedes = serializers.SerializerMethodField(
        help_text=(
            "ids of the memories this one directly replaced (merged from or superseded), ascending; "
            "the same in every response. `superseded_by` is the other direction."
        )
    )

    class Meta:
        model = Memory
        fields = [
            "id",
            "kind",
            "user_id",
            "agent_id",
            "namespace",
            "session_id",
            "text",
            "topics",
            "entities",
            "event_type",
            "event_date",
            "context",
            "category",
            "fact_type",
            "source",
            "metadata",
            "status",
            "pinned",
            "access_count",
            "helpful_count",
            "harmful_count",
            "confidence",
            "superseded_by",
            "supersedes",
            "embedding_model",
            "created_at",
            "updated_at",
            "last_accessed_at",
            "expires_at",
        ]
        read_only_fields = fields

    def get_supersedes(self, obj: Memory) -> list[int]:
        # Views fill `supersedes_ids` for a whole page at once (selectors.memories.
        # memory_supersedes_attach); a memory serialized without it costs one query, never a wrong [].
        attached = getattr(obj, "supersedes_ids", None)
        if attached is None:
            attached = list(obj.supersedes.order_by("id").values_list("id", flat=True))
        return list(attached)


# (name, a datetime in DRF's default format, read the attribute, convert a non-None value)
_Step = tuple[str, bool, Callable[[Any], Any], Callable[[Any], Any]]
# Fields whose DRF to_representation is the plain conversion; the others keep their own.
_PLAIN: dict[type, Callable[[Any], Any]] = {
    serializers.CharField: str,
    serializers.IntegerField: int,
    serializers.FloatField: float,
}


def _same(value: Any) -> Any:
    return value


def _iso(value: datetime) -> str:
    """DRF's ISO 8601 text of an aware datetime in the current zone ("Z" for UTC)."""
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _plan(serializer: serializers.Serializer) -> list[_Step]:
    """One `_Step` per readable field, in the serializer's order."""
    steps: list[_Step] = []
    for field in serializer._readable_fields:
        name = str(field.field_name)
        if field.source == "*":  # a method field, or one given the whole instance
            steps.append((name, False, _same, field.to_representation))
            continue
        source = ".".join(field.source_attrs)
        if isinstance(field, serializers.PrimaryKeyRelatedField):
            steps.append((name, False, attrgetter(source + "_id"), _same))
            continue
        convert = _PLAIN.get(type(field), field.to_representation)
        steps.append((name, _default_datetime(field), attrgetter(source), convert))
    return steps


def _default_datetime(field: serializers.Field[Any, Any, Any, Any]) -> bool:
    return (
        type(field) is serializers.DateTimeField
        and getattr(field, "format", api_settings.DATETIME_FORMAT) == ISO_8601
        and not hasattr(field, "timezone")
    )


MEMORY_FIELDS = tuple(MemoryOutputSerializer.Meta.fields)
FIELDS_HELP = (
    "comma-separated memory fields to return (e.g. `id,text,created_at`); `id` is always kept. "
    "Left out, every field is returned, `metadata` included."
)


def memory_fields_parse(value: str | list[str] | None) -> frozenset[str] | None:
    """The memory fields a `fields` parameter keeps, None for all; an unknown name is a 400."""
    if value is None:
        return None
    names = value if isinstance(value, list) else [v for v in value.split(",")]
    names = [name.strip() for name in names if name.strip()]
    unknown = sorted(set(names) - set(MEMORY_FIELDS))
    if unknown:
        raise serializers.ValidationError(
            f"Unknown memory field(s): {', '.join(unknown)}. Known: {', '.join(MEMORY_FIELDS)}."
        )
    return frozenset({"id", *names})


def memory_trimmed(data: dict[str, Any], fields: frozenset[str] | None) -> dict[str, Any]:
    """A serialized memory with only `fields` (all when None)."""
    if fields is None:
        return data
    return {name: value for name, value in data.items() if name in fields}


class MemoryPageSerializer(serializers.Serializer):
    """One page of `GET /api/v1/memories` (cursor pagination, newest first)."""

    next = serializers.URLField(allow_null=True, help_text="the next page's URL; null on the last page")
    previous = serializers.URLField(allow_null=True, help_text="the previous page's URL; null on the first")
    results = MemoryOutputSerializer(many=True)


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="stable machine-readable code: invalid, not_found, conflict, ...")
    message = serializers.CharField(help_text="for humans")
    # DRF's serializer metaclass moves declared fields off the class, so this field named "fields"
    # does not replace Serializer.fields; the stubs cannot see that.
    fields = serializers.DictField(  # type: ignore[assignment]
        help_text="per-field messages: {field: [message, ...]}; nested input nests the same way"
    )


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


_built: dict[type[serializers.BaseSerializer[Any]], serializers.BaseSerializer[Any]] = {}
_built_lock = threading.Lock()


def represent(serializer_class: type[serializers.BaseSerializer[Any]], instance: Any) -> Any:
    """`serializer_class(instance).data` from one instance of the class per process, its fields
    built once: a new serializer builds its fields again (a ModelSerializer reads the model for
    each; nested ones are deep-copied), ~1.5 ms of a search's or a store's response. Only for output
    serializers that read no context; `to_representation` leaves the serializer as it was, so
    threads can share it."""
    serializer = _built.get(serializer_class)
    if serializer is None:
        with _built_lock:
            serializer = _built.get(serializer_class)
            if serializer is None:
                serializer = serializer_class()
                if isinstance(serializer, serializers.Serializer):
                    serializer.fields  # noqa: B018 - built here, under the lock, not by two threads
                _built[serializer_class] = serializer
    return serializer.to_representation(instance)
