"""The write path: `memory_store` stores new memories without losing or duplicating a fact.

Per new memory, in its scope (tenant, user_id, namespace, kind):
1. the normalised-text hash matches an active row → that row (`duplicate_of`), access bumped; a
   message kept as said whose text was merged into a clean fact → that fact;
2. candidates: active neighbours within the loose radius (selectors.store.neighbours, scope-aware plan);
3. the relation judge labels each candidate, `decide()` picks the action;
4. merge (duplicate/refine: the new memory and that one candidate, when the kept text states every
   number and name of both, else review), supersede (update), store (distinct), or store + review
   queue (unsure), always through services.lineage so no row is ever deleted.
A transaction-scoped advisory lock per scope makes check+act atomic against concurrent stores of the
same scope; the partial unique constraint `memory_active_text_unique` backs exact duplicates.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from django.db import DEFAULT_DB_ALIAS, IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from memory_app.db import advisory_xact_lock, fetch_all_prepared
from memory_app.db.conflicts import retry_on_conflict
from memory_app.embeddings import EmbeddingJob, embed_texts_begin, embedding_model_name
from memory_app.errors import ApplicationError
from memory_app.judge import JudgeItem, Judgement, RelationJudge, get_judge
from memory_app.judge.base import DecidingJudge
from memory_app.judge.merge import AS_SAID, choose_merge_text
from memory_app.judge.policy import Decision, decide
from memory_app.models import Memory, Tenant
from memory_app.models.lineage import ChangeOperation
from memory_app.models.memory import MemoryStatus
from memory_app.overrides import StoreOverrides
from memory_app.selectors.store.neighbours import Neighbour, Scope, neighbour_origin, scope_neighbours
from memory_app.selectors.store.tokens import memory_tokens_source
from memory_app.services.actors import Actor
from memory_app.services.quotas import memory_quota_check, memory_quota_note
from memory_app.services.rows import locks
from memory_app.services.rows.memories import memory_build, memory_touch
from memory_app.services.rows.tokens import memory_tokens_save
from memory_app.services.store.actions import act_on_decision, is_merge, merge_new, unmergeable
from memory_app.services.store.config import DedupConfig, resolve_dedup_config
from memory_app.services.store.embedding_backfill import (
    embedding_backfill_enqueue,
    memories_embedding_pending,
)
from memory_app.services.store.types import MemoryInput, StoreOutcome
from memory_app.services.store.validation import store_items_validate
from memory_app.text import normalized_hash

logger = logging.getLogger(__name__)
# A candidate deleted, purged or merged by a writer outside the scope lock after it was read: the
# new memory does not depend on it, so it is stored on its own ("created"), as compaction does when
# a member drops out. The savepoint around the action makes the transaction usable again.
CANDIDATE_GONE = (ApplicationError, IntegrityError)
# Outcomes whose memory_id is the row inserted with the item's text.
INSERTED_OUTCOMES = frozenset({"created", "superseded", "queued_for_review"})
# Outcomes that add an active memory (a supersede replaces one): what the memory quota counts.
ADDED_OUTCOMES = frozenset({"created", "queued_for_review"})


def scope_of(item: MemoryInput) -> Scope:
    return Scope(user_id=item.user_id, namespace=item.namespace, kind=item.kind)


def about_of(item: MemoryInput) -> str:
    """The person a memory is about (conversation ingestion's `metadata.about`), "" when none."""
    about = item.metadata.get("about") if isinstance(item.metadata, dict) else None
    return about if isinstance(about, str) else ""


def scope_lock_key(tenant: Tenant, scope: Scope) -> int:
    """The scope's advisory-lock key, from the one formula in services.locks that compaction uses
    too, so the store path and compaction exclude each other."""
    return locks.scope_lock_key(
        tenant_id=tenant.pk, user_id=scope.user_id, namespace=scope.namespace, kind=scope.kind
    )


def _embed(
    items: Sequence[MemoryInput], tenant: Tenant
) -> tuple[list[np.ndarray | None], EmbeddingJob | None]:
    """One embed call for the items without a vector, and the call itself, to be finished once the
    batch is stored (`finish(held=...)`: the texts it inserted get no cache row of their own). A
    provider failure degrades: the memory is still stored (hash dedup only, no vector), its outcome
    says `embedding_pending` and a task fills the vector in (services/store/embedding_backfill.py)."""
    vectors: list[np.ndarray | None] = [item.embedding for item in items]
    missing = [i for i, v in enumerate(vectors) if v is None]
    if not missing:
        return vectors, None
    try:
        job = embed_texts_begin([items[i].text for i in missing], tenant=tenant)
        computed = job.vectors()
    except Exception:
        logger.warning("embedding failed for %d memories; storing them without vectors", len(missing))
        return vectors, None
    for i, vector in zip(missing, computed, strict=True):
        vectors[i] = np.asarray(vector, dtype=np.float32)
    return vectors, job


def memory_store(
    *,
    tenant: Tenant,
    items: list[MemoryInput],
    options: StoreOverrides | None = None,
    actor: Actor | None = None,
    judge: RelationJudge | None = None,
) -> list[StoreOutcome]:
    """Store a batch; one outcome per item in input order. Items of one batch dedup against each other.

    `judge`: a RelationJudge instance used instead of `get_judge(name)` (evaluating another judge).

    The whole batch is validated first (nothing is written if one item is bad) and embedded in one
    call outside the transaction; then one transaction takes the scopes' locks in a fixed order (so two
    batches can never deadlock) and stores item after item.
    """
    cleaned = store_items_validate(items)
    memory_quota_check(tenant=tenant, adding=len(cleaned))
    vectors, job = _embed(cleaned, tenant)
    held: list[str] = []
    try:
        outcomes = _store_batch(
            tenant=tenant, items=cleaned, vectors=vectors, options=options, actor=actor, judge=judge
        )
        # The texts stored with the vectors this call computed: their memory rows answer the
        # embedding cache for them (a text given with its own vector was not computed here).
        held = [
            item.text
            for item, outcome in zip(cleaned, outcomes, strict=True)
            if outcome.outcome in INSERTED_OUTCOMES and item.embedding is None
        ]
    finally:
        if job is not None:
            job.finish(held=held)
    memory_quota_note(tenant=tenant, added=sum(o.outcome in ADDED_OUTCOMES for o in outcomes))
    if all(vector is not None for vector in vectors):
        return outcomes
    return _pending_marked(tenant, outcomes)


def _pending_marked(tenant: Tenant, outcomes: list[StoreOutcome]) -> list[StoreOutcome]:
    """Say which outcomes' memories are stored without a vector, and queue their fill."""
    pending = memories_embedding_pending(tenant=tenant, memory_ids=[o.memory_id for o in outcomes])
    embedding_backfill_enqueue(memory_ids=pending)
    return [replace(o, embedding_pending=True) if o.memory_id in pending else o for o in outcomes]


@retry_on_conflict
@transaction.atomic
def _store_batch(
    *,
    tenant: Tenant,
    items: list[MemoryInput],
    vectors: list[np.ndarray | None],
    options: StoreOverrides | None,
    actor: Actor | None,
    judge: RelationJudge | None,
) -> list[StoreOutcome]:
    model = embedding_model_name(tenant)
    advisory_xact_lock(*(scope_lock_key(tenant, scope_of(item)) for item in items))
    configs: dict[str, DedupConfig] = {}
    outcomes = []
    for item, vector in zip(items, vectors, strict=True):
        if item.agent_id not in configs:
            configs[item.agent_id] = resolve_dedup_config(
                tenant=tenant, agent_id=item.agent_id, options=options, model=model
            )
        outcomes.append(
            _store_one(
                tenant=tenant,
                item=item,
                vector=vector,
                config=configs[item.agent_id],
                model=model,
                actor=actor,
                judge=judge,
            )
        )
    # The token vectors of the texts this batch inserted (a merge writes its own with its rows).
    memory_tokens_save(
        tenant=tenant,
        memories=[
            (outcome.memory_id, item.text)
            for item, outcome in zip(items, outcomes, strict=True)
            if outcome.outcome in INSERTED_OUTCOMES
        ],
    )
    return outcomes


def _same_text(tenant: Tenant, item: MemoryInput, *, status: str) -> QuerySet[Memory]:
    """The rows of the item's scope with its text (normalised hash) and this status."""
    return Memory.objects.filter(
        tenant=tenant,
        user_id=item.user_id,
        namespace=item.namespace,
        kind=item.kind,
        status=status,
        text_hash=normalized_hash(item.text),
    )


# The active row of the item's scope with its text, if any (memory_active_text_unique: at most one),
# read as `_same_text(...).only("id", "topics", "entities").first()` would read it: prepared, as
# every store asks it (building and planning that queryset: 1.2 ms against 0.12, timed alone).
_ACTIVE_TWIN = (
    f"SELECT id, topics, entities FROM {Memory._meta.db_table} WHERE tenant_id = %s AND text_hash = %s "
    "AND user_id = %s AND namespace = %s AND kind = %s AND status = 'active' ORDER BY id LIMIT 1"
)


def _active_twin(tenant: Tenant, item: MemoryInput) -> Memory | None:
    rows = fetch_all_prepared(
        _ACTIVE_TWIN,
        [tenant.pk, normalized_hash(item.text), item.user_id, item.namespace, item.kind],
        using=DEFAULT_DB_ALIAS,
    )
    return Memory.from_db(DEFAULT_DB_ALIAS, ["id", "topics", "entities"], rows[0]) if rows else None


def _merged_twin(tenant: Tenant, item: MemoryInput) -> Memory | None:
    """For a message kept as said: the active memory a row with the same text was merged into.
    A merge may keep the clean fact drawn from a message rather than the message's own words
    (judge.merge.choose_merge_text); the same message said again is then that fact, not a new row."""
    if (item.metadata or {}).get("extracted_by") != AS_SAID:
        return None
    result = (
        _same_text(tenant, item, status=MemoryStatus.SUPERSEDED)
        .filter(
            # Each joined table names the tenant: on Citus the joins by id then run on its shard.
            superseded_by__tenant=tenant,
            superseded_by__status=MemoryStatus.ACTIVE,
            source_of__change__tenant=tenant,
            source_of__change__operation=ChangeOperation.MERGE,
            source_of__change__undone_at__isnull=True,
        )
        .values_list("superseded_by", flat=True)
        .first()
    )
    if result is None:
        return None
    return Memory.objects.filter(tenant=tenant, pk=result).only("id", "topics", "entities").first()


def _duplicate_of(tenant: Tenant, existing: Memory, item: MemoryInput) -> StoreOutcome:
    """Same text: count the access, and keep any topic or entity the new copy adds."""
    memory_touch(tenant=tenant, memory_ids=[existing.pk])
    topics = sorted(set(existing.topics) | set(item.topics))
    entities = sorted(set(existing.entities) | set(item.entities))
    if topics != sorted(existing.topics) or entities != sorted(existing.entities):
        Memory.objects.filter(tenant=tenant, pk=existing.pk).update(
            topics=topics, entities=entities, updated_at=timezone.now()
        )
    return StoreOutcome(outcome="duplicate_of", memory_id=existing.pk, relation="duplicate", confidence=1.0)


def build_item(*, tenant: Tenant, item: MemoryInput, vector: np.ndarray | None, model: str) -> Memory:
    return memory_build(
        tenant=tenant,
        text=item.text,
        kind=item.kind,
        embedding=vector,
        embedding_model=model,
        user_id=item.user_id,
        agent_id=item.agent_id,
        namespace=item.namespace,
        session_id=item.session_id,
        topics=item.topics,
        entities=item.entities,
        event_type=item.event_type,
        event_date=item.event_date,
        context=item.context,
        category=item.category,
        fact_type=item.fact_type,
        source=item.source,
        metadata=dict(item.metadata),
        confidence=item.confidence,
        pinned=item.pinned,
        expires_at=item.expires_at,
    )


@dataclass(frozen=True)
class _Inserted:
    memory: Memory | None
    twin: StoreOutcome | None


def _insert_or_twin(*, tenant: Tenant, item: MemoryInput, vector: np.ndarray | None, model: str) -> _Inserted:
    """Insert; if a writer that bypassed the scope lock won the unique text slot, return its row."""
    try:
        with transaction.atomic():
            memory = build_item(tenant=tenant, item=item, vector=vector, model=model)
            memory.save(force_insert=True)
            return _Inserted(memory, None)
    except IntegrityError:
        existing = _active_twin(tenant, item)
        if existing is None:
            raise
        return _Inserted(None, _duplicate_of(tenant, existing, item))


def _store_one(
    *,
    tenant: Tenant,
    item: MemoryInput,
    vector: np.ndarray | None,
    config: DedupConfig,
    model: str,
    actor: Actor | None,
    judge: RelationJudge | None,
) -> StoreOutcome:
    """Store one item; what did not go as usual (a judge that fell back or failed) rides along
    in the outcome's warnings, so the caller's response says so."""
    warnings: list[str] = []
    outcome = _store_decided(
        tenant=tenant,
        item=item,
        vector=vector,
        config=config,
        model=model,
        actor=actor,
        judge=judge,
        warnings=warnings,
    )
    return replace(outcome, warnings=(*outcome.warnings, *warnings)) if warnings else outcome


def _judge_warnings(decision: tuple[Decision, list[Judgement]] | None, config: DedupConfig) -> list[str]:
    if decision is None:
        return [f"judge_failed: the {config.judge} relation judge failed; stored without deduplication"]
    fallbacks = {j.fallback for j in decision[1] if j.fallback}
    return [f"judge_fallback: {reason}" for reason in sorted(fallbacks)]


def _store_decided(
    *,
    tenant: Tenant,
    item: MemoryInput,
    vector: np.ndarray | None,
    config: DedupConfig,
    model: str,
    actor: Actor | None,
    judge: RelationJudge | None,
    warnings: list[str],
) -> StoreOutcome:
    existing = _active_twin(tenant, item) or _merged_twin(tenant, item)
    if existing is not None:
        return _duplicate_of(tenant, existing, item)
    neighbours: list[Neighbour] = []
    if config.deduplicate and vector is not None:
        neighbours = scope_neighbours(
            tenant=tenant,
            scope=scope_of(item),
            embedding=vector,
            k=config.k,
            radius=config.candidate_radius,
            about=about_of(item),
        )
    decision = None
    if neighbours:
        decision = _judge(
            tenant=tenant, item=item, vector=vector, neighbours=neighbours, config=config, judge=judge
        )
        warnings.extend(_judge_warnings(decision, config))
    if decision is not None and is_merge(decision[0]):
        index = decision[0].index
        assert index is not None, "a merge decision names its candidate (is_merge)"
        target = neighbours[index]
        judgement = decision[0].judgement
        assert judgement is not None, "a merge decision carries its judgement (is_merge)"
        origin = (item.metadata or {}).get("extracted_by", "")
        text = choose_merge_text(
            new=item.text,
            old=target.text,
            relation=judgement.relation,
            proposed=judgement.merged_text,
            new_origin=origin if isinstance(origin, str) else "",
            old_origin=lambda: neighbour_origin(tenant=tenant, neighbour=target),
        )
        if text is not None:
            try:
                with transaction.atomic():
                    return merge_new(
                        tenant=tenant,
                        new=build_item(tenant=tenant, item=item, vector=vector, model=model),
                        target=target,
                        decision=decision[0],
                        text=text,
                        actor=actor,
                    )
            except CANDIDATE_GONE:
                logger.info("store: merge candidate %s is gone; storing as new", target.memory_id)
                decision = None
        else:
            decision = (unmergeable(decision[0], new_text=item.text, target=target), decision[1])
    inserted = _insert_or_twin(tenant=tenant, item=item, vector=vector, model=model)
    if inserted.twin is not None:
        return inserted.twin
    new = inserted.memory
    assert new is not None
    if decision is None or decision[0].action == "store":
        return StoreOutcome(outcome="created", memory_id=new.pk, row=new)
    try:
        with transaction.atomic():
            return act_on_decision(
                tenant=tenant,
                new=new,
                neighbours=neighbours,
                decision=decision[0],
                actor=actor,
            )
    except CANDIDATE_GONE:
        logger.info("store: candidate of memory %s is gone; kept as created", new.pk)
        return StoreOutcome(outcome="created", memory_id=new.pk)


def _judge(
    *,
    tenant: Tenant,
    item: MemoryInput,
    vector: np.ndarray | None,
    neighbours: list[Neighbour],
    config: DedupConfig,
    judge: RelationJudge | None,
) -> tuple[Decision, list[Judgement]] | None:
    """The judge's decision, or None (plain store) when the judge itself fails: a write is never
    dropped because of a judge (the LLM judge already falls back to the offline one by itself)."""

    new_item = JudgeItem(text=item.text, embedding=vector, created_at=timezone.now())
    candidates = [
        JudgeItem(
            text=n.text,
            created_at=n.created_at,
            memory_id=n.memory_id,
            distance=n.distance,
        )
        for n in neighbours
    ]
    try:
        if judge is None:
            judge = get_judge(config.judge)
        # The candidates' stored token vectors stand in for a forward pass of the token model.
        with memory_tokens_source(tenant=tenant, memories=[(n.memory_id, n.text) for n in neighbours]):
            if isinstance(judge, DecidingJudge):
                # Only the decision is acted on: pairs that cannot change it are not read further.
                judgements = judge.judge_for_decision(new_item, candidates, review_below=config.review_below)
            else:
                judgements = judge.judge(new_item, candidates)
        return decide(judgements, review_below=config.review_below), judgements
    except Exception:
        logger.warning("relation judge %r failed; storing without dedup", config.judge, exc_info=True)
        return None
