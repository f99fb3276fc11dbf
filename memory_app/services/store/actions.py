"""Step 4 of the write path: carry out the judge's decision through the lineage and review services.

The new memory always becomes a row of its own: a merge inserts it as a source already superseded by
the result (its exact words stay in history and come back on undo); for a supersede or a review it is
inserted first, then linked.
"""

from __future__ import annotations

from dataclasses import replace

from memory_app.judge.base import Judgement
from memory_app.judge.merge import lost_facts, most_informative
from memory_app.judge.policy import Decision
from memory_app.judge.signals.relations import difference
from memory_app.models import Memory, Tenant
from memory_app.models.lineage import ChangeRelation
from memory_app.models.review import DIFFERS
from memory_app.selectors.store.neighbours import Neighbour
from memory_app.services.actors import Actor
from memory_app.services.lineage.changes import memory_merge, memory_supersede
from memory_app.services.review.queue import review_cluster_create
from memory_app.services.store.types import StoreOutcome

MERGE_RELATIONS = {ChangeRelation.DUPLICATE.value, ChangeRelation.REFINE.value}


def _actor_for(judgement: Judgement, actor: Actor | None) -> Actor:
    if actor is not None:
        return actor
    return Actor.llm() if judgement.judge == "llm" else Actor.system()


def unmergeable(decision: Decision, *, new_text: str, target: Neighbour) -> Decision:
    """A merge verdict whose text would lose a fact becomes a review of the pair: both stay active."""
    assert decision.judgement is not None, "only a merge decision (is_merge) is passed here"
    relation = decision.judgement.relation
    kept = new_text if relation == "refine" else most_informative([target.text, new_text])
    lost = lost_facts(kept, target.text) + lost_facts(kept, new_text)
    judgement = replace(
        decision.judgement,
        reason=f"{relation} verdict, but one text would lose {', '.join(lost)}",
    )
    return replace(decision, action="review", judgement=judgement)


def is_merge(decision: Decision) -> bool:
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
    target: Neighbour,
    decision: Decision,
    text: str,
    actor: Actor | None,
) -> StoreOutcome:
    """Merge the (unsaved) new memory with the one candidate it duplicates, keeping `text`.

    Only that candidate: the others the judge may also call duplicates are compaction's to resolve,
    so one store never chains facts that were only each close to the new one.
    """
    judgement = decision.judgement
    assert judgement is not None, "only a merge decision (is_merge) is passed here"
    group = [target.memory_id]
    change = memory_merge(
        tenant=tenant,
        memory_ids=group,
        incoming=new,
        text=text,
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
    decision: Decision,
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
    # "review", or a "merge" of a relation that is not merged: keep both, ask a person. A hard
    # difference (a sign, a number, a name) is what the person must see, not a duplicate's
    # confidence that the difference already overrules.
    differs = difference(target.text, new.text)
    cluster = review_cluster_create(
        tenant=tenant,
        memory_ids=[target.memory_id, new.pk],
        verdict=DIFFERS if differs else judgement.relation,
        confidence=None if differs else confidence,
        max_distance=target.distance,
        distances={target.memory_id: 0.0, new.pk: target.distance},
        reason=f"differs in {differs}"
        if differs
        else judgement.reason or f"unsure store-time judgement ({judgement.judge} judge)",
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
