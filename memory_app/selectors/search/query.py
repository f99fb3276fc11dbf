"""`memory_search`: candidates (vector + BM25 full text) -> fuse -> decay -> ACE -> load-time dedup
-> DBSCAN clustering -> MMR. The ranking steps are pure functions in memory_app/retrieval/.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.utils import timezone

from memory_app.conf import search_config
from memory_app.embeddings import (
    EmbeddingJob,
    embed_texts_begin,
    query_embedding_starts_beside,
    vector_dimensions,
)
from memory_app.errors import ApplicationError
from memory_app.judge import RelationJudge, get_judge
from memory_app.judge.calibration.params import load_calibration
from memory_app.judge.facts import kept_readings, readings_given
from memory_app.models import Memory, Tenant
from memory_app.retrieval import decay, fusion
from memory_app.retrieval.pipeline import Entry, run_pipeline
from memory_app.selectors.search.beside import Beside, run_beside
from memory_app.selectors.search.candidates import (
    forget_indexed_scopes,
    forget_large_scopes,
    fulltext_candidates,
    one_count_per_scope,
    vector_candidate_rows,
)
from memory_app.selectors.search.lexical import bm25_candidates, forget_scope_stats, forget_table_frequencies
from memory_app.selectors.search.options import MODES, ResolvedOptions, SearchOptions, resolve_options
from memory_app.selectors.search.rows import (
    LEXICAL_COLUMNS,
    RANK_COLUMNS,
    CandidateRow,
    MemberRow,
    candidate_rows_of,
    hits_of,
    lexical_rows,
    member_rows,
    similarities_of,
)
from memory_app.selectors.search.time_window import (
    AppliedWindow,
    TimeQuery,
    window_factors,
    window_filters,
    window_resolve,
)
from memory_app.selectors.search.types import Candidate, SearchFilters
from memory_app.selectors.store.tokens import memory_tokens_source

log = logging.getLogger(__name__)
DAY = 86400.0

__all__ = [
    "SearchFilters",
    "SearchHit",
    "SearchOptions",
    "SearchResult",
    "TimeQuery",
    "memory_search",
]


@dataclass
class SearchHit:
    memory: Memory  # the best-ranked member (its row, without the vector)
    score: float
    text: str  # display text: the best-ranked member's own text (also for a dedup group)
    member_ids: list[int]  # every memory this entry stands for, best first (one unless deduplicated)
    cluster: int | None = None  # DBSCAN label among the results; None for noise or when off
    vector_score: float | None = None  # cosine similarity to the query
    lexical_score: float | None = None  # BM25 (or ts_rank) of the query
    # How well the text matches the query on an absolute scale: the weighted fusion of cosine
    # similarity and BM25 before time and feedback weigh in (or the cosine alone in vector mode).
    # None where no such scale exists (rank fusion, or full text only): what /context's relevance
    # floor compares.
    relevance: float | None = None


@dataclass
class SearchResult:
    hits: list[SearchHit]
    mode: str
    stats: dict[str, Any] = field(default_factory=dict)
    # What this search could not do, said to the caller ("query_embedding_failed: fulltext only").
    degraded: list[str] = field(default_factory=list)
    # The window of event dates the query's time expression named, and how it applied.
    time_window: AppliedWindow | None = None


QUERY_EMBEDDING_FAILED = "query_embedding_failed: fulltext only"


class _Phases:
    """Milliseconds per step of one search (stats["phases_ms"]): where a slow search spends its time."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.ms[name] = round((now - self._last) * 1000, 3)
        self._last = now


class QueryEmbedding:
    """The query's vector, started before it is needed: the local model runs on its batcher's thread
    while a hybrid search reads full text (BM25 needs no vector); a remote provider is looked up in
    the embedding cache and called at once (`cached_embed_begin(query=True)`). `get()` waits for it;
    None when the provider failed (search then runs on full text only, never a 500). `finish()`
    records its statistics and a remote provider's cache row: a caller holding a read transaction
    (/context/all's parts) calls it after that transaction rather than inside it."""

    def __init__(self, query: str, tenant: Tenant) -> None:
        self._job: EmbeddingJob | None = None
        self._vector: np.ndarray | None = None
        try:
            self._job = embed_texts_begin([query], tenant=tenant, query=True)
        except Exception as exc:  # a failed provider degrades search to full text, never a 500
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        log.warning("query embedding failed (%s); searching full text only", exc)
        self._job = None

    def get(self) -> np.ndarray | None:
        if self._vector is None and self._job is not None:
            try:
                self._vector = np.asarray(self._job.vectors()[0], dtype=np.float32)
            except Exception as exc:
                self._failed(exc)
        return self._vector

    def finish(self) -> None:
        if self._job is not None and self.get() is not None:
            try:
                self._job.finish()
            except Exception as exc:  # the vector is there; only its cache row was not written
                log.warning("query embedding not cached (%s)", exc)


def search_caches_forget() -> None:
    """Forget what this process remembers of scopes and tables (sizes, BM25 statistics, partial
    indexes): for a process that moves to another database, where the same scope is another."""
    forget_scope_stats()
    forget_table_frequencies()
    forget_large_scopes()
    forget_indexed_scopes()


def query_embedding_of(query: str, tenant: Tenant) -> np.ndarray | None:
    """The query's vector, or None when the provider fails (search then runs on full text only)."""
    pending = QueryEmbedding(query, tenant)
    vector = pending.get()
    pending.finish()
    return vector


def _lexical(
    *, tenant: Tenant, filters: SearchFilters, query: str, k: int, opts: ResolvedOptions
) -> list[Candidate]:
    """The full-text candidates, each with its row (LEXICAL_COLUMNS) read by the same statement."""
    if opts.lexical == "ts_rank":
        return fulltext_candidates(tenant=tenant, filters=filters, query=query, k=k, columns=LEXICAL_COLUMNS)
    return bm25_candidates(
        tenant=tenant,
        filters=filters,
        query=query,
        k=k,
        k1=search_config().bm25_k1,
        b=search_config().bm25_b,
        weight_b=search_config().context_weight,
        columns=LEXICAL_COLUMNS,
    )


def _fuse(
    ids: list[int], cosine: dict[int, float], lexical: list[Candidate], mode: str, opts: ResolvedOptions
) -> dict[int, float]:
    lexical_scores = {c.memory_id: c.score for c in lexical}
    if mode == "vector":
        return {i: cosine[i] for i in ids if i in cosine}
    if mode == "fulltext" or not cosine:
        return dict(lexical_scores)
    if opts.fusion == "rrf":
        vector_rank = sorted(cosine, key=lambda i: -cosine[i])
        return fusion.rrf_scores(
            [vector_rank, [c.memory_id for c in lexical]],
            k=search_config().rrf_k,
            weights=[opts.vector_weight, 1.0 - opts.vector_weight],
        )
    # Weighted: cosine similarity as it is (clipped at 0) and BM25 over its maximum (a row without
    # any query word scores 0, as BM25 itself says). Min-max on the cosine measured the same on
    # LoCoMo but turns the second of two candidates into a zero.
    top = max(lexical_scores.values(), default=0.0)
    w = opts.vector_weight
    return {
        i: w * max(cosine.get(i, 0.0), 0.0) + (1 - w) * (lexical_scores.get(i, 0.0) / top if top else 0.0)
        for i in ids
    }


def fetch_size(limit: int, *, deduplicate: bool, margin: int) -> int:
    """How many ranked rows a search reads for `limit` entries: with load-time dedup, up to twice
    the limit more (collapsed duplicates, clusters and MMR fill in from them), at most `margin`
    more. At /context/all's 60 hits, 180 rows cost the collapse twice the judged pairs of 120
    for the same evidence recall on LoCoMo (docs/PERFORMANCE.md)."""
    return limit + min(2 * limit, margin) if deduplicate else limit


def memory_search(
    *,
    tenant: Tenant,
    query: str,
    filters: SearchFilters,
    limit: int = 10,
    mode: str = "hybrid",
    options: SearchOptions | None = None,
    query_embedding: np.ndarray | QueryEmbedding | None = None,
    row_fields: tuple[str, ...] | None = None,
    time_query: TimeQuery | None = None,
) -> SearchResult:
    """The best `limit` entries for `query` in the filtered scope of `tenant`.

    `query_embedding`: the query's vector, or its QueryEmbedding, when the caller has started it
    (/context/all embeds the question once for all its parts, and finishes it itself); None embeds
    it here. `row_fields`: the only fields of each hit's row the caller reads (None: all but the
    vector); building whole model instances of 60 rows cost /context/all several milliseconds.
    `time_query`: how a time expression in the query applies (selectors/search/time_window.py)."""
    _check_mode(mode)
    if limit <= 0:
        return SearchResult(hits=[], mode=mode)
    started = time.perf_counter()
    window = window_resolve(query, time_query)
    filters = window_filters(filters, window)
    opts = resolve_options(tenant=tenant, agent_id=filters.agent_id, options=options)
    fetch = fetch_size(limit, deduplicate=opts.deduplicate, margin=search_config().fetch_margin)
    k = max(fetch, opts.candidates)

    phases = _Phases()
    found = _gather_candidates(
        tenant=tenant,
        query=query,
        filters=filters,
        mode=mode,
        opts=opts,
        k=k,
        query_embedding=query_embedding,
        phases=phases,
    )
    vector, lexical, effective_mode, rows = found.vector, found.lexical, found.mode, found.rows
    ids = list(dict.fromkeys([c.memory_id for c in vector] + [c.memory_id for c in lexical]))
    ids = [i for i in ids if i in rows]  # a row deleted since a candidate statement found it
    cosine = found.cosine
    fused = _fuse(ids, cosine, lexical, effective_mode, opts)

    ranked, scores = _rank(tenant=tenant, fused=fused, rows=rows, opts=opts, window=window, fetch=fetch)
    phases.lap("rank")
    members, scores = _members(tenant=tenant, ranked=ranked, scores=scores, fields=row_fields)
    phases.lap("member_rows")
    entries = _post_process(tenant, members, scores, opts, limit)
    phases.lap("post_process")
    hits = _with_rows(entries=entries, members=members, fields=row_fields)
    phases.lap("hits")
    absolute = bool(cosine) and (
        effective_mode == "vector" or (effective_mode == "hybrid" and opts.fusion == "weighted")
    )
    _score_hits(hits=hits, cosine=cosine, lexical=lexical, fused=fused, absolute=absolute)
    stats = {
        "candidates": len(ids),
        "vector_candidates": len(vector),
        "lexical_candidates": len(lexical),
        "elapsed_ms": round((time.perf_counter() - started) * 1000, 2),
        "phases_ms": phases.ms,
    }
    return SearchResult(
        hits=hits, mode=effective_mode, stats=stats, degraded=found.degraded, time_window=window
    )


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ApplicationError(
            f"mode must be one of {', '.join(MODES)}",
            code="invalid",
            status=400,
            fields={"mode": [f"unknown mode {mode!r}"]},
        )


@dataclass
class _Found:
    """A search's candidates, the query vector they were found with, and the mode that ran."""

    vector: list[Candidate]
    lexical: list[Candidate]
    rows: dict[int, CandidateRow]  # every candidate's row
    cosine: dict[int, float]  # each candidate's similarity to the query, where it has a vector
    embedding: np.ndarray | None
    mode: str  # the requested mode, or "fulltext" when the query could not be embedded
    degraded: list[str]


@dataclass
class _RowsSoFar:
    """The candidates' rows and similarities read so far, from whichever statement read them."""

    rows: dict[int, CandidateRow] = field(default_factory=dict)
    cosine: dict[int, float] = field(default_factory=dict)

    def add(self, rows: dict[int, CandidateRow], cosine: dict[int, float]) -> None:
        self.rows.update(rows)
        self.cosine.update(cosine)


def _nearest(
    *, tenant: Tenant, filters: SearchFilters, embedding: np.ndarray, k: int, read: _RowsSoFar
) -> list[Candidate]:
    """The vector candidates, their rows and similarities read in the same statement."""
    plan, found = vector_candidate_rows(
        tenant=tenant, filters=filters, query_embedding=embedding, k=k, columns=RANK_COLUMNS
    )
    read.add(candidate_rows_of((row[0], *row[2:]) for row in found), similarities_of(found))
    return [Candidate(memory_id=row[0], score=float(row[1]), plan=plan) for row in found]


def _start_embedding(
    *, mode: str, query: str, tenant: Tenant, query_embedding: np.ndarray | QueryEmbedding | None
) -> tuple[np.ndarray | None, QueryEmbedding | None]:
    """The query's vector when the caller gave it, else its pending embedding (none in fulltext)."""
    if mode not in ("vector", "hybrid"):
        return None, None
    if isinstance(query_embedding, QueryEmbedding):
        return None, query_embedding
    if query_embedding is not None:
        return query_embedding, None
    return None, QueryEmbedding(query, tenant)


def _start_halves(
    *,
    tenant: Tenant,
    query: str,
    mode: str,
    query_embedding: np.ndarray | QueryEmbedding | None,
    lexical: Callable[[], list[Candidate]],
) -> tuple[np.ndarray | None, QueryEmbedding | None, Beside[list[Candidate]] | None]:
    """The query's vector (given, or started) and, in a hybrid search, BM25 started beside it.

    BM25 needs no vector: it runs while the model computes the query's vector, on a connection of
    its own where one is free. The vector is started first when that returns at once (the local
    model, on its batcher's thread): its pass then has the GIL for its tokens before BM25's thread
    takes it to compose its statements, where started after BM25 it waited for them (a 100 k
    search, in-process: embedding wait 3.1 -> 2.7 ms, search 11.5 -> 10.6 ms). A remote provider
    answers inside the call, so BM25 is started before it."""
    vector_first = mode == "hybrid" and query_embedding is None and query_embedding_starts_beside(tenant)
    if vector_first:
        embedding, pending = _start_embedding(mode=mode, query=query, tenant=tenant, query_embedding=None)
    side: Beside[list[Candidate]] | None = None
    if mode == "hybrid":
        side = run_beside(lexical, inline_later=True)
    if not vector_first:
        embedding, pending = _start_embedding(
            mode=mode, query=query, tenant=tenant, query_embedding=query_embedding
        )
    return embedding, pending, side


def _gather_candidates(
    *,
    tenant: Tenant,
    query: str,
    filters: SearchFilters,
    mode: str,
    opts: ResolvedOptions,
    k: int,
    query_embedding: np.ndarray | QueryEmbedding | None,
    phases: _Phases,
) -> _Found:
    """The vector and full-text candidates; a query that could not be embedded searches full text."""
    read = _RowsSoFar()
    # BM25's plan and the vector plan both count the scope: once per search.
    with one_count_per_scope():
        embedding, pending, side = _start_halves(
            tenant=tenant,
            query=query,
            mode=mode,
            query_embedding=query_embedding,
            lexical=lambda: _lexical(tenant=tenant, filters=filters, query=query, k=k, opts=opts),
        )
        phases.lap("embedding")
        if side is not None:
            # Inline (inside a transaction, or every pool thread busy): now, while the model runs.
            side.run_inline()
            phases.lap("lexical")
        if pending is not None:
            embedding = pending.get()
            phases.lap("embedding_wait")
        degraded = [QUERY_EMBEDDING_FAILED] if embedding is None and mode != "fulltext" else []
        effective_mode = mode if embedding is not None or mode == "fulltext" else "fulltext"
        vector: list[Candidate] = []
        if embedding is not None:
            vector = _nearest(tenant=tenant, filters=filters, embedding=embedding, k=k, read=read)
        phases.lap("vector")
        if pending is not None and pending is not query_embedding:
            # Its statistics (and a remote provider's cache row): off the search's path where a
            # pool thread is free.
            run_beside(pending.finish, detached=True)
        if side is not None:
            lexical = side.result()
            phases.lap("lexical_wait")
        else:
            lexical = []
            if effective_mode in ("fulltext", "hybrid"):
                lexical = _lexical(tenant=tenant, filters=filters, query=query, k=k, opts=opts)
            phases.lap("lexical")
    # The full-text candidates' rows came with them; a vector candidate's similarity is
    # pgvector's own, so only those the vector statement did not find take theirs from here.
    read.add(*lexical_rows([c for c in lexical if c.memory_id not in read.rows], query_embedding=embedding))
    phases.lap("rows")
    rows, cosine = read.rows, read.cosine
    return _Found(
        vector=vector,
        lexical=lexical,
        rows=rows,
        cosine=cosine,
        embedding=embedding,
        mode=effective_mode,
        degraded=degraded,
    )


def _rank(
    *,
    tenant: Tenant,
    fused: dict[int, float],
    rows: dict[int, CandidateRow],
    opts: ResolvedOptions,
    window: AppliedWindow | None,
    fetch: int,
) -> tuple[list[CandidateRow], np.ndarray]:
    """The best `fetch` rows by fused score weighed by time, feedback and the time window, and
    their scores."""
    ordered = [i for i in fusion.ranked(fused) if i in rows]
    base = np.array([fused[i] for i in ordered], dtype=np.float64)
    scores = base * _time_and_feedback([rows[i] for i in ordered], opts)
    scores = scores * window_factors(tenant=tenant, ids=ordered, window=window)
    order = np.argsort(-scores, kind="stable")[:fetch]
    return [rows[ordered[i]] for i in order], scores[order]


def _score_hits(
    *,
    hits: list[SearchHit],
    cosine: dict[int, float],
    lexical: list[Candidate],
    fused: dict[int, float],
    absolute: bool,
) -> None:
    """Each hit's vector, lexical and (on an absolute scale only) relevance scores."""
    lexical_scores = {c.memory_id: c.score for c in lexical}
    for hit in hits:
        hit.vector_score = cosine.get(hit.memory.pk)
        hit.lexical_score = lexical_scores.get(hit.memory.pk)
        hit.relevance = fused.get(hit.memory.pk) if absolute else None
        hit.memory.embedding = None  # callers never need the vector: never load it lazily either


def _members(
    *, tenant: Tenant, ranked: list[CandidateRow], scores: np.ndarray, fields: tuple[str, ...] | None
) -> tuple[list[MemberRow], np.ndarray]:
    """The ranked rows with their texts, vectors and hit columns, in rank order, and their scores.
    A row deleted since the candidates were read is dropped (a moment later no search finds it)."""
    read = member_rows(tenant=tenant, ids=[row.pk for row in ranked], fields=fields)
    kept = [i for i, row in enumerate(ranked) if row.pk in read]
    return [read[ranked[i].pk] for i in kept], scores[kept]


def _with_rows(
    *, entries: list[Entry], members: list[MemberRow], fields: tuple[str, ...] | None
) -> list[SearchHit]:
    """The returned entries with their best members' rows as model instances (whole but without
    vectors, or only `fields`): only these are built."""
    best = hits_of([members[entry.members[0]] for entry in entries], fields=fields)
    return [
        SearchHit(
            memory=memory,
            score=float(entry.score),
            text=entry.text,
            member_ids=[members[i].pk for i in entry.members],
            cluster=entry.cluster,
        )
        for entry, memory in zip(entries, best, strict=True)
    ]


def _time_and_feedback(members: list[CandidateRow], opts: ResolvedOptions) -> np.ndarray:
    if not members:
        return np.ones(0)
    ages = timezone.now().timestamp() - np.array([m.created_epoch for m in members])
    time_factor = decay.decay_factors(
        ages, half_life_seconds=opts.half_life_days * DAY, floor=search_config().decay_floor
    )
    ace = decay.ace_factors(
        np.array([m.confidence for m in members]),
        np.array([m.helpful_count for m in members]),
        np.array([m.harmful_count for m in members]),
        confidence_weight=search_config().ace_confidence_weight,
        feedback_weight=search_config().ace_feedback_weight,
    )
    return time_factor * ace


def _embedding_matrix(members: list[MemberRow]) -> np.ndarray:
    dim = next((len(m.embedding) for m in members if m.embedding is not None), vector_dimensions())
    matrix = np.zeros((len(members), dim), dtype=np.float32)
    for row, m in enumerate(members):
        if m.embedding is not None:
            matrix[row] = np.asarray(m.embedding, dtype=np.float32)
    return matrix


def _post_process(
    tenant: Tenant, members: list[MemberRow], scores: np.ndarray, opts: ResolvedOptions, limit: int
) -> list[Entry]:
    """Load-time dedup, clustering and MMR over the fetched rows, then the first `limit` entries."""
    if not members:
        return []
    has_vectors = all(m.embedding is not None for m in members)
    judge: RelationJudge | None = None
    min_confidence = 0.0
    if opts.deduplicate:
        judge = get_judge("llm" if opts.dedup_use_llm else "offline")
        min_confidence = load_calibration().review_below
    # The judge reads the rows' stored token vectors rather than running the token model on them,
    # and the fact check their kept readings rather than reading their texts again.
    with (
        memory_tokens_source(tenant=tenant, memories=[(m.pk, m.text) for m in members]),
        readings_given(kept_readings((m.text, m.fact_reading) for m in members)),
    ):
        outcome = run_pipeline(
            texts=[m.text for m in members],
            embeddings=_embedding_matrix(members) if has_vectors else None,
            scores=scores,
            limit=limit,
            deduplicate=opts.deduplicate,
            dedup_threshold=opts.dedup_threshold,
            dedup_min_confidence=min_confidence,
            judge=judge,
            clustering=opts.clustering,
            epsilon=opts.dbscan_epsilon,
            min_points=opts.dbscan_min_points,
            mmr=opts.mmr,
            mmr_lambda=opts.mmr_lambda,
        )
    if outcome.stats is not None:
        log.info(outcome.stats.message())
    return outcome.entries
