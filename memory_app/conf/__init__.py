"""The service's tuning knobs: each declared once, on a field of its domain's frozen object.

A field's declaration (project/env.py `Setting`) is the knob's one definition: environment variable,
type, default, allowed values, one line of documentation, the docs table that lists it. From it
`project/settings.py` parses the environment strictly at start-up (`settings_from_env`: a bad value
stops the process naming the variable), each `<domain>_config()` builds its object from
`django.conf.settings`, and `manage.py settings_doc --write` writes the README's and
docs/OPERATIONS.md's tables (tests/project/test_settings_declared.py fails on drift).

Each `<domain>_config()` builds its object on first use and then hands out the same object.
Changing a setting at run time through Django's own mechanism (`override_settings`, pytest-django's
`settings` fixture) sends `setting_changed`, and the receiver below drops every cached object, so
the next call sees the new value; nothing else changes them.

Django's own and the infrastructure's variables (DEBUG, SECRET_KEY, the database, Celery, the API's
request limits, health-check timeouts) are declared in project/variables.py and read from
`django.conf.settings` where they are used: they configure the frameworks, not the memory service.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from memory_app.conf.declare import build, read_once
from memory_app.conf.embeddings import EmbeddingsConfig, OpenAIEmbeddingConfig
from memory_app.conf.kinds import KindsConfig
from memory_app.conf.llm import LLMConfig
from memory_app.conf.maintenance import MaintenanceConfig, QuotaConfig
from memory_app.conf.search import ContextConfig, QueryTimeConfig, SearchConfig
from memory_app.conf.store import JudgeConfig, StoreConfig
from project.env import Setting

__all__ = [
    "DECLARED",
    "ContextConfig",
    "EmbeddingsConfig",
    "JudgeConfig",
    "KindsConfig",
    "LLMConfig",
    "MaintenanceConfig",
    "OpenAIEmbeddingConfig",
    "QueryTimeConfig",
    "QuotaConfig",
    "SearchConfig",
    "StoreConfig",
    "context_config",
    "embeddings_config",
    "judge_config",
    "kinds_config",
    "llm_config",
    "maintenance_config",
    "query_time_config",
    "quota_config",
    "search_config",
    "settings_from_env",
    "store_config",
]

_DOMAINS: tuple[type[Any], ...] = (
    EmbeddingsConfig,
    LLMConfig,
    JudgeConfig,
    StoreConfig,
    KindsConfig,
    SearchConfig,
    QueryTimeConfig,
    ContextConfig,
    MaintenanceConfig,
    QuotaConfig,
)


def _declared_in(cls: type[Any]) -> list[Setting[Any]]:
    found: list[Setting[Any]] = []
    for field in dataclasses.fields(cls):
        inner = field.metadata.get("nested")
        found.extend(_declared_in(inner) if inner else [field.metadata["setting"]])
    return found


def _unique(found: list[Setting[Any]]) -> tuple[Setting[Any], ...]:
    """Each setting once; a knob two objects read is one declaration that both fields name."""
    by_name: dict[str, Setting[Any]] = {}
    for setting in found:
        if by_name.setdefault(setting.name, setting) is not setting:
            raise ImproperlyConfigured(f"{setting.name} is declared twice in memory_app/conf/")
    return tuple(by_name.values())


# Every knob once, in the order settings.py parses them and the docs tables list them.
DECLARED: tuple[Setting[Any], ...] = _unique([s for cls in _DOMAINS for s in _declared_in(cls)])

# Defaults that depend on a value parsed before them, or on where the checkout is.
_DERIVED_DEFAULTS: dict[str, Callable[[Mapping[str, Any], Path], Any]] = {
    "EMBEDDING_MODEL": lambda values, _: (
        "all-MiniLM-L6-v2" if values["EMBEDDING_PROVIDER"] == "local" else "text-embedding-3-small"
    ),
    "EMBEDDING_ONNX_DIR": lambda _, base_dir: str(base_dir / "var" / "models"),
}


def _check_together(values: Mapping[str, Any]) -> None:
    """The rules between knobs, each stopping start-up with a message naming them."""
    if values["EMBEDDING_PROVIDER"] == "openai" and not values["OPENAI_API_KEY"]:
        raise ImproperlyConfigured("OPENAI_API_KEY is required when EMBEDDING_PROVIDER=openai")
    # At least three heartbeats, so one slow database write is not a death.
    if values["MAINTENANCE_JOB_STALE_SECONDS"] < 3 * values["MAINTENANCE_JOB_HEARTBEAT_SECONDS"]:
        raise ImproperlyConfigured(
            "MAINTENANCE_JOB_STALE_SECONDS must be at least 3 x MAINTENANCE_JOB_HEARTBEAT_SECONDS"
        )
    if values["SESSION_TRIM_TO"] > values["SESSION_TRIM_AT"]:
        raise ImproperlyConfigured("SESSION_TRIM_TO must be <= SESSION_TRIM_AT")
    shares = [values[name] for name in values if name.startswith("CONTEXT_ALL_SHARE_")]
    if not sum(shares) > 0:
        raise ImproperlyConfigured("CONTEXT_ALL_SHARE_* must not all be 0")


def settings_from_env(*, base_dir: Path) -> dict[str, Any]:
    """Every knob parsed strictly from the environment, by its Django setting name (settings.py)."""
    values: dict[str, Any] = {}
    for setting in DECLARED:
        derive = _DERIVED_DEFAULTS.get(setting.name)
        values[setting.name] = (
            setting.read() if derive is None else setting.read(default=derive(values, base_dir))
        )
    _check_together(values)
    return values


@read_once
def store_config() -> StoreConfig:
    return build(StoreConfig)


@read_once
def judge_config() -> JudgeConfig:
    return build(JudgeConfig)


@read_once
def llm_config() -> LLMConfig:
    return build(LLMConfig)


@read_once
def search_config() -> SearchConfig:
    return build(SearchConfig)


@read_once
def context_config() -> ContextConfig:
    return build(ContextConfig)


@read_once
def embeddings_config() -> EmbeddingsConfig:
    return build(EmbeddingsConfig)


@read_once
def maintenance_config() -> MaintenanceConfig:
    return build(MaintenanceConfig)


@read_once
def kinds_config() -> KindsConfig:
    return build(KindsConfig)


@read_once
def query_time_config() -> QueryTimeConfig:
    return build(QueryTimeConfig)


@read_once
def quota_config() -> QuotaConfig:
    return build(QuotaConfig)
