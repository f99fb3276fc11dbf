"""Extraction of long-term memories from an exchange: the LLM when configured, rules offline."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_app.conf import kinds_config, store_config
from memory_app.extraction.conversation import ChatMessage, MemoryDraft, drafts_offline, message_memory
from memory_app.extraction.rules import extract_rules
from memory_app.extraction.types import ExtractedMemory, ExtractionResult
from memory_app.llm_client import LlmUnavailable, llm_configured

logger = logging.getLogger(__name__)

__all__ = [
    "ChatMessage",
    "ConversationExtraction",
    "ExtractedMemory",
    "ExtractionResult",
    "MemoryDraft",
    "extract_conversation",
    "extract_memories",
]


def extract_memories(
    user_message: str, assistant_message: str = "", *, mode: str | None = None
) -> ExtractionResult:
    """`mode` auto (LLM if configured, else rules), llm (rules only as a fallback) or rules."""
    mode = mode or kinds_config().extraction_mode
    warnings: list[str] = []
    if mode in {"auto", "llm"}:
        if llm_configured():
            # the LLM extractor loads the openai client: only when asked for
            from memory_app.extraction.llm import extract_llm

            try:
                return ExtractionResult(extract_llm(user_message, assistant_message), method="llm")
            except LlmUnavailable as exc:
                logger.warning("LLM extraction failed, using the rule-based extractor: %s", exc)
                warnings.append(f"LLM extraction failed ({exc}); rule-based extraction used")
        elif mode == "llm":
            warnings.append("no LLM configured; rule-based extraction used")
    return ExtractionResult(extract_rules(user_message), method="rules", warnings=warnings)


@dataclass(frozen=True)
class ConversationExtraction:
    drafts: list[MemoryDraft]
    method: str  # "llm" | "rules"
    warnings: list[str] = field(default_factory=list)


def extract_conversation(
    messages: Sequence[ChatMessage], *, first: int = 0, mode: str | None = None
) -> ConversationExtraction:
    """Memories from messages[first:] (the ones before are context). Every substantive message is
    kept as said in both modes; the facts come from one LLM call, or from the rules when no LLM is
    configured or the call fails in any way (the failure is in `warnings`)."""
    mode = mode or kinds_config().extraction_mode
    limit = store_config().max_text_chars
    warnings: list[str] = []
    if mode in {"auto", "llm"}:
        if llm_configured():
            # the LLM extractor loads the openai client: only when asked for
            from memory_app.extraction.llm import extract_llm_conversation

            try:
                facts = extract_llm_conversation(messages, first)
            except Exception as exc:  # any failure of the LLM path (transport, answer) falls back
                logger.warning("LLM extraction failed, using the rule-based extractor: %s", exc)
                warnings.append(f"LLM extraction failed ({exc}); rule-based extraction used")
            else:
                kept = [message_memory(messages, i, max_chars=limit) for i in range(first, len(messages))]
                return ConversationExtraction([d for d in kept if d is not None] + facts, method="llm")
        elif mode == "llm":
            warnings.append("no LLM configured; rule-based extraction used")
    return ConversationExtraction(
        drafts_offline(messages, first=first, max_chars=limit), method="rules", warnings=warnings
    )
