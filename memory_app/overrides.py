"""The knobs an agent profile or a request may set over the global settings, declared once.

Each knob's name, type, bounds and help are written here and nowhere else. From these declarations
come the agent profile's parser and its error messages (models/agent_config.py), the REST fields of
the store, search and session requests (api/overrides.py), the help of the admin form and of the
profile API, the MCP tools' list of operator knobs, and the typed overrides the services and
selectors resolve (`StoreOverrides`, `SearchOverrides`, `SessionOverrides`: one type whether the
values came from a request or from a profile).

Pure: no Django, so every layer may import it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

JUDGES = ("offline", "llm")

Kind = Literal["bool", "number", "int", "choice"]


@dataclass(frozen=True)
class Knob:
    name: str
    kind: Kind
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    # False: only an agent profile sets it (how the service judges or clusters, not a call's wish).
    per_request: bool = True

    def problem(self, value: Any) -> str | None:
        """Why `value` is not valid for this knob, or None."""
        if self.kind == "bool":
            return None if isinstance(value, bool) else "must be true or false"
        if self.kind == "choice":
            return None if value in self.choices else f"must be one of {', '.join(self.choices)}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "must be a number" if self.kind == "number" else self._int_message()
        if self.kind == "int" and not isinstance(value, int):
            return self._int_message()
        low = self.low if self.low is not None else float("-inf")
        high = self.high if self.high is not None else float("inf")
        if low <= value <= high:
            return None
        return f"must be between {low:g} and {high:g}" if self.kind == "number" else self._int_message()

    def _int_message(self) -> str:
        low = int(self.low or 0)
        if self.high is None:
            return f"must be a whole number of at least {low}"
        return f"must be a whole number from {low} to {int(self.high)}"


STORE_KNOBS = (
    Knob("deduplicate", "bool", "false: store without semantic dedup"),
    Knob("candidate_radius", "number", "loose cosine-distance radius for the judge's neighbours", 0.0, 2.0),
    Knob("judge", "choice", "relation judge", choices=JUDGES),
    Knob(
        "review_below",
        "number",
        "a merge or supersede less confident than this is queued for review",
        0.0,
        1.0,
        per_request=False,
    ),
)
SEARCH_KNOBS = (
    Knob("deduplicate", "bool", "collapse near-duplicate results into one entry"),
    Knob("dedup_threshold", "number", "cosine distance under which results are near-duplicates", 0.0, 2.0),
    Knob("dedup_use_llm", "bool", "let the LLM judge confirm a collapsed group"),
    Knob("clustering", "bool", "label results with DBSCAN clusters"),
    Knob("dbscan_epsilon", "number", "DBSCAN neighbourhood radius", 0.0, 2.0, per_request=False),
    Knob("dbscan_min_points", "int", "DBSCAN core size", 1, None, per_request=False),
    Knob("mmr", "bool", "reorder results for diversity (maximal marginal relevance)"),
    Knob("mmr_lambda", "number", "MMR trade-off: 1 relevance only, 0 diversity only", 0.0, 1.0),
    Knob("half_life_days", "number", "temporal decay half-life in days (0: no decay)", 0.0, 36_500.0),
)
SESSION_KNOBS = (
    Knob(
        "context_window_tokens",
        "int",
        "a session's context window in tokens (a session's own window wins over the profile's)",
        100,
        10_000_000,
    ),
)
SECTIONS: dict[str, tuple[Knob, ...]] = {
    "store": STORE_KNOBS,
    "search": SEARCH_KNOBS,
    "session": SESSION_KNOBS,
}


def knob_names() -> frozenset[str]:
    return frozenset(knob.name for knobs in SECTIONS.values() for knob in knobs)


def profile_help() -> str:
    """The shape of an agent profile's `config`, for the API's and the admin's help texts."""
    sections = ", ".join(
        f'"{section}": {{{", ".join(chr(34) + k.name + chr(34) for k in knobs)}}}'
        for section, knobs in SECTIONS.items()
    )
    return f"JSON object: {{{sections}}}; each key optional."


class _Given:
    def given(self) -> dict[str, Any]:
        """The values set (None: not set, so the next level's value holds)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}  # type: ignore[arg-type]


@dataclass(frozen=True)
class StoreOverrides(_Given):
    """Overrides of the store's dedup settings; None means: agent profile, then global setting."""

    deduplicate: bool | None = None
    candidate_radius: float | None = None
    judge: str | None = None  # "offline" | "llm"
    review_below: float | None = None


@dataclass(frozen=True)
class SearchOverrides(_Given):
    """Overrides of the search pipeline's settings; None means: agent profile, then global setting."""

    deduplicate: bool | None = None
    dedup_threshold: float | None = None
    dedup_use_llm: bool | None = None
    clustering: bool | None = None
    dbscan_epsilon: float | None = None
    dbscan_min_points: int | None = None
    mmr: bool | None = None
    mmr_lambda: float | None = None
    half_life_days: float | None = None


@dataclass(frozen=True)
class SessionOverrides(_Given):
    context_window_tokens: int | None = None
