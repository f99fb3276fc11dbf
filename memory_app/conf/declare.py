"""How a knob is declared on a config field, and how a config object is built and cached."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from project.env import OPERATIONS, Setting

_T = TypeVar("_T")
_cache_clears: list[Callable[[], None]] = []
OPS = {"table": OPERATIONS}


def knob(setting: Setting[Any]) -> Any:
    """A config field declared by its setting (read back by `build` and `DECLARED`)."""
    return dataclasses.field(metadata={"setting": setting})


def nested(cls: type[Any]) -> Any:
    """A config field holding another config object, built from that one's declared fields."""
    return dataclasses.field(metadata={"nested": cls})


def build(cls: type[_T]) -> _T:
    """The object of `cls` from `django.conf.settings`: each field from its declared setting, a
    nested config object from its own fields."""
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        inner = field.metadata.get("nested")
        values[field.name] = build(inner) if inner else getattr(settings, field.metadata["setting"].name)
    return cls(**values)


def read_once(build: Callable[[], _T]) -> Callable[[], _T]:
    cached = cache(build)
    _cache_clears.append(cached.cache_clear)
    return cached


@receiver(setting_changed)
def _settings_changed(**kwargs: object) -> None:
    """Drop every cached config object: the next read rebuilds it from the changed settings."""
    for clear in _cache_clears:
        clear()
