"""Relation judges: given a new memory and its nearest stored neighbours, say how they relate."""

from memory_app.judge.base import JudgeItem, Judgement, Relation, RelationJudge

__all__ = ["JudgeItem", "Judgement", "Relation", "RelationJudge"]
