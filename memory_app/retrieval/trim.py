"""Token-budget arithmetic of a short-term session: which oldest messages to trim (pure, no database)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TrimPlan:
    trim: int  # how many of the oldest messages go
    summary_budget: int  # tokens the (possibly new) summary may take after the trim


def plan_trim(
    message_tokens: Sequence[int],
    *,
    summary_tokens: int,
    budget: int,
    target: int,
    summary_reserve: int,
) -> TrimPlan:
    """Trim nothing while messages + summary fit `budget`; past it, drop the oldest messages until
    what remains plus `summary_reserve` (the summary the trimmed messages are folded into) fits
    `target`. The newest message always stays (a caller caps a single message at the budget first).

    `summary_budget` is what the summary may use so the total never passes `budget`; a summary
    longer than that is cut by the caller.
    """
    total = sum(message_tokens) + summary_tokens
    if total <= budget or not message_tokens:
        return TrimPlan(trim=0, summary_budget=max(budget - sum(message_tokens), 0))
    remaining = sum(message_tokens)
    trim = 0
    while trim < len(message_tokens) - 1 and remaining + summary_reserve > target:
        remaining -= message_tokens[trim]
        trim += 1
    return TrimPlan(trim=trim, summary_budget=max(budget - remaining, 0))
