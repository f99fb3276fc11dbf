"""The semantic knowledge base: namespace-level facts shared by every user of a tenant.

Facts are semantic memories with user_id "" and go through the same dedup write path as everything
else (memory_store), so loading a file twice, or two files saying the same thing, adds nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from memory_app.conf import store_config
from memory_app.models import Tenant
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store

FACT_FIELDS = ("text", "category", "fact_type", "source", "namespace", "topics", "entities", "pinned")


@dataclass
class KnowledgeReport:
    total: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "outcomes": dict(self.outcomes),
            "invalid": self.invalid,
            "dry_run": self.dry_run,
        }


def knowledge_fact(raw: Any, *, namespace: str = "default") -> MemoryInput:
    """One fact (a string or an object with FACT_FIELDS) as a write-path input; ValueError if bad."""
    if isinstance(raw, str):
        raw = {"text": raw}
    if not isinstance(raw, dict):
        raise ValueError("a fact is a string or an object with a `text`")
    unknown = set(raw) - set(FACT_FIELDS)
    if unknown:
        raise ValueError(f"unknown fields: {', '.join(sorted(unknown))}")
    text = str(raw.get("text") or "").strip()
    if not text:
        raise ValueError("`text` is required")
    if len(text) > store_config().max_text_chars:
        raise ValueError(f"`text` is longer than {store_config().max_text_chars} characters")
    for name in ("topics", "entities"):
        if not isinstance(raw.get(name, []), list):
            raise ValueError(f"`{name}` must be a list")
    return MemoryInput(
        text=text,
        kind="semantic",
        user_id="",
        namespace=str(raw.get("namespace") or namespace),
        category=str(raw.get("category", ""))[:100],
        fact_type=str(raw.get("fact_type", ""))[:100],
        source=str(raw.get("source", ""))[:500],
        topics=tuple(str(t)[:100] for t in raw.get("topics", [])),
        entities=tuple(str(e)[:200] for e in raw.get("entities", [])),
        pinned=bool(raw.get("pinned", False)),
    )


def knowledge_load(
    *,
    tenant: Tenant,
    facts: Sequence[Any],
    namespace: str = "default",
    batch_size: int = 64,
    progress: Callable[[int], None] | None = None,
    dry_run: bool = False,
) -> KnowledgeReport:
    """Store facts in batches (one memory_store call, one transaction each); invalid facts are
    reported by index and skipped, the rest are stored. `dry_run`: checked and counted (outcome
    `valid`), nothing stored."""
    report = KnowledgeReport(total=len(facts), dry_run=dry_run)
    valid: list[MemoryInput] = []
    for index, raw in enumerate(facts):
        try:
            valid.append(knowledge_fact(raw, namespace=namespace))
        except ValueError as exc:
            report.invalid.append({"index": index, "error": str(exc)})
    if report.invalid and progress:
        progress(len(report.invalid))
    if dry_run:
        report.outcomes["valid"] = len(valid)
        if progress:
            progress(len(valid))
        return report
    for start in range(0, len(valid), batch_size):
        batch = valid[start : start + batch_size]
        for outcome in memory_store(tenant=tenant, items=batch):
            report.outcomes[outcome.outcome] += 1
        if progress:
            progress(len(batch))
    return report


def knowledge_parse(text: str, *, suffix: str) -> list[Any]:
    """A JSON or YAML list of facts (or an object with a `facts` list)."""

    data: Iterable[Any] | Any
    data = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    if isinstance(data, dict) and "facts" in data:
        data = data["facts"]
    if not isinstance(data, list):
        raise ValueError("the file must hold a list of facts (or an object with a `facts` list)")
    return data
