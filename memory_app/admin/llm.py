"""The "LLM suggestion" for a merged text: offered only when an LLM is configured and the judge
package provides merge text (`memory_app.judge.merge.merge_text(texts) -> str`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from django.conf import settings

logger = logging.getLogger(__name__)


def _merge_text_function() -> Callable[[Sequence[str]], str] | None:
    if not settings.LLM_MODEL:
        return None
    try:
        from memory_app.judge.merge import merge_text  # type: ignore[import-not-found,attr-defined]
    except ImportError:
        return None
    return merge_text  # type: ignore[no-any-return]


def llm_suggestion_available() -> bool:
    return _merge_text_function() is not None


def llm_merge_suggestion(texts: Sequence[str]) -> str | None:
    """The LLM's merged text, or None (with a logged warning) when it is unavailable or fails."""
    fn = _merge_text_function()
    if fn is None:
        return None
    try:
        text = fn(list(texts))
    except Exception:  # a failed dependency degrades to "no suggestion", never a 500
        logger.warning("LLM merge suggestion failed", exc_info=True)
        return None
    return text.strip() or None
