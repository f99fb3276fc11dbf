"""Counts for an agent or an operator: memories per kind and status, procedures, sessions, review."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, FloatField, Sum
from django.db.models.functions import Cast

from memory_app.conf import kinds_config
from memory_app.models import ConversationSession, DuplicateCluster, Memory, Procedure, SessionMessage, Tenant
from memory_app.models.memory import MemoryKind, MemoryStatus
from memory_app.models.review import ClusterStatus
from memory_app.retrieval.procedural import procedure_confidence


def stats_get(*, tenant: Tenant, user_id: str | None = None, session_id: str | None = None) -> dict[str, Any]:
    memories = Memory.objects.filter(tenant=tenant)
    procedures = Procedure.objects.filter(tenant=tenant)
    sessions = ConversationSession.objects.filter(tenant=tenant)
    clusters = DuplicateCluster.objects.filter(tenant=tenant, status=ClusterStatus.PENDING)
    if user_id is not None:
        memories = memories.filter(user_id=user_id)
        procedures = procedures.filter(user_id=user_id)
        sessions = sessions.filter(user_id=user_id)
        clusters = clusters.filter(user_id=user_id)
    if session_id is not None:
        memories = memories.filter(session_id=session_id)
        sessions = sessions.filter(session_id=session_id)

    per_kind: dict[str, dict[str, int]] = {
        kind: {status: 0 for status in MemoryStatus.values} for kind in MemoryKind.values
    }
    for row in memories.values("kind", "status").annotate(n=Count("id")):
        per_kind[row["kind"]][row["status"]] = row["n"]
    knowledge_base = Memory.objects.filter(
        tenant=tenant, kind=MemoryKind.SEMANTIC, user_id="", status=MemoryStatus.ACTIVE
    ).count()

    proc = procedures.aggregate(
        total=Count("id"),
        executions=Sum("execution_count"),
        # weighted by runs: the average score over every recorded run
        score_runs=Sum(F("avg_success_score") * Cast("execution_count", FloatField())),
    )
    executions = proc["executions"] or 0
    threshold = kinds_config().procedure_recommend_threshold
    recommended = sum(
        1
        for score, count in procedures.values_list("avg_success_score", "execution_count")
        if procedure_confidence(score, count, kinds_config().procedure_confidence_divisor) >= threshold
    )
    short = sessions.aggregate(total=Count("id"), trimmed=Sum("trimmed_count"), tokens=Sum("token_count"))
    return {
        "scope": {"user_id": user_id, "session_id": session_id},
        "memories": {kind: {**counts, "total": sum(counts.values())} for kind, counts in per_kind.items()},
        "knowledge_base": {"active_facts": knowledge_base},
        "procedural": {
            "procedures": proc["total"],
            "executions": executions,
            "avg_success_score": round(proc["score_runs"] / executions, 4) if executions else None,
            "recommended": recommended,
        },
        "short_term": {
            "sessions": short["total"],
            "messages": SessionMessage.objects.filter(session__in=sessions).count(),
            "tokens": short["tokens"] or 0,
            "trimmed_messages": short["trimmed"] or 0,
        },
        "review_backlog": clusters.count(),
    }
