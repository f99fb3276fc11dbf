"""Relation judges: given a new memory and its nearest stored neighbours, say how they relate."""

from __future__ import annotations

from memory_app.conf import judge_config
from memory_app.judge.base import JudgeItem, Judgement, Relation, RelationJudge
from memory_app.judge.merge import choose_merge_text

__all__ = ["JudgeItem", "Judgement", "Relation", "RelationJudge", "choose_merge_text", "get_judge"]


def get_judge(name: str | None = None) -> RelationJudge:
    """`offline` (default, no network) or `llm` (falls back to offline by itself on any failure)."""
    chosen = str(name or judge_config().judge).lower()
    if chosen == "offline":
        # each judge loads its own heavy parts: only the chosen one
        from memory_app.judge.offline import OfflineJudge

        return OfflineJudge()
    if chosen == "llm":
        # each judge loads its own heavy parts: only the chosen one
        from memory_app.judge.llm import LLMJudge

        return LLMJudge()
    raise ValueError(f"unknown judge {name!r}; expected 'offline' or 'llm'")
