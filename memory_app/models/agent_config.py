"""AgentProfile.config as one typed object: `store`, `search` and `session` sections.

The keys, their types and bounds are declared once in memory_app/overrides.py. Both paths read it
through `AgentProfileConfig.parse`. Configs written before the sections existed
keep working: without a `store` object the store keys are read from the top level, and without a
`search` object so are the search keys. `clean()` and the admin validate with `errors()`; reading a
row that was saved before validation existed ignores a bad value (with a warning from the caller)
instead of failing the request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memory_app.overrides import (
    SEARCH_KNOBS,
    SECTIONS,
    SESSION_KNOBS,
    STORE_KNOBS,
    Knob,
    SearchOverrides,
    SessionOverrides,
    StoreOverrides,
)


@dataclass(frozen=True)
class AgentProfileConfig:
    store: StoreOverrides
    search: SearchOverrides
    session: SessionOverrides = field(default_factory=SessionOverrides)
    # (section, key, value, message) of every value left out because it is invalid.
    rejected: tuple[tuple[str, str, Any, str], ...] = ()

    @classmethod
    def parse(cls, raw: Any) -> AgentProfileConfig:
        """The valid values of `raw`; invalid ones are left out and listed in `rejected`."""
        rejected: list[tuple[str, str, Any, str]] = []
        if not isinstance(raw, Mapping):
            return cls(StoreOverrides(), SearchOverrides())
        store = _section(raw, "store", STORE_KNOBS, rejected)
        search = _section(raw, "search", SEARCH_KNOBS, rejected)
        session = (
            _section(raw, "session", SESSION_KNOBS, rejected)
            if isinstance(raw.get("session"), Mapping)
            else {}
        )
        return cls(
            StoreOverrides(**store), SearchOverrides(**search), SessionOverrides(**session), tuple(rejected)
        )

    @staticmethod
    def errors(raw: Any) -> list[str]:
        """Every problem of `raw` as a message naming the key (empty: valid)."""
        if not isinstance(raw, Mapping):
            return ["must be a JSON object"]
        messages = []
        allowed = set(SECTIONS) | {k.name for k in STORE_KNOBS + SEARCH_KNOBS}
        messages += [f"{key}: unknown key" for key in raw if key not in allowed]
        for name in ("store", "search", "session"):
            if name in raw and not isinstance(raw[name], Mapping):
                messages.append(f"{name}: must be a JSON object")
        for name, knobs in SECTIONS.items():
            section = raw.get(name)
            if isinstance(section, Mapping):
                names = {k.name for k in knobs}
                messages += [f"{name}.{key}: unknown key" for key in section if key not in names]
        parsed = AgentProfileConfig.parse(raw)
        seen = set()
        for section_name, key, _value, message in parsed.rejected:
            where = f"{section_name}.{key}" if section_name in raw else key
            if where not in seen:
                seen.add(where)
                messages.append(f"{where}: {message}")
        return messages


def _section(
    raw: Mapping[str, Any], name: str, knobs: tuple[Knob, ...], rejected: list[tuple[str, str, Any, str]]
) -> dict[str, Any]:
    source = raw.get(name, raw)
    if not isinstance(source, Mapping):
        return {}
    values = {}
    for knob in knobs:
        value = source.get(knob.name)
        if value is None:
            continue
        problem = knob.problem(value)
        if problem is None:
            values[knob.name] = value
        else:
            rejected.append((name, knob.name, value, problem))
    return values
