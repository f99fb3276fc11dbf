"""Step 4 of the write path: carry out the judge's decision through the lineage and review services.

The new memory always becomes a row of its own: a merge inserts it as a source already superseded by
the result (its exact words stay in history and come back on undo); for a supersede or a review it is
inserted first, then linked.
"""

from __future__ import annotations

from typing import Any

from memory_app.models import Memory, Tenant
from memory_app.models.lineage import ChangeRelation
from memory_app.selectors.neighbours import Neighbour
from memory_app.services.actors import Actor
from memory_app.services.lineage import memory_merge, memory_supersede
from memory_app.services.review import review_cluster_create
from memory_app.services.store_types import StoreOutcome

MERGE_RELATIONS = {ChangeRelation.DUPLICATE.value, ChangeRelation.REFINE.value}


def _actor_for(judgement: Any, actor: Actor | None) -> Actor:
    if actor is not None:
        return actor
    return Actor.llm() if getattr(judgement, "judge", "") == "llm" else Actor.system()


def merge_group(
    *,
    neighbours: list[Neighbour],
    judgements: list[Any],
    chosen: int,
    review_below: float,
) -> list[int]:
    """The chosen candidate plus every other candidate the judge calls a confident duplicate, minus any
    that a reviewer kept apart from a member already in the group (so a merge never undoes a
    reviewer's "these are different"; each candidate comes with its kept-apart partners)."""
    group = [neighbours[chosen]]
    for i, (candidate, judgement) in enumerate(zip(neighbours, judgements, strict=True)):
        if i == chosen or judgement.relation != "duplicate" or judgement.confidence < review_below:
            continue
        if all(member.memory_id not in candidate.kept_apart for member in group):
            group.append(candidate)
    return [member.memory_id for member in group]


def is_merge(decision: Any) -> bool:
    judgement = decision.judgement
    return (
        decision.action == "merge"
        and decision.index is not None
        and judgement is not None
        and judgement.relation in MERGE_RELATIONS
    )


def merge_new(
    *,
    tenant: Tenant,
    new: Memory,
    neighbours: list[Neighbour],
    decision: Any,
    judgements: list[Any],
    review_below: float,
    actor: Actor | None,
) -> StoreOutcome:
    """Merge the (unsaved) new memory with the chosen candidate and its confident duplicates."""
    judgement = decision.judgement
    group = merge_group(
        neighbours=neighbours,
        judgements=judgements,
        chosen=decision.index,
        review_below=review_below,
    )
    change = memory_merge(
        tenant=tenant,
        memory_ids=group,
        incoming=new,
        text=judgement.merged_text or None,
        relation=judgement.relation,
        actor=_actor_for(judgement, actor),
        reason=judgement.reason or f"store-time dedup ({judgement.judge} judge)",
        confidence=float(judgement.confidence),
    )
    return StoreOutcome(
        outcome="merged_into",
        memory_id=change.result_id,
        related_ids=tuple(group),
        change_id=change.pk,
        relation=judgement.relation,
        confidence=float(judgement.confidence),
    )


def act_on_decision(
    *,
    tenant: Tenant,
    new: Memory,
    neighbours: list[Neighbour],
    decision: Any,
    actor: Actor | None,
) -> StoreOutcome:
    """Supersede, review or store, with the new memory already inserted."""
    action = decision.action
    judgement = decision.judgement
    if action == "store" or decision.index is None or judgement is None:
        return StoreOutcome(outcome="created", memory_id=new.pk)
    target = neighbours[decision.index]
    confidence = float(judgement.confidence)
    if action == "supersede":
        change = memory_supersede(
            tenant=tenant,
            old_id=target.memory_id,
            new_id=new.pk,
            actor=_actor_for(judgement, actor),
            reason=judgement.reason or f"store-time update ({judgement.judge} judge)",
            confidence=confidence,
        )
        return StoreOutcome(
            outcome="superseded",
            memory_id=new.pk,
            related_ids=(target.memory_id,),
            change_id=change.pk,
            relation=judgement.relation,
            confidence=confidence,
        )
    # "review", or a "merge" of a relation that is not merged: keep both, ask a person.
    cluster = review_cluster_create(
        tenant=tenant,
        memory_ids=[target.memory_id, new.pk],
        verdict=judgement.relation,
        confidence=confidence,
        max_distance=target.distance,
        distances={target.memory_id: 0.0, new.pk: target.distance},
        reason=judgement.reason or f"unsure store-time judgement ({judgement.judge} judge)",
        new_memory=new,
    )
    if cluster is None:
        return StoreOutcome(outcome="created", memory_id=new.pk, relation=judgement.relation)
    return StoreOutcome(
        outcome="queued_for_review",
        memory_id=new.pk,
        related_ids=(target.memory_id,),
        cluster_id=cluster.pk,
        relation=judgement.relation,
        confidence=confidence,
    )
