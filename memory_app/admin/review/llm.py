"""The "LLM suggestion" for a merged text on the cluster page.

Offered only when an LLM is configured (LLM_MODEL and OPENAI_API_KEY). The text comes from the LLM
judge's `merged_text` (one sentence keeping every detail of both, inventing nothing); members are
folded in one at a time, so a cluster of n members costs n - 1 calls. When the LLM fails, the judge
falls back to the offline judge, which writes no text: the reviewer then gets no suggestion.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memory_app.conf import llm_config
from memory_app.judge import JudgeItem, get_judge

logger = logging.getLogger(__name__)


def llm_suggestion_available() -> bool:
    return llm_config().configured


def llm_merge_suggestion(texts: Sequence[str]) -> str | None:
    """The LLM's merged text for all `texts`, or None when unavailable, failed or judged not mergeable."""
    if not llm_suggestion_available() or len(texts) < 2:
        return None

    judge = get_judge("llm")
    merged = texts[0]
    for text in texts[1:]:
        try:
            (judgement,) = judge.judge(JudgeItem(text=text), [JudgeItem(text=merged)])
        except Exception:  # a failed dependency degrades to "no suggestion", never a 500
            logger.warning("LLM merge suggestion failed", exc_info=True)
            return None
        if judgement.judge != "llm" or not judgement.merged_text:
            return None
        merged = judgement.merged_text
    return merged
