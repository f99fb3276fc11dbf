"""context_all: the four kinds of memory for one agent turn, formatted for a prompt within a budget.

Each part runs on its own (inside its own savepoint, so a failed query cannot poison the others);
a part that fails is reported in `errors` and the others are still returned. The parts are then
packed into `max_tokens` (tiktoken, as /context counts): each part first gets its share
(CONTEXT_ALL_SHARE_*), what a part leaves unused flows to the others in the order episodic,
short-term, semantic, procedural (retrieval/packing.py `compose`). The response never holds more
than `max_tokens` tokens of formatted text and reports the tokens of each part.

Memories less relevant to the query than CONTEXT_RELEVANCE_FLOOR are not candidates, and no part
repeats a text another part already shows (the conversation first, then the user's memories, then
shared knowledge): the budget is spent once per text.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connections, transaction

from memory_app.conf import context_config
from memory_app.db_routing import read_alias, replica_failure
from memory_app.embeddings.tokens import count_tokens
from memory_app.errors import ApplicationError
from memory_app.models import Tenant
from memory_app.retrieval.packing import Composed, PartLines, compose
from memory_app.selectors.kinds.procedures import procedure_suggest
from memory_app.selectors.kinds.sessions import session_find, session_messages
from memory_app.selectors.search.query import QueryEmbedding, TimeQuery, memory_search
from memory_app.selectors.search.time_window import AppliedWindow
from memory_app.selectors.search.types import SearchFilters
from memory_app.text import normalize_text

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
    episodic_limit: int | None = None  # None: as many as fit, up to CONTEXT_ALL_CANDIDATES
    semantic_limit: int | None = None
    max_tokens: int | None = None  # None: CONTEXT_ALL_MAX_TOKENS
    # A time expression in the query (selectors/search/time_window.py), read for the episodic part.
    now: datetime | None = None
    query_time: str | None = None


@dataclass
class ContextResult:
    short_term: dict[str, Any] | None = None
    episodic: dict[str, Any] | None = None
    semantic: dict[str, Any] | None = None
    procedural: dict[str, Any] | None = None
    errors: list[dict[str, str]] = field(default_factory=list)
    max_tokens: int = 0
    tokens: dict[str, int] = field(default_factory=dict)  # per part and "total"
    formatted: str = ""
    time_window: AppliedWindow | None = None  # the window the episodic search applied
    # Milliseconds per step of this call (not part of the response): the query embedding, each
    # part, each memory search's own steps ("episodic.rows"...), the packing.
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        parts = ("short_term", "episodic", "semantic", "procedural")
        return {p: (getattr(self, p) or {}).get("count", 0) for p in parts}


@dataclass
class Part:
    """A part before packing: its candidate lines in rank order, the JSON item behind each line,
    and the rest of the part's JSON (summary, recommendation...)."""

    title: str = ""
    lines: list[str] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    items_key: str = "memories"
    extra: dict[str, Any] = field(default_factory=dict)
    chronological: bool = False  # ranked newest first, shown oldest first

    def payload(self, indices: list[int], text: str, tokens: int) -> dict[str, Any]:
        chosen = sorted(indices, key=self.display.__getitem__) if self.display else indices
        items = [self.items[i] for i in chosen]
        return {"formatted": text, "count": len(items), "tokens": tokens, self.items_key: items, **self.extra}

    @property
    def display(self) -> list[int] | None:
        return list(range(len(self.lines) - 1, -1, -1)) if self.chronological else None


@dataclass
class Call:
    """What the parts of one call share: the query embedded once (None: not asked for; a failed
    embedding makes each search degrade on its own) and where the time went."""

    embedding: QueryEmbedding | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    time_window: AppliedWindow | None = None


# What search_memories reads of each hit's row (the rest of the row is never loaded).
ROW_FIELDS = ("id", "text", "category", "created_at", "event_date", "metadata")


def search_memories(
    *,
    tenant: Tenant,
    query: str,
    filters: SearchFilters,
    limit: int,
    call: Call | None = None,
    part: str = "",
    time_query: TimeQuery | None = None,
) -> list[dict[str, Any]]:
    """Ranked memories for the query through the search contract (memory_search), without those
    under CONTEXT_RELEVANCE_FLOOR (see SearchHit.relevance): a query unrelated to every memory
    gets none, however few memories there are to rank."""
    result = memory_search(
        tenant=tenant,
        query=query,
        filters=filters,
        limit=limit,
        query_embedding=call.embedding if call is not None else None,
        row_fields=ROW_FIELDS,
        time_query=time_query,
    )
    if call is not None:
        call.time_window = call.time_window or result.time_window
        for phase, ms in result.stats.get("phases_ms", {}).items():
            call.timings_ms[f"{part}.{phase}"] = ms
    rows = []
    floor = context_config().relevance_floor
    for hit in result.hits:
        if hit.relevance is not None and hit.relevance < floor:
            continue
        memory = hit.memory
        metadata = memory.metadata or {}
        rows.append(
            {
                "id": memory.pk,
                # the display text: for a group search collapsed, its best-ranked member's text
                "text": hit.text or memory.text,
                "score": float(hit.score),
                "relevance": hit.relevance,
                "category": memory.category,
                "created_at": memory.created_at,
                "event_date": memory.event_date,
                "said_at": metadata.get("said_at") if isinstance(metadata, dict) else None,
                "member_ids": list(hit.member_ids or []),
            }
        )
    return rows


def _day(value: Any) -> str:
    """'8 May 2023' from a datetime or an ISO string; "" when there is none."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return ""
    return f"{value.day} {value:%B %Y}" if isinstance(value, datetime) else ""


def memory_line(row: dict[str, Any], *, with_category: bool) -> str:
    """ "- [8 May 2023] Caroline: I went to a support group yesterday (event date: 7 May 2023)":
    when it was said, and when it happened if that is another day."""
    said, event = _day(row.get("said_at")), _day(row.get("event_date"))
    prefix = f"[{said or event}] " if said or event else ""
    suffix = f" (event date: {event})" if said and event and event != said else ""
    category = f" [{row['category']}]" if with_category and row.get("category") else ""
    return f"- {prefix}{row['text']}{suffix}{category}"


def _short_term(tenant: Tenant, req: ContextRequest, call: Call) -> Part:
    session = session_find(tenant=tenant, session_id=req.session_id) if req.session_id else None
    extra = {"summary": "", "trimmed_count": 0}
    if session is None:
        return Part(items_key="messages", extra=extra)
    messages = list(session_messages(session=session, limit=req.short_term_limit))
    extra = {"summary": session.summary, "trimmed_count": session.trimmed_count}
    part = Part(title="Recent conversation:", items_key="messages", extra=extra, chronological=True)
    for m in reversed(messages):  # newest first: the budget keeps the latest turns
        part.lines.append(f"{m.speaker or m.role}: {m.content}")
        part.items.append(
            {"position": m.position, "role": m.role, "speaker": m.speaker, "content": m.content}
        )
    if session.summary:
        # The summary is ranked after the newest turns but shown before every message.
        part.lines.append(f"Summary of the earlier conversation: {session.summary}")
        part.items.append({"position": -1, "role": "summary", "speaker": "", "content": session.summary})
    return part


def _memories_part(title: str, rows: list[dict[str, Any]], *, with_category: bool) -> Part:
    return Part(
        title=f"{title}:",
        lines=[memory_line(row, with_category=with_category) for row in rows],
        items=rows,
    )


def _limit(value: int | None, req: ContextRequest) -> int:
    """The client's limit, else what the budget could hold (a memory line is rarely under 25
    tokens), at most CONTEXT_ALL_CANDIDATES: fetching more only costs time."""
    if value is not None:
        return value
    budget = context_config().all_max_tokens if req.max_tokens is None else req.max_tokens
    return max(5, min(context_config().all_candidates, budget // 25))


def _episodic(tenant: Tenant, req: ContextRequest, call: Call) -> Part:
    if not req.user_id:
        raise ApplicationError(
            "episodic memory needs a user_id", fields={"user_id": ["Required for episodic."]}
        )
    filters = SearchFilters(user_id=req.user_id, kind="episodic", namespace=req.namespace)
    rows = search_memories(
        tenant=tenant,
        query=req.query,
        filters=filters,
        limit=_limit(req.episodic_limit, req),
        call=call,
        part="episodic",
        time_query=TimeQuery(now=req.now, mode=req.query_time),
    )
    return _memories_part("What you know about the user", rows, with_category=False)


def _semantic(tenant: Tenant, req: ContextRequest, call: Call) -> Part:
    filters = SearchFilters(user_id="", kind="semantic", namespace=req.namespace)
    rows = search_memories(
        tenant=tenant,
        query=req.query,
        filters=filters,
        limit=_limit(req.semantic_limit, req),
        call=call,
        part="semantic",
        # Knowledge has no event dates: a time in the question is the episodes' business.
        time_query=TimeQuery(mode="off"),
    )
    return _memories_part("Relevant knowledge", rows, with_category=True)


def _procedural(tenant: Tenant, req: ContextRequest, call: Call) -> Part:
    suggestion = procedure_suggest(tenant=tenant, query=req.query, user_id=req.user_id)
    proc = suggestion.procedure
    if proc is None:
        return Part(items_key="procedures", extra={"recommendation": None})
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
    part = Part(items_key="procedures", extra={"recommendation": recommendation})
    if suggestion.recommended:
        part.lines.append(
            f"A tool sequence that worked for similar requests: {' -> '.join(map(str, proc.tool_sequence))} "
            f"(confidence {suggestion.confidence:.2f} over {proc.execution_count} runs)."
        )
        part.items.append(recommendation)
    return part


@functools.lru_cache(maxsize=16384)
def _line_tokens(text: str) -> int:
    """tiktoken's count, remembered per text: packing counts each candidate line up to three times
    a call (its share, the flow of unused budget, the final trim), and the same memories come
    back call after call. Exact, since a text's count never changes."""
    return count_tokens(text)


# In priority order: what a part leaves of its share goes first to the parts listed first.
PARTS: dict[str, Callable[[Tenant, ContextRequest, Call], Part]] = {
    "episodic": _episodic,
    "short_term": _short_term,
    "semantic": _semantic,
    "procedural": _procedural,
}
# The order of the parts in the formatted text.
SHOWN = ("short_term", "semantic", "episodic", "procedural")
# The order the parts run in: the short-term part needs no vector, so it runs while the model
# computes the query's (as does the episodic search's full-text step).
RUN = ("short_term", "episodic", "semantic", "procedural")


def context_all(*, tenant: Tenant, request: ContextRequest) -> ContextResult:
    budget = context_config().all_max_tokens if request.max_tokens is None else request.max_tokens
    result = ContextResult(max_tokens=budget)
    call = Call()
    began = time.perf_counter()
    if request.include_episodic or request.include_semantic:
        # Embedded once for both searches (each would otherwise look the text up in the embedding
        # cache again), started now and waited for by the first search that needs the vector. A
        # failure makes each search degrade on its own.
        call.embedding = QueryEmbedding(request.query, tenant)
    began = _lap(call, "embedding", began)
    found: dict[str, Part] = {}
    try:
        for name in RUN:
            if not getattr(request, f"include_{name}"):
                continue
            try:
                with _part_block(read_alias()):
                    found[name] = PARTS[name](tenant, request, call)
            except ApplicationError as exc:
                result.errors.append({"part": name, "code": exc.code, "message": exc.message})
            except Exception as exc:  # one failed part (embedding provider, database) never fails the call
                if replica_failure(exc):
                    raise  # run_read answers the whole call from the primary instead
                logger.warning("context part %s failed: %s", name, exc, exc_info=True)
                result.errors.append(
                    {"part": name, "code": "unavailable", "message": f"{type(exc).__name__}: {exc}"}
                )
            began = _lap(call, name, began)
    finally:
        if call.embedding is not None:
            # The query's cache row, outside the parts' read transactions (none waits for it).
            call.embedding.finish()
            began = _lap(call, "embedding.cache", began)
    result.errors.sort(key=lambda error: list(PARTS).index(error["part"]))  # in priority order
    composed = _compose(found, budget)
    while _drop_repeats(found, composed):  # ends: each round drops at least one line
        composed = _compose(found, budget)
    for name, drafted in found.items():
        packed = composed.parts[name]
        setattr(result, name, drafted.payload(packed.indices, packed.text, packed.tokens))
    result.formatted = composed.text
    result.tokens = {name: composed.parts[name].tokens if name in found else 0 for name in SHOWN}
    result.tokens["total"] = composed.tokens
    _lap(call, "packing", began)
    result.timings_ms = call.timings_ms
    result.time_window = call.time_window
    return result


def shown_memory_ids(result: ContextResult) -> list[int]:
    """The long-term memories the answer shows (episodic and semantic parts, each with the rows a
    collapsed line stands for): what counts as accessed."""
    ids: list[int] = []
    for part in (result.episodic, result.semantic):
        for item in (part or {}).get("memories", ()):
            ids += [item["id"], *item.get("member_ids", ())]
    return ids


def _compose(found: dict[str, Part], budget: int) -> Composed:
    return compose(
        {
            name: PartLines(found[name].lines, found[name].title, found[name].display)
            for name in SHOWN
            if name in found
        },
        budget=budget,
        shares=context_config().all_shares,
        count=_line_tokens,
        priority=list(PARTS),
    )


# Which part keeps a text two parts hold: the conversation shows it as said, then the user's
# memories, then shared knowledge.
HOLDS_FIRST = ("short_term", "episodic", "semantic")


def _text_keys(item: dict[str, Any]) -> set[str]:
    """The forms under which a line's text may be repeated by another part: a memory's text, a
    message's content with and without its speaker (memories kept as said carry the speaker)."""
    if "text" in item:
        return {normalize_text(item["text"])}
    if item.get("role") == "summary":
        return set()
    content = normalize_text(item.get("content") or "")
    return {content, normalize_text(f"{item.get('speaker') or item.get('role')}: {content}")}


def _drop_repeats(found: dict[str, Part], composed: Composed) -> bool:
    """Drops from each part the lines whose text a part before it (HOLDS_FIRST) shows in
    `composed`, so the budget is never spent twice on one text; True when any was dropped (the
    parts are then composed again, and the freed tokens go to other lines)."""
    held: set[str] = set()
    dropped = False
    for name in HOLDS_FIRST:
        part = found.get(name)
        if part is None:
            continue
        shown = set(composed.parts[name].indices)
        lines, items, shown_keys = [], [], set()
        for index, (line, item) in enumerate(zip(part.lines, part.items, strict=True)):
            keys = _text_keys(item)
            if keys & held:
                dropped = True
                continue
            lines.append(line)
            items.append(item)
            if index in shown:
                shown_keys |= keys
        part.lines, part.items = lines, items
        held |= shown_keys
    return dropped


def _part_block(alias: str) -> AbstractContextManager[Any]:
    """Inside a caller's transaction a part runs in a savepoint, so that a part that fails leaves
    the transaction usable. On its own a part's statements commit one by one: a part only reads,
    and under READ COMMITTED each statement takes its own snapshot anyway, so a transaction of its
    own would add BEGIN and COMMIT round trips (8 of a call's 22 statements) and nothing else."""
    if connections[alias].in_atomic_block:
        return transaction.atomic(using=alias)
    return nullcontext()


def _lap(call: Call, name: str, began: float) -> float:
    now = time.perf_counter()
    call.timings_ms[name] = round((now - began) * 1000, 3)
    return now
