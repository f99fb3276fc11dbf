"""AgentProfile.config as one typed object: `store`, `search` and `session` sections.

Both paths read it through `AgentProfileConfig.parse`. Configs written before the sections existed
keep working: without a `store` object the store keys are read from the top level, and without a
`search` object so are the search keys. `clean()` and the admin validate with `errors()`; reading a
row that was saved before validation existed ignores a bad value (with a warning from the caller)
instead of failing the request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

JUDGES = ("offline", "llm")


def _number(low: float, high: float) -> Any:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "must be a number"
        if not low <= value <= high:
            return f"must be between {low:g} and {high:g}"
        return None

    return check


def _positive_int(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return "must be a whole number of at least 1"
    return None


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _window(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 10_000_000:
        return "must be a whole number from 100 to 10000000"
    return None


def _judge(value: Any) -> str | None:
    return None if value in JUDGES else f"must be one of {', '.join(JUDGES)}"


# Each key an agent profile may set, with its check (None: valid). The store keys have the names of
# the per-request store options, the search keys those of the search options.
STORE_KEYS = {
    "deduplicate": _boolean,
    "candidate_radius": _number(0.0, 2.0),
    "judge": _judge,
    "review_below": _number(0.0, 1.0),
}
SEARCH_KEYS = {
    "deduplicate": _boolean,
    "dedup_threshold": _number(0.0, 2.0),
    "dedup_use_llm": _boolean,
    "clustering": _boolean,
    "dbscan_epsilon": _number(0.0, 2.0),
    "dbscan_min_points": _positive_int,
    "mmr": _boolean,
    "mmr_lambda": _number(0.0, 1.0),
    "half_life_days": _number(0.0, 36_500.0),
}
# Short-term sessions of the agent (a session's own window wins over these). Read only from the
# `session` object: the top-level fallback is for configs older than the sections.
SESSION_KEYS = {"context_window_tokens": _window}


@dataclass(frozen=True)
class StoreProfile:
    deduplicate: bool | None = None
    candidate_radius: float | None = None
    judge: str | None = None
    review_below: float | None = None


@dataclass(frozen=True)
class SearchProfile:
    deduplicate: bool | None = None
    dedup_threshold: float | None = None
    dedup_use_llm: bool | None = None
    clustering: bool | None = None
    dbscan_epsilon: float | None = None
    dbscan_min_points: int | None = None
    mmr: bool | None = None
    mmr_lambda: float | None = None
    half_life_days: float | None = None

    def overrides(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class SessionProfile:
    context_window_tokens: int | None = None


@dataclass(frozen=True)
class AgentProfileConfig:
    store: StoreProfile
    search: SearchProfile
    session: SessionProfile = SessionProfile()
    # (section, key, value, message) of every value left out because it is invalid.
    rejected: tuple[tuple[str, str, Any, str], ...] = ()

    @classmethod
    def parse(cls, raw: Any) -> AgentProfileConfig:
        """The valid values of `raw`; invalid ones are left out and listed in `rejected`."""
        rejected: list[tuple[str, str, Any, str]] = []
        if not isinstance(raw, Mapping):
            return cls(StoreProfile(), SearchProfile())
        store = _section(raw, "store", STORE_KEYS, rejected)
        search = _section(raw, "search", SEARCH_KEYS, rejected)
        session = (
            _section(raw, "session", SESSION_KEYS, rejected)
            if isinstance(raw.get("session"), Mapping)
            else {}
        )
        return cls(StoreProfile(**store), SearchProfile(**search), SessionProfile(**session), tuple(rejected))

    @staticmethod
    def errors(raw: Any) -> list[str]:
        """Every problem of `raw` as a message naming the key (empty: valid)."""
        if not isinstance(raw, Mapping):
            return ["must be a JSON object"]
        messages = []
        allowed = {"store", "search", "session"} | set(STORE_KEYS) | set(SEARCH_KEYS)
        messages += [f"{key}: unknown key" for key in raw if key not in allowed]
        for name in ("store", "search", "session"):
            if name in raw and not isinstance(raw[name], Mapping):
                messages.append(f"{name}: must be a JSON object")
        for name, keys in (("store", STORE_KEYS), ("search", SEARCH_KEYS), ("session", SESSION_KEYS)):
            section = raw.get(name)
            if isinstance(section, Mapping):
                messages += [f"{name}.{key}: unknown key" for key in section if key not in keys]
        parsed = AgentProfileConfig.parse(raw)
        seen = set()
        for section_name, key, _value, message in parsed.rejected:
            where = f"{section_name}.{key}" if section_name in raw else key
            if where not in seen:
                seen.add(where)
                messages.append(f"{where}: {message}")
        return messages


def _section(
    raw: Mapping[str, Any], name: str, checks: dict[str, Any], rejected: list[tuple[str, str, Any, str]]
) -> dict[str, Any]:
    source = raw.get(name, raw)
    if not isinstance(source, Mapping):
        return {}
    values = {}
    for key, check in checks.items():
        value = source.get(key)
        if value is None:
            continue
        problem = check(value)
        if problem is None:
            values[key] = value
        else:
            rejected.append((name, key, value, problem))
    return values
