"""The LLM judge: one chat completion per new memory covering all its candidates, JSON-schema output.

Any failure (no model configured, HTTP error, timeout, malformed or incomplete JSON) is logged as a
warning and answered by the offline judge, so a write never waits on or fails because of the LLM.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings

from memory_app.judge.base import RELATIONS, JudgeItem, Judgement, RelationJudge

log = logging.getLogger(__name__)

SYSTEM_PROMPT = """You maintain a long-term memory store for an AI agent. A NEW memory arrives; for each
EXISTING candidate memory, say how NEW relates to it:
- "duplicate": the same fact(s) in other words; nothing would be lost by keeping one.
- "refine": NEW states everything EXISTING states and adds more detail.
- "update": same subject and attribute, but the value changed or is contradicted (NEW replaces EXISTING).
- "distinct": a different fact (another person, object, attribute, time or scope), however similar the words.
A different number, date, person, negation or scope is never a duplicate. When unsure, lower confidence.
confidence is your probability (0..1) that the relation is right. For duplicate or refine, merged_text is
one sentence keeping every detail of both and inventing nothing; otherwise merged_text is null.
Answer with one entry per candidate, using its index."""

RESPONSE_SCHEMA: dict[str, Any] = {
    "name": "memory_relations",
    "strict": True,
    "schema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["judgements"],
        "properties": {
            "judgements": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["index", "relation", "confidence", "merged_text"],
                    "properties": {
                        "index": {"type": "integer"},
                        "relation": {"type": "string", "enum": list(RELATIONS)},
                        "confidence": {"type": "number"},
                        "merged_text": {"type": ["string", "null"]},
                    },
                },
            }
        },
    },
}


class LLMJudgeError(Exception):
    """The model's answer cannot be used as judgements."""


def build_messages(new: JudgeItem, candidates: list[JudgeItem]) -> list[dict[str, str]]:
    lines = [f"NEW: {new.text}", "EXISTING candidates:"]
    lines += [f"[{index}] {candidate.text}" for index, candidate in enumerate(candidates)]
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n".join(lines)}]


def parse_judgements(content: str | None, count: int) -> list[Judgement]:
    """Exactly one well-formed entry per candidate index, or LLMJudgeError."""
    if not content:
        raise LLMJudgeError("empty answer")
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise LLMJudgeError(f"not JSON: {exc}") from exc
    entries = data.get("judgements") if isinstance(data, dict) else None
    if not isinstance(entries, list) or len(entries) != count:
        raise LLMJudgeError(f"expected {count} judgements, got {entries!r:.200}")
    by_index: dict[int, Judgement] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise LLMJudgeError("judgement is not an object")
        index, relation, confidence = entry.get("index"), entry.get("relation"), entry.get("confidence")
        if not isinstance(index, int) or not 0 <= index < count or index in by_index:
            raise LLMJudgeError(f"bad or repeated index {index!r}")
        if relation not in RELATIONS:
            raise LLMJudgeError(f"unknown relation {relation!r}")
        numeric = isinstance(confidence, int | float) and not isinstance(confidence, bool)
        if not numeric or not 0 <= confidence <= 1:
            raise LLMJudgeError(f"confidence out of range: {confidence!r}")
        merged = entry.get("merged_text")
        merged = merged.strip() if isinstance(merged, str) and relation in ("duplicate", "refine") else None
        by_index[index] = Judgement(relation, float(confidence), merged_text=merged or None, judge="llm")
    return [by_index[i] for i in range(count)]


class LLMJudge:
    name = "llm"

    def __init__(self, fallback: RelationJudge | None = None) -> None:
        if fallback is None:
            from memory_app.judge.offline import OfflineJudge

            fallback = OfflineJudge()
        self.fallback = fallback

    def _client(self) -> Any:
        from openai import OpenAI

        return OpenAI(
            api_key=settings.OPENAI_API_KEY,
            base_url=settings.OPENAI_BASE_URL or None,
            timeout=settings.DEDUP_LLM_TIMEOUT_SECONDS,
            max_retries=0,
        )

    def judge(self, new: JudgeItem, candidates: list[JudgeItem]) -> list[Judgement]:
        if not candidates:
            return []
        if not settings.LLM_MODEL or not settings.OPENAI_API_KEY:
            log.warning("LLM judge requested but LLM_MODEL/OPENAI_API_KEY unset; using the offline judge")
            return self.fallback.judge(new, candidates)
        try:
            response = self._client().chat.completions.create(
                model=settings.LLM_MODEL,
                messages=build_messages(new, candidates),
                response_format={"type": "json_schema", "json_schema": RESPONSE_SCHEMA},
                temperature=0,
            )
            return parse_judgements(response.choices[0].message.content, len(candidates))
        except Exception as exc:  # any transport, API or parse failure degrades to the offline judge
            log.warning("LLM judge failed (%s: %s); using the offline judge", type(exc).__name__, exc)
            return self.fallback.judge(new, candidates)
