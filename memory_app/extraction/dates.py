"""When a message's event happened: relative expressions resolved against the message's timestamp.

`dateparser.search.search_dates` with the message time as RELATIVE_BASE does the resolving
("yesterday", "last Saturday", "next month", "two weeks ago"). Its search also matches ordinary
chat words that happen to be date abbreviations ("We" → Wednesday, "may" → May, "now"), so a match
counts only if, function words aside, it holds a number or a word longer than three letters; and a
bare year or month name ("2023", "May") is not taken as the event's date: it names a span, not a day.

Two rewrites of the searched text, each for something dateparser does not read:
- a possessive or contracted "'s" after a word ("Tomorrow's opening", "this week's been busy"): the
  search then finds nothing at all, so the "'s" is dropped before searching;
- "weekend" after last/this/next/past: dateparser has no weekend, so it is searched as that
  weekend's Saturday (its first day; "last weekend" said on Monday 8 May is Saturday 6 May). The
  expression recorded keeps the word "weekend".
Vague spans ("recently", "the other day", "a few weeks ago") and seasons name no day and stay
unresolved: the event date is then the message's own time, and no expression is recorded.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

logger = logging.getLogger(__name__)

_SHORT = 3
_SPAN_ONLY = re.compile(
    r"^(?:in\s+)?(?:\d{4}|january|february|march|april|june|july|august|september|october|november|"
    r"december)$",
    re.I,
)


# A bare amount of time ("10 years" in "we had him for 10 years") is a duration, not a date:
# dateparser reads it as that long ago, which dated a goodbye said last week to 2013.
_DURATION = re.compile(
    r"^(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|decades?)$",
    re.I,
)


# dateparser's search keeps a conjunction it tried to join to a following date ("yesterday and").
_TRAILING_CONJUNCTION = re.compile(r"\s+(?:and|or|but|so|then)$", re.I)


_FRAGMENT = re.compile(r"[,;:.!?()\n]+|\s+-\s+")
_POSSESSIVE = re.compile(r"(?<=\w)['\u2019]s\b", re.I)
_WEEKEND = re.compile(r"\b(last|this|next|past)\s+weekend\b", re.I)
_WEEKEND_AS = "saturday"


def _searchable(fragment: str) -> str:
    return _WEEKEND.sub(lambda m: f"{m.group(1)} {_WEEKEND_AS}", _POSSESSIVE.sub("", fragment))


def _as_said(expression: str, fragment: str) -> str:
    """The expression in the message's words: a weekend searched as its Saturday is a weekend."""
    if _WEEKEND.search(fragment):
        return re.sub(rf"\b{_WEEKEND_AS}\b", "weekend", expression, flags=re.I)
    return expression


@dataclass(frozen=True)
class EventDate:
    when: datetime
    expression: str  # the words it was read from; "" when it is the message's own time


def _naive_utc(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def _accepted(expression: str) -> bool:
    # dateparser's match may run on into the next words ("10 years and we"): judged without them.
    kept = expression.strip(" ,.;:!?").split()
    while kept and kept[-1].lower() in ENGLISH_STOP_WORDS:
        kept.pop()
    words = " ".join(kept)
    if _SPAN_ONLY.match(words) or _DURATION.match(words):
        return False
    tokens = [t for t in re.findall(r"\w+", words.lower()) if t not in ENGLISH_STOP_WORDS]
    return any(len(t) > _SHORT or t.isdigit() for t in tokens)


def resolve_event_date(text: str, said_at: datetime | None) -> EventDate | None:
    """The first date expression of `text` resolved against `said_at`; `said_at` itself when the
    text names no date; None without a timestamp. Results are aware (UTC)."""
    if said_at is None:
        return None
    base = said_at if said_at.tzinfo else said_at.replace(tzinfo=UTC)
    # dateparser takes ~1 s to import: only for texts that carry a date
    from dateparser.search import search_dates

    settings = {"RELATIVE_BASE": _naive_utc(base), "PREFER_DATES_FROM": "past"}
    # Searched phrase by phrase: dateparser's search misses a date that opens a longer sentence
    # ("Last week, someone wrote me" finds nothing; "Last week" alone is found).
    for fragment in _FRAGMENT.split(text):
        if not fragment.strip():
            continue
        try:
            found = search_dates(_searchable(fragment), languages=["en"], settings=settings)
        except Exception as exc:  # a parser failure costs the date, never the message
            logger.warning("date search failed: %s", exc)
            continue
        for expression, when in found or []:
            if _accepted(expression):
                resolved = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
                said = _as_said(_TRAILING_CONJUNCTION.sub("", expression.strip()), fragment)
                return EventDate(when=resolved, expression=said)
    return EventDate(when=base.astimezone(UTC), expression="")
