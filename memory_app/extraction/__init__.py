"""Extraction of long-term memories from an exchange: the LLM when configured, rules offline."""

from __future__ import annotations

import logging

from django.conf import settings

from memory_app.extraction.rules import extract_rules
from memory_app.extraction.types import ExtractedMemory, ExtractionResult
from memory_app.llm_client import LlmUnavailable, llm_configured

logger = logging.getLogger(__name__)

__all__ = ["ExtractedMemory", "ExtractionResult", "extract_memories"]


def extract_memories(
    user_message: str, assistant_message: str = "", *, mode: str | None = None
) -> ExtractionResult:
    """`mode` auto (LLM if configured, else rules), llm (rules only as a fallback) or rules."""
    mode = mode or settings.EXTRACTION_MODE
    warnings: list[str] = []
    if mode in {"auto", "llm"}:
        if llm_configured():
            from memory_app.extraction.llm import extract_llm

            try:
                return ExtractionResult(extract_llm(user_message, assistant_message), method="llm")
            except LlmUnavailable as exc:
                logger.warning("LLM extraction failed, using the rule-based extractor: %s", exc)
                warnings.append(f"LLM extraction failed ({exc}); rule-based extraction used")
        elif mode == "llm":
            warnings.append("no LLM configured; rule-based extraction used")
    return ExtractionResult(extract_rules(user_message), method="rules", warnings=warnings)
