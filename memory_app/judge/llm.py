"""The LLM judge: one chat completion per new memory covering all its candidates, JSON-schema output.

Any failure (no model configured, HTTP error, timeout, malformed or incomplete JSON) is logged as a
warning and answered by the offline judge, so a write never waits on or fails because of the LLM.
Works with any OpenAI-compatible server (`OPENAI_BASE_URL`, `LLM_MODEL`; a local server needs no
key): a server that refuses `json_schema` output is asked once more for a plain JSON object, and an
answer wrapped in a Markdown code fence is read. A merged text that drops a number or a name of
either source makes that judgement "distinct": the model's own text shows it did not see one fact.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from typing import Any

from memory_app.conf import judge_config, llm_config
from memory_app.judge.base import RELATIONS, JudgeItem, Judgement, RelationJudge
from memory_app.judge.merge import lost_facts
from memory_app.judge.policy import DISTINCT_SURE

log = logging.getLogger(__name__)

SYSTEM_PROMPT = """You maintain a long-term memory store for an AI agent. A NEW memory arrives; for each
EXISTING candidate memory, say how NEW relates to it:
- "duplicate": the same fact(s) in other words; nothing would be lost by keeping one.
- "refine": NEW states everything EXISTING states and adds more detail.
- "update": same subject and attribute, but the value changed or is contradicted (NEW replaces EXISTING).
- "distinct": a different fact (another person, object, attribute, time or scope), however similar the words.
A different number, date, person, negation or scope is never a duplicate. When unsure, lower confidence.
confidence is your probability (0..1) that the relation is right. For duplicate or refine, merged_text is
one sentence keeping every detail, number and name of both and inventing nothing; otherwise merged_text
is null. Answer with one entry per candidate, using its index, as JSON:
{"judgements": [{"index": 0, "relation": "distinct", "confidence": 0.9, "merged_text": null}]}"""

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


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_judgements(content: str | None, count: int) -> list[Judgement]:
    """Exactly one well-formed entry per candidate index, or LLMJudgeError."""
    if not content:
        raise LLMJudgeError("empty answer")
    fenced = _FENCE.match(content)
    try:
        data = json.loads(fenced.group(1) if fenced else content)
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
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, int | float)
            or not 0 <= confidence <= 1
        ):
            raise LLMJudgeError(f"confidence out of range: {confidence!r}")
        merged = entry.get("merged_text")
        merged = merged.strip() if isinstance(merged, str) and relation in ("duplicate", "refine") else None
        by_index[index] = Judgement(relation, float(confidence), merged_text=merged or None, judge="llm")
    return [by_index[i] for i in range(count)]


def checked_merges(
    new: JudgeItem, candidates: list[JudgeItem], judgements: list[Judgement]
) -> list[Judgement]:
    """A duplicate or refine whose merged text loses a number or name of either source → distinct."""

    checked = []
    for candidate, judgement in zip(candidates, judgements, strict=True):
        merged = judgement.merged_text
        lost = (
            lost_facts(merged, new.text, words=False) + lost_facts(merged, candidate.text, words=False)
            if merged
            else []
        )
        if lost:
            log.info("LLM merged text drops %s; judged distinct", ", ".join(lost))
            judgement = Judgement(
                "distinct",
                DISTINCT_SURE,
                judge="llm",
                reason=f"LLM said {judgement.relation}, but its merged text drops {', '.join(lost)}",
            )
        checked.append(judgement)
    return checked


class LLMJudge:
    name = "llm"

    def __init__(self, fallback: RelationJudge | None = None) -> None:
        if fallback is None:
            # the fallback judge loads the token encoder: only on a failure
            from memory_app.judge.offline import OfflineJudge

            fallback = OfflineJudge()
        self.fallback = fallback
        self.calls = 0  # judge() calls with candidates, and how many the offline judge answered
        self.fallbacks = 0

    def _client(self) -> Any:
        # start-up cost: openai only when the LLM judge runs
        from openai import OpenAI

        llm = llm_config()
        return OpenAI(
            # A local OpenAI-compatible server takes any key; the SDK insists on one.
            api_key=llm.api_key or "unused",
            base_url=llm.base_url or None,
            timeout=judge_config().llm_timeout_seconds,
            max_retries=0,
        )

    def _ask(self, new: JudgeItem, candidates: list[JudgeItem]) -> str | None:
        # start-up cost: openai only when the LLM judge runs
        from openai import BadRequestError

        client = self._client()
        request: dict[str, Any] = {
            "model": llm_config().model,
            "messages": build_messages(new, candidates),
            "temperature": 0,
        }
        try:
            response = client.chat.completions.create(
                **request, response_format={"type": "json_schema", "json_schema": RESPONSE_SCHEMA}
            )
        except BadRequestError as exc:  # a server without structured output: the prompt shows the shape
            log.info("LLM server refused json_schema output (%s); asking for a JSON object", exc)
            response = client.chat.completions.create(**request, response_format={"type": "json_object"})
        content: str | None = response.choices[0].message.content
        return content

    def judge(self, new: JudgeItem, candidates: list[JudgeItem]) -> list[Judgement]:
        if not candidates:
            return []
        self.calls += 1
        llm = llm_config()
        if not llm.model or not (llm.api_key or llm.base_url):
            log.warning("LLM judge requested but LLM_MODEL/OPENAI_API_KEY unset; using the offline judge")
            return self._fall_back(new, candidates, "no LLM is configured (LLM_MODEL, OPENAI_API_KEY)")
        try:
            judgements = parse_judgements(self._ask(new, candidates), len(candidates))
        except Exception as exc:  # any transport, API or parse failure degrades to the offline judge
            log.warning("LLM judge failed (%s: %s); using the offline judge", type(exc).__name__, exc)
            return self._fall_back(new, candidates, f"the LLM judge failed ({type(exc).__name__})")
        return checked_merges(new, candidates, judgements)

    def _fall_back(self, new: JudgeItem, candidates: list[JudgeItem], why: str) -> list[Judgement]:
        self.fallbacks += 1
        note = f"{why}; the offline judge decided"
        return [replace(j, fallback=note) for j in self.fallback.judge(new, candidates)]
