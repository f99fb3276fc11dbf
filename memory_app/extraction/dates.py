"""When a message's event happened: relative expressions resolved against the message's timestamp.

`dateparser.search.search_dates` with the message time as RELATIVE_BASE does the resolving
("yesterday", "last Saturday", "next month", "two weeks ago"). Its search also matches ordinary
chat words that happen to be date abbreviations ("We" → Wednesday, "may" → May, "now"), so a match
counts only if, function words aside, it holds a number or a word longer than three letters; and a
bare year or month name ("2023", "May") is not taken as the event's date: it names a span, not a day.
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


# dateparser's search keeps a conjunction it tried to join to a following date ("yesterday and").
_TRAILING_CONJUNCTION = re.compile(r"\s+(?:and|or|but|so|then)$", re.I)


_FRAGMENT = re.compile(r"[,;:.!?()\n]+|\s+-\s+")


@dataclass(frozen=True)
class EventDate:
    when: datetime
    expression: str  # the words it was read from; "" when it is the message's own time


def _naive_utc(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def _accepted(expression: str) -> bool:
    words = expression.strip(" ,.;:!?")
    if _SPAN_ONLY.match(words):
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
            found = search_dates(fragment, languages=["en"], settings=settings)
        except Exception as exc:  # a parser failure costs the date, never the message
            logger.warning("date search failed: %s", exc)
            continue
        for expression, when in found or []:
            if _accepted(expression):
                resolved = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
                return EventDate(when=resolved, expression=_TRAILING_CONJUNCTION.sub("", expression.strip()))
    return EventDate(when=base.astimezone(UTC), expression="")
