"""Helpers for the operations tests: memories with controlled vectors and a scripted judge."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from memory_app.judge.base import JudgeItem, Judgement
from memory_app.models import Memory, Tenant
from memory_app.services.maintenance.compaction import JudgeTools
from memory_app.services.rows.memories import memory_insert
from tests.factories import unit_vector


def near(seed: int, noise: float, salt: int) -> np.ndarray:
    """A unit vector at a small, controlled distance from unit_vector(seed)."""
    base = unit_vector(seed)
    jitter = np.random.default_rng(seed * 7919 + salt).standard_normal(base.shape[0]).astype(np.float32)
    v = base + noise * jitter / np.linalg.norm(jitter)
    return v / np.linalg.norm(v)


def put(tenant: Tenant, text: str, vector: np.ndarray, *, user_id: str = "u1", **extra: object) -> Memory:
    return memory_insert(
        tenant=tenant,
        text=text,
        embedding=vector,
        embedding_model="all-MiniLM-L6-v2",
        user_id=user_id,
        **extra,
    )


@dataclass
class ScriptedJudge:
    """A stand-in relation judge: relations by pairs of texts, everything else distinct."""

    rules: dict[frozenset[str], tuple[str, float]] = field(default_factory=dict)
    name: str = "offline"
    calls: int = 0

    def judge(self, new: JudgeItem, candidates: list[JudgeItem]) -> list[Judgement]:
        self.calls += 1
        out = []
        for c in candidates:
            relation, conf = self.rules.get(frozenset((new.text, c.text)), ("distinct", 0.9))
            out.append(Judgement(relation=relation, confidence=conf, judge=self.name))  # type: ignore[arg-type]
        return out


@dataclass(frozen=True)
class _Decision:
    action: str
    index: int | None
    judgement: Judgement | None


def scripted_decide(judgements: list[Judgement], *, review_below: float) -> _Decision:
    """The policy's contract for one judgement: unsure → review, else by relation."""
    j = judgements[0]
    if j.confidence < review_below and j.relation != "distinct":
        return _Decision("review", 0, j)
    action = {"duplicate": "merge", "refine": "merge", "update": "supersede"}.get(j.relation, "store")
    return _Decision(action, 0, j)


def scripted_tools(judge: ScriptedJudge, radius: float = 0.2) -> JudgeTools:
    return JudgeTools(judge=judge, decide=scripted_decide, review_below=0.6, radius=radius)


FACT_TEMPLATES = (
    ("User's BMI goal is {}", (23, 24, 25)),
    ("User sleeps {} hours a night", (6, 7, 8)),
    ("User drinks {} cups of coffee a day", (2, 3, 4)),
    ("User's monthly rent is {} dollars", (1000, 1200, 1400)),
    ("User runs {} km every week", (5, 10, 15)),
)


def put_updates(tenant: Tenant, *, user_id: str = "u1", facts: int = 5) -> list[list[Memory]]:
    """Facts whose value changed twice, stored oldest first with real embeddings: the offline
    judge calls each later value an update of the earlier ones."""
    from memory_app.embeddings import embed_texts

    chosen = FACT_TEMPLATES[:facts]
    texts = [template.format(v) for template, values in chosen for v in values]
    vectors = embed_texts(texts, tenant=None)
    rows = [put(tenant, text, vector, user_id=user_id) for text, vector in zip(texts, vectors, strict=True)]
    return [rows[i : i + 3] for i in range(0, len(rows), 3)]
