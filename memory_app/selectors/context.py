"""retrieve_all_context: the four kinds of memory for one agent turn, each formatted for a prompt.

Each part runs on its own (inside its own savepoint, so a failed query cannot poison the others);
a part that fails is reported in `errors` and the others are still returned.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from memory_app.errors import ApplicationError
from memory_app.models import Tenant
from memory_app.selectors.procedures import procedure_suggest
from memory_app.selectors.search_types import SearchFilters
from memory_app.selectors.sessions import session_find, session_messages

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ContextRequest:
    query: str
    user_id: str = ""
    session_id: str = ""
    agent_id: str = ""
    namespace: str = "default"
    include_short_term: bool = True
    include_episodic: bool = True
    include_semantic: bool = True
    include_procedural: bool = True
    short_term_limit: int = 20
    episodic_limit: int = 5
    semantic_limit: int = 5


@dataclass
class ContextResult:
    short_term: dict[str, Any] | None = None
    episodic: dict[str, Any] | None = None
    semantic: dict[str, Any] | None = None
    procedural: dict[str, Any] | None = None
    errors: list[dict[str, str]] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        parts = ("short_term", "episodic", "semantic", "procedural")
        return {p: (getattr(self, p) or {}).get("count", 0) for p in parts}

    @property
    def formatted(self) -> str:
        parts = [self.short_term, self.semantic, self.episodic, self.procedural]
        return "\n\n".join(p["formatted"] for p in parts if p and p.get("formatted"))


def search_memories(
    *, tenant: Tenant, query: str, filters: SearchFilters, limit: int
) -> list[dict[str, Any]]:
    """Ranked memories for the query through the search contract (memory_search)."""
    from memory_app.selectors.search import memory_search

    result = memory_search(tenant=tenant, query=query, filters=filters, limit=limit)
    rows = []
    for hit in result.hits:
        memory = getattr(hit, "memory", None)
        rows.append(
            {
                "id": memory.pk if memory is not None else hit.memory_id,
                # the display text: for a group search collapsed, its best-ranked member's text
                "text": getattr(hit, "text", None) or memory.text,
                "score": float(hit.score),
                "category": getattr(memory, "category", ""),
                "created_at": getattr(memory, "created_at", None),
            }
        )
    return rows


def _short_term(tenant: Tenant, req: ContextRequest) -> dict[str, Any]:
    session = session_find(tenant=tenant, session_id=req.session_id) if req.session_id else None
    if session is None:
        return {"formatted": "", "count": 0, "summary": "", "messages": [], "trimmed_count": 0}
    messages = session_messages(session=session, limit=req.short_term_limit)
    lines = []
    if session.summary:
        lines.append(f"Summary of the earlier conversation: {session.summary}")
    if messages:
        lines.append("Recent conversation:")
        lines.extend(f"{m.role}: {m.content}" for m in messages)
    return {
        "formatted": "\n".join(lines),
        "count": len(messages),
        "summary": session.summary,
        "trimmed_count": session.trimmed_count,
        "messages": [{"position": m.position, "role": m.role, "content": m.content} for m in messages],
    }


def _memories_part(title: str, rows: list[dict[str, Any]], *, with_category: bool) -> dict[str, Any]:
    lines = [f"{title}:"] if rows else []
    for row in rows:
        suffix = f" [{row['category']}]" if with_category and row.get("category") else ""
        lines.append(f"- {row['text']}{suffix}")
    return {"formatted": "\n".join(lines), "count": len(rows), "memories": rows}


def _episodic(tenant: Tenant, req: ContextRequest) -> dict[str, Any]:
    if not req.user_id:
        raise ApplicationError(
            "episodic memory needs a user_id", fields={"user_id": ["Required for episodic."]}
        )
    filters = SearchFilters(user_id=req.user_id, kind="episodic", namespace=req.namespace)
    rows = search_memories(tenant=tenant, query=req.query, filters=filters, limit=req.episodic_limit)
    return _memories_part("What you know about the user", rows, with_category=False)


def _semantic(tenant: Tenant, req: ContextRequest) -> dict[str, Any]:
    filters = SearchFilters(user_id="", kind="semantic", namespace=req.namespace)
    rows = search_memories(tenant=tenant, query=req.query, filters=filters, limit=req.semantic_limit)
    return _memories_part("Relevant knowledge", rows, with_category=True)


def _procedural(tenant: Tenant, req: ContextRequest) -> dict[str, Any]:
    suggestion = procedure_suggest(tenant=tenant, query=req.query, user_id=req.user_id)
    proc = suggestion.procedure
    if proc is None:
        return {"formatted": "", "count": 0, "recommendation": None}
    recommendation = {
        "procedure_id": proc.pk,
        "pattern": proc.pattern,
        "tool_sequence": proc.tool_sequence,
        "match": suggestion.match,
        "distance": suggestion.distance,
        "confidence": round(suggestion.confidence, 4),
        "recommended": suggestion.recommended,
        "execution_count": proc.execution_count,
        "avg_success_score": proc.avg_success_score,
        "avg_execution_time_ms": proc.avg_execution_time_ms,
    }
    formatted = ""
    if suggestion.recommended:
        formatted = (
            f"A tool sequence that worked for similar requests: {' -> '.join(map(str, proc.tool_sequence))} "
            f"(confidence {suggestion.confidence:.2f} over {proc.execution_count} runs)."
        )
    return {"formatted": formatted, "count": 1, "recommendation": recommendation}


PARTS: dict[str, Callable[[Tenant, ContextRequest], dict[str, Any]]] = {
    "short_term": _short_term,
    "episodic": _episodic,
    "semantic": _semantic,
    "procedural": _procedural,
}


def context_all(*, tenant: Tenant, request: ContextRequest) -> ContextResult:
    result = ContextResult()
    for name, part in PARTS.items():
        if not getattr(request, f"include_{name}"):
            continue
        try:
            with transaction.atomic():
                setattr(result, name, part(tenant, request))
        except ApplicationError as exc:
            result.errors.append({"part": name, "code": exc.code, "message": exc.message})
        except Exception as exc:  # one failed part (embedding provider, database) never fails the call
            logger.warning("context part %s failed: %s", name, exc, exc_info=True)
            result.errors.append(
                {"part": name, "code": "unavailable", "message": f"{type(exc).__name__}: {exc}"}
            )
    return result
