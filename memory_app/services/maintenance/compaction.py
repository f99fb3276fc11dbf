"""Background compaction of a scope: find near-duplicate groups, let the relation judge resolve them.

Candidate finding and grouping run on a snapshot of the scope's vectors without any lock (pure
numpy in `memory_app.compaction`). Each group is then resolved in its own short transaction that
holds the scope's advisory lock (the one the store path takes) and re-reads the members: a member
the API merged or superseded meanwhile is no longer active and simply drops out, so a concurrent
store and compaction never merge the same rows twice or lose one.

Modes: "apply" merges and supersedes; "queue" (review-queue detection) puts every group the judge
did not call distinct into the review queue; "plan" (dry run) only reports what "apply" would do.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from django.db import transaction

from memory_app.compaction import cohesive_groups, find_pairs
from memory_app.conf import maintenance_config
from memory_app.embeddings import embedding_model_name
from memory_app.errors import ApplicationError
from memory_app.judge import get_judge
from memory_app.judge.base import JudgeItem, Judgement, RelationJudge
from memory_app.judge.calibration.params import load_calibration
from memory_app.judge.merge import keeps_everything, loses_facts, most_informative, stands_for
from memory_app.judge.policy import DecisionPolicy, decide
from memory_app.models import Memory, Tenant
from memory_app.models.memory import MemoryStatus
from memory_app.models.review import ClusterOrigin
from memory_app.selectors.compaction import ScopeKey, scope_vectors
from memory_app.selectors.review import kept_apart_pairs
from memory_app.selectors.store.tokens import memory_tokens_source
from memory_app.services.actors import Actor
from memory_app.services.lineage.changes import memory_merge, memory_supersede
from memory_app.services.review.queue import review_cluster_create
from memory_app.services.rows.locks import scope_lock

logger = logging.getLogger(__name__)

Mode = Literal["apply", "queue", "plan"]


@dataclass(frozen=True)
class PlannedAction:
    """One step of resolving a group. `memory_ids`: merge sources, or (old, new) for supersede."""

    action: Literal["merge", "supersede", "review"]
    memory_ids: tuple[int, ...]
    relation: str
    confidence: float
    judge: str
    text: str | None = None
    texts: tuple[str, ...] = ()


@dataclass
class ScopeReport:
    scope: ScopeKey
    rows: int = 0
    pairs_examined: int = 0
    pairs: int = 0
    groups: int = 0
    merged: int = 0
    superseded: int = 0
    queued: int = 0
    stale_groups: int = 0
    seconds: float = 0.0
    method: str = ""
    actions: list[PlannedAction] = field(default_factory=list)

    def counters(self) -> dict[str, Any]:
        names = ("rows", "pairs_examined", "pairs", "groups", "merged", "superseded", "queued")
        return {name: getattr(self, name) for name in (*names, "stale_groups")}


@dataclass(frozen=True)
class JudgeTools:
    """The relation judge and its policy, resolved once per run."""

    judge: RelationJudge
    decide: DecisionPolicy
    review_below: float
    radius: float


def judge_tools(*, judge_name: str | None = None, radius: float | None = None) -> JudgeTools:

    calibration = load_calibration(embedding_model_name())
    chosen = radius or maintenance_config().compaction_radius
    return JudgeTools(
        judge=get_judge(judge_name or maintenance_config().compaction_judge),
        decide=decide,
        review_below=float(calibration.review_below),
        radius=float(chosen),
    )


def _item(memory: Memory) -> JudgeItem:
    embedding = None if memory.embedding is None else np.asarray(memory.embedding, dtype=np.float32)
    return JudgeItem(text=memory.text, embedding=embedding, created_at=memory.created_at, memory_id=memory.pk)


def _merge_plan(
    anchor: Memory, merge: list[tuple[Memory, Judgement]]
) -> tuple[str | None, list[tuple[Memory, Judgement]], list[tuple[Memory, Judgement]]]:
    """The text a merge keeps, the members it can stand for, and the rest (queued instead).

    The write path's rule (`judge.merge`): the LLM's merged text if it loses nothing of any source;
    else the anchor's text when a member is refined by it, or `most_informative`'s choice (then the anchor's
    text if the choice loses something of the anchor). A member joins only if the kept text stands
    for it; one that would lose a number or a name goes to review.
    """
    sources = [anchor.text, *(m.text for m, _ in merge)]
    proposed = next((j.merged_text for _, j in merge if j.merged_text), None)
    if proposed and keeps_everything(proposed, sources, words=False):
        return proposed, merge, []
    refines = any(j.relation == "refine" for _, j in merge)
    for kept in [anchor.text] if refines else [most_informative(sources), anchor.text]:
        if loses_facts(kept, anchor.text):
            continue
        joined = [
            (m, j)
            for m, j in merge
            if stands_for(kept, m.text, relation=j.relation, kept_refines=kept == anchor.text)
        ]
        if joined:
            return kept, joined, [pair for pair in merge if pair not in joined]
    return None, [], merge


def _group_action(
    action: Literal["merge", "review"],
    anchor: Memory,
    members: list[tuple[Memory, Judgement]],
    *,
    text: str | None = None,
) -> PlannedAction:
    """The anchor with its members as one step: the commonest relation, the weakest confidence."""
    judgements = [j for _, j in members]
    return PlannedAction(
        action,
        (anchor.pk, *(m.pk for m, _ in members)),
        Counter(j.relation for j in judgements).most_common(1)[0][0],
        min(j.confidence for j in judgements),
        judgements[0].judge,
        text=text,
        texts=(anchor.text, *(m.text for m, _ in members)),
    )


def plan_group(rows: list[Memory], tools: JudgeTools) -> list[PlannedAction]:
    """Resolve a group newest first: the newest member is judged against the others; those it
    duplicates merge with it (those the kept text can stand for, `_merge_plan`), those it updates are
    superseded by it, unsure ones go to review, and the ones it is distinct from form the rest of the
    group, resolved the same way."""
    remaining = sorted(rows, key=lambda m: (m.created_at, m.pk))
    actions: list[PlannedAction] = []
    while len(remaining) >= 2:
        anchor, others = remaining[-1], remaining[:-1]
        judgements = tools.judge.judge(_item(anchor), [_item(m) for m in others])
        merge: list[tuple[Memory, Judgement]] = []
        supersede: list[tuple[Memory, Judgement]] = []
        review: list[tuple[Memory, Judgement]] = []
        distinct: list[Memory] = []
        for memory, judgement in zip(others, judgements, strict=True):
            decision = tools.decide([judgement], review_below=tools.review_below)
            {"merge": merge, "supersede": supersede, "review": review}.get(decision.action, []).append(
                (memory, judgement)
            )
            if decision.action not in ("merge", "supersede", "review"):
                distinct.append(memory)
        if merge:
            text, joined, unmerged = _merge_plan(anchor, merge)
            if joined:
                actions.append(_group_action("merge", anchor, joined, text=text))
            review.extend(unmerged)
        for memory, judgement in supersede:
            actions.append(
                PlannedAction(
                    "supersede",
                    (memory.pk, anchor.pk),
                    "update",
                    judgement.confidence,
                    judgement.judge,
                    texts=(memory.text, anchor.text),
                )
            )
        if review:
            actions.append(_group_action("review", anchor, review))
        remaining = distinct
    return actions


def _actor(judge: str) -> Actor:
    return Actor.llm() if judge == "llm" else Actor.system()


def _execute(tenant: Tenant, actions: list[PlannedAction], report: ScopeReport, *, queue_only: bool) -> None:
    if queue_only:
        ids = tuple(dict.fromkeys(i for a in actions for i in a.memory_ids))
        if len(ids) >= 2:
            cluster = review_cluster_create(
                tenant=tenant,
                memory_ids=ids,
                verdict=Counter(a.relation for a in actions).most_common(1)[0][0],
                confidence=min(a.confidence for a in actions),
                origin=ClusterOrigin.COMPACTION,
                reason="background review-queue detection",
            )
            report.queued += cluster is not None
        return
    merged_into: dict[int, int] = {}
    for action in actions:
        reason = f"compaction: {action.relation} ({action.judge} judge)"
        if action.action == "merge":
            change = memory_merge(
                tenant=tenant,
                memory_ids=list(action.memory_ids),
                text=action.text,
                relation=action.relation,
                actor=_actor(action.judge),
                reason=reason,
                confidence=action.confidence,
            )
            merged_into[action.memory_ids[0]] = change.result_id
            report.merged += len(action.memory_ids)
        elif action.action == "supersede":
            old, new = action.memory_ids
            memory_supersede(
                tenant=tenant,
                old_id=old,
                new_id=merged_into.get(new, new),  # the anchor may have been merged just before
                actor=_actor(action.judge),
                reason=reason,
                confidence=action.confidence,
            )
            report.superseded += 1
        else:
            cluster = review_cluster_create(
                tenant=tenant,
                memory_ids=[merged_into.get(i, i) for i in action.memory_ids],
                verdict=action.relation,
                confidence=action.confidence,
                origin=ClusterOrigin.COMPACTION,
                reason=reason,
            )
            report.queued += cluster is not None


def _resolve_group(
    tenant: Tenant, scope: ScopeKey, ids: list[int], tools: JudgeTools, mode: Mode, report: ScopeReport
) -> None:
    with transaction.atomic():
        scope_lock(tenant_id=tenant.pk, user_id=scope.user_id, namespace=scope.namespace, kind=scope.kind)
        rows = list(
            Memory.objects.filter(tenant=tenant, pk__in=ids, status=MemoryStatus.ACTIVE)
            .defer("search_vector")
            .order_by("pk")
        )
        if len(rows) < 2:
            report.stale_groups += 1
            return
        # The members' stored token vectors stand in for a forward pass of the token model.
        with memory_tokens_source(tenant=tenant, memories=[(m.pk, m.text) for m in rows]):
            actions = plan_group(rows, tools)
        report.actions.extend(actions)
        if mode == "plan" or not actions:
            return
        try:
            with transaction.atomic():
                _execute(tenant, actions, report, queue_only=mode == "queue")
        except ApplicationError as exc:  # e.g. a member retired by a path that skips the lock
            report.stale_groups += 1
            logger.warning("compaction skipped a group in %s: %s", scope.label(), exc.message)


def scope_compact(*, tenant: Tenant, scope: ScopeKey, tools: JudgeTools, mode: Mode = "apply") -> ScopeReport:
    """Compact one scope completely (every active embedded row, not a sample)."""
    started = time.perf_counter()
    report = ScopeReport(scope=scope)
    ids, vectors = scope_vectors(tenant=tenant, scope=scope)
    report.rows = int(ids.shape[0])
    pairs = find_pairs(
        vectors,
        radius=tools.radius,
        exact_max_rows=maintenance_config().compaction_exact_max_rows,
        blas_threads=maintenance_config().compaction_blas_threads or None,
    )
    report.pairs_examined, report.pairs, report.method = pairs.examined, len(pairs), pairs.method
    if len(pairs):
        involved = np.unique(np.concatenate([pairs.left, pairs.right]))
        position = {int(ids[i]): int(i) for i in involved}
        apart = kept_apart_pairs(tenant=tenant, memory_ids=[int(ids[i]) for i in involved])
        cannot = [(position[a], position[b]) for a, b in apart]
        groups = cohesive_groups(
            pairs.left,
            pairs.right,
            pairs.distance,
            cannot_link=cannot,
            max_group_size=maintenance_config().compaction_max_group_size,
        )
        report.groups = len(groups)
        for group in groups:
            _resolve_group(tenant, scope, [int(ids[i]) for i in group.members], tools, mode, report)
    report.seconds = time.perf_counter() - started
    logger.info(
        "compaction %s %s: %d rows, %d pairs examined (%s), %d groups, merged %d, superseded %d, queued %d",
        mode,
        scope.label(),
        report.rows,
        report.pairs_examined,
        report.method,
        report.groups,
        report.merged,
        report.superseded,
        report.queued,
    )
    return report
