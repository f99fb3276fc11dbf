"""Facts for injection into a prompt: ranked by relevance and confidence, packed into a token budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory_app.conf import context_config
from memory_app.db import fetch_all
from memory_app.embeddings.tokens import count_tokens
from memory_app.models import Memory, Tenant
from memory_app.retrieval.packing import pack
from memory_app.selectors.search.candidates import MEMORY_TABLE, filter_sql
from memory_app.selectors.search.query import TimeQuery, memory_search
from memory_app.selectors.search.time_window import AppliedWindow
from memory_app.selectors.search.types import SearchFilters

HEADER = "Relevant memories:"


@dataclass(frozen=True)
class ContextFact:
    memory: Memory
    text: str
    score: float
    similarity: float | None
    member_ids: list[int]


@dataclass(frozen=True)
class ContextResult:
    text: str
    facts: list[ContextFact]
    tokens: int
    query: str
    degraded: tuple[str, ...] = ()  # what the search underneath could not do (see SearchResult)
    time_window: AppliedWindow | None = None  # the query's time window (see SearchResult)


def conversation_query(messages: Sequence[dict[str, str]], *, user_turns: int = 3) -> str:
    """The last `user_turns` user messages and the assistant replies that follow them, in order."""
    user_positions = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not user_positions:
        start = max(0, len(messages) - 1)
    else:
        start = user_positions[-user_turns] if len(user_positions) >= user_turns else user_positions[0]
    return "\n".join(m.get("content", "") for m in messages[start:] if m.get("content"))


def _by_confidence(*, tenant: Tenant, filters: SearchFilters, k: int) -> list[Memory]:
    """The scope's most trusted rows: confidence, then net feedback, then newest."""
    where, params = filter_sql(tenant=tenant, filters=filters)
    rows = fetch_all(
        f"SELECT m.id FROM {MEMORY_TABLE} m WHERE {where} "
        "ORDER BY m.confidence DESC, m.helpful_count - m.harmful_count DESC, m.id DESC LIMIT %s",
        [*params, k],
    )
    ids = [row[0] for row in rows]
    by_id = Memory.objects.filter(tenant=tenant, pk__in=ids).defer("embedding", "search_vector").in_bulk()
    return [by_id[i] for i in ids if i in by_id]


def memory_context(
    *,
    tenant: Tenant,
    filters: SearchFilters,
    query: str = "",
    messages: Sequence[dict[str, str]] = (),
    user_turns: int = 3,
    max_tokens: int | None = None,
    model: str | None = None,
    time_query: TimeQuery | None = None,
) -> ContextResult:
    """Rank facts by similarity x w_s + confidence x w_c (confidence alone without any context)
    and pack them, best first, into `max_tokens` (never more). A fact whose similarity to the
    context is under CONTEXT_RELEVANCE_FLOOR is left out."""
    budget = context_config().max_tokens if max_tokens is None else max_tokens
    text = query.strip() or conversation_query(messages, user_turns=user_turns).strip()
    facts: list[ContextFact] = []
    degraded: tuple[str, ...] = ()
    window: AppliedWindow | None = None
    if text:
        # Similarity is the hybrid search's relevance on its absolute scale (weighted cosine and
        # BM25, see SearchHit.relevance), not scaled to the best hit: a query unrelated to every
        # memory must not make its least bad match look perfect. Below the floor nothing is injected.
        result = memory_search(
            tenant=tenant,
            query=text,
            filters=filters,
            limit=context_config().candidates,
            time_query=time_query,
        )
        degraded = tuple(result.degraded)
        window = result.time_window
        floor = context_config().relevance_floor
        for hit in result.hits:
            similarity = hit.relevance
            if similarity is not None and similarity < floor:
                continue
            # Without an absolute scale (full text only, rank fusion) the search's score stands in.
            relevance = max(hit.score if similarity is None else similarity, 0.0)
            score = (
                context_config().similarity_weight * min(relevance, 1.0)
                + context_config().confidence_weight * hit.memory.confidence
            )
            facts.append(ContextFact(hit.memory, hit.text, score, similarity, hit.member_ids))
        facts.sort(key=lambda fact: -fact.score)
    else:
        rows = _by_confidence(tenant=tenant, filters=filters, k=context_config().candidates)
        facts = [ContextFact(m, m.text, m.confidence, None, [m.pk]) for m in rows]
    packed = pack(
        [f"- {fact.text}" for fact in facts],
        budget=budget,
        count=lambda block: count_tokens(block, model),
        header=HEADER,
    )
    used = [facts[i] for i in packed.indices]
    return ContextResult(
        text=packed.text, facts=used, tokens=packed.tokens, query=text, degraded=degraded, time_window=window
    )
