"""Checks on a whole batch of MemoryInput before anything is written: one bad item stores nothing."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from memory_app.conf import store_config
from memory_app.db.vectors import half_precision
from memory_app.embeddings import vector_dimensions
from memory_app.errors import ApplicationError
from memory_app.models.memory import MemoryKind
from memory_app.services.store.types import MemoryInput

SCOPE_FIELD_MAX = 255
EPISODIC_NEEDS_USER = "Required for an episodic memory (the user it is about); semantic memory needs none."


def _walk(value: Any, keys: list[str]) -> int:
    """The nesting depth of `value` (a scalar is 0), collecting every key on the way."""
    if isinstance(value, Mapping):
        keys.extend(str(key) for key in value)
        return 1 + max((_walk(item, keys) for item in value.values()), default=0)
    if isinstance(value, list | tuple):
        return 1 + max((_walk(item, keys) for item in value), default=0)
    return 0


def metadata_problems(metadata: Any) -> list[str]:
    """Why `metadata` cannot be stored, naming the limit (MEMORY_METADATA_*); [] when it can."""
    if not isinstance(metadata, Mapping):
        return ["Must be a JSON object."]
    config = store_config()
    problems = []
    try:
        size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    except (TypeError, ValueError):
        return ["Must be JSON: objects, arrays, strings, numbers, booleans and null only."]
    if size > config.metadata_max_bytes:
        problems.append(
            f"Is {size} bytes as JSON; MEMORY_METADATA_MAX_BYTES allows {config.metadata_max_bytes}."
        )
    keys: list[str] = []
    depth = _walk(metadata, keys)
    if depth > config.metadata_max_depth:
        problems.append(
            f"Is nested {depth} levels deep; MEMORY_METADATA_MAX_DEPTH allows {config.metadata_max_depth}."
        )
    if len(keys) > config.metadata_max_keys:
        problems.append(f"Has {len(keys)} keys; MEMORY_METADATA_MAX_KEYS allows {config.metadata_max_keys}.")
    longest = max((len(key) for key in keys), default=0)
    if longest > config.metadata_max_key_chars:
        problems.append(
            f"Has a key of {longest} characters; MEMORY_METADATA_MAX_KEY_CHARS allows "
            f"{config.metadata_max_key_chars}."
        )
    return problems


def metadata_validate(metadata: Any, *, field: str = "metadata") -> None:
    """An ApplicationError (400) naming the field and the limits `metadata` exceeds."""
    problems = metadata_problems(metadata)
    if problems:
        raise ApplicationError(
            f"Invalid {field}: {problems[0]} Nothing was stored.", fields={field: problems}
        )


def _item_errors(item: MemoryInput) -> dict[str, list[str]]:
    """Every bad field of one item, in the order the fields are checked (the first is quoted)."""
    errors: dict[str, list[str]] = {}
    _text_errors(item, errors=errors)
    if item.kind not in MemoryKind.values:
        errors["kind"] = [f'"{item.kind}" is not a valid choice; use one of {", ".join(MemoryKind.values)}.']
    _scope_errors(item, errors=errors)
    if not _confidence_valid(item.confidence):
        errors["confidence"] = ["Must be a number between 0 and 1."]
    if problems := metadata_problems(item.metadata):
        errors["metadata"] = problems
    if item.embedding is not None and (problem := _embedding_problem(item.embedding)):
        errors["embedding"] = [problem]
    return errors


def _text_errors(item: MemoryInput, *, errors: dict[str, list[str]]) -> None:
    limit = store_config().max_text_chars
    text = item.text.strip() if isinstance(item.text, str) else None
    if text is None:
        errors["text"] = ["Must be a string."]
    elif not text:
        errors["text"] = ["This field may not be blank."]
    elif len(text) > limit:
        errors["text"] = [f"Ensure this field has no more than {limit} characters (it has {len(text)})."]


def _scope_errors(item: MemoryInput, *, errors: dict[str, list[str]]) -> None:
    for name in ("user_id", "agent_id", "namespace", "session_id"):
        value = getattr(item, name)
        if not isinstance(value, str) or len(value) > SCOPE_FIELD_MAX:
            errors[name] = [f"Must be a string of at most {SCOPE_FIELD_MAX} characters."]
    if not item.namespace:
        errors["namespace"] = ["This field may not be blank."]
    if item.kind == MemoryKind.EPISODIC and isinstance(item.user_id, str) and not item.user_id.strip():
        # An episode belongs to someone: one stored without a user would be found by no user's
        # search (they are scoped) and mixed into every all_users one. Semantic memory is shared.
        errors["user_id"] = [EPISODIC_NEEDS_USER]


def _confidence_valid(confidence: Any) -> bool:
    """None (the default applies) or a number (not a bool) from 0 to 1."""
    return confidence is None or (
        not isinstance(confidence, bool)
        and isinstance(confidence, int | float)
        and 0.0 <= float(confidence) <= 1.0
    )


def _embedding_problem(embedding: Any) -> str | None:
    vector = np.asarray(embedding, dtype=np.float32)
    width = vector_dimensions()
    if vector.shape != (width,) or not np.isfinite(vector).all():
        return f"Must be {width} finite numbers."
    if not np.linalg.norm(vector) > 0:
        return "Must not be the zero vector (it has no cosine distance)."
    return None


def store_items_validate(items: Sequence[MemoryInput]) -> list[MemoryInput]:
    """The items with stripped text and unit-length vectors (of float16 values), or one
    ApplicationError naming every bad field as `items[i].field`."""
    if not items:
        raise ApplicationError("Give at least one memory.", fields={"items": ["This list may not be empty."]})
    limit = store_config().max_batch
    if len(items) > limit:
        raise ApplicationError(
            f"At most {limit} memories per request; got {len(items)}. Nothing was stored.",
            fields={"items": [f"Ensure this list has no more than {limit} elements."]},
        )
    fields: dict[str, list[str]] = {}
    for index, item in enumerate(items):
        for name, messages in _item_errors(item).items():
            fields[f"items[{index}].{name}"] = messages
    if fields:
        bad = sorted({int(key.split("]")[0][6:]) for key in fields})
        first, messages = next(iter(fields.items()))
        raise ApplicationError(
            f"Invalid memories at items {', '.join(map(str, bad))} ({first}: {messages[0]}); "
            "nothing was stored.",
            fields=fields,
        )
    cleaned = []
    for item in items:
        vector = None
        if item.embedding is not None:
            vector = np.asarray(item.embedding, dtype=np.float32)
            # Rounded as embed_texts rounds: the judge compares it with stored (float16) vectors.
            vector = half_precision(vector / np.linalg.norm(vector))
        cleaned.append(replace(item, text=item.text.strip(), embedding=vector))
    return cleaned
