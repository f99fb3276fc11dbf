"""Sessions, procedures, extraction and interactions: KindsConfig."""

from __future__ import annotations

from dataclasses import dataclass

from memory_app.conf.declare import knob
from project.env import choice, flag, integer, number


@dataclass(frozen=True, slots=True)
class KindsConfig:
    """Short-term sessions, procedures, extraction and interactions."""

    session_context_window_tokens: int = knob(
        integer(
            "SESSION_CONTEXT_WINDOW_TOKENS",
            24_000,
            100,
            10_000_000,
            "context window a short-term session is kept within (a session's own "
            "`context_window_tokens`, else its agent profile's `session.context_window_tokens`, wins)",
        )
    )
    # Hysteresis, so an LLM summary is not asked for on every append.
    session_trim_at: float = knob(
        number(
            "SESSION_TRIM_AT",
            0.8,
            0.05,
            1.0,
            "a session (messages + summary) is trimmed when it passes this x window...",
        )
    )
    session_trim_to: float = knob(
        number("SESSION_TRIM_TO", 0.6, 0.01, 1.0, "...down to this x window (at most `SESSION_TRIM_AT`)")
    )
    session_summary_max_tokens: int = knob(
        integer(
            "SESSION_SUMMARY_MAX_TOKENS",
            500,
            0,
            100_000,
            "longest session summary of trimmed messages: the LLM's when one is configured, else "
            "extractive (the sentences that carry names, numbers, dates, preferences and decisions, one "
            "`speaker: sentence` line each); 0 = never summarise",
        )
    )
    procedure_confidence_divisor: float = knob(
        number(
            "PROCEDURE_CONFIDENCE_DIVISOR",
            10.0,
            0.1,
            1e6,
            "confidence = min(avg_success x (1 + executions / divisor), 1)",
        )
    )
    procedure_recommend_threshold: float = knob(
        number(
            "PROCEDURE_RECOMMEND_THRESHOLD",
            0.7,
            0.0,
            1.0,
            "a procedure is recommended at or above this confidence",
        )
    )
    procedure_match_max_distance: float = knob(
        number(
            "PROCEDURE_MATCH_MAX_DISTANCE",
            0.25,
            0.0,
            2.0,
            "cosine distance within which the nearest recorded pattern is suggested",
        )
    )
    extraction_mode: str = knob(
        choice(
            "EXTRACTION_MODE",
            "auto",
            ("auto", "llm", "rules"),
            "`auto` (LLM when `LLM_MODEL` is set, else rules), `llm`, `rules`",
        )
    )
    interaction_max_messages: int = knob(
        integer("INTERACTION_MAX_MESSAGES", 500, 1, 100_000, "messages one `POST /interactions` may carry")
    )
    interactions_batch_max: int = knob(
        integer(
            "INTERACTIONS_BATCH_MAX", 50, 1, 10_000, "interactions one `POST /interactions/batch` may carry"
        )
    )
    interaction_judge_messages: bool = knob(
        flag(
            "INTERACTION_JUDGE_MESSAGES",
            False,
            "send messages kept as said through the relation judge too (by default only an identical "
            "text in the scope is the same memory; the facts drawn from them are always judged)",
        )
    )
