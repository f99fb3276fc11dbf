"""The time a search query speaks of, as a window of event dates: "what did Caroline do yesterday".

`dateparser` finds the expression and reads it against the request's `now` (its search, with the
same phrase-by-phrase split and rewrites the message dates use, extraction/dates.py); its period
("day", "week", "month", "year") gives the window's width: "yesterday" is that day, "last week" the
Monday-to-Sunday week it falls in, "in May" the whole month, "in 2022" the year. A season after
last/this/next/the/in/during is its three months. Past dates are preferred: a query asks about what
was remembered.

A window is pure data; selectors/search/time_window.py applies it to a search.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from memory_app.extraction.dates import as_said, searchable_fragment, season_start

logger = logging.getLogger(__name__)

# dateparser costs about half a millisecond even on a query without a date, and most queries hold
# none: it runs only when the query has a year, an ordinal day, a numeric date (5/12/2023,
# 2023-05-12) or one of the words that can open or make a date expression in English (a count such
# as "3 days ago" has its unit word). Month and weekday names are spelled out because their short
# forms alone ("may", "sun", "we") are ordinary words that dateparser itself would misread; a bare
# number ("question 1-2") is no date, and dateparser would read it as one.
_MAY_HOLD_A_DATE = re.compile(
    r"\b(?:1[89]|20)\d\d\b|\b\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}\b|"
    r"\b(?:yesterday|today|tonight|tomorrow|ago|last|past|next|previous|this|week|weekend|"
    r"month|year|day|spring|summer|fall|autumn|winter|january|february|march|april|may|june|july|"
    r"august|september|october|november|december|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday)s?\b",
    re.I,
)
_FRAGMENT = re.compile(r"[,;:.!?()\n]+|\s+-\s+")
_MONTH_ONLY = re.compile(
    r"^(?:january|february|march|april|may|june|july|august|september|october|november|december)$", re.I
)
# The words before a bare month name that make it a date ("in May", "during June"): without one,
# "May I ask" and "June said" are not dates.
_MONTH_PREPOSITIONS = frozenset({"in", "during", "since", "of", "from", "until", "till", "through", "by"})
_SEASON = re.compile(
    r"\b(this\s+past|last|this|next|past|the|in|during)\s+(?:the\s+)?(spring|summer|fall|autumn|winter)\b",
    re.I,
)
_SHORT = 3
# "May 23, 2023": the comma before a year is not a phrase break.
_COMMA_YEAR = re.compile(r",\s*(?=\d{4}\b)")
# A lone number or ordinal ("18th" in "her 18th birthday") is no date without a month or year.
_LONE_NUMBER = re.compile(r"^(?:\d{1,3}(?:st|nd|rd|th)?)$", re.I)
# A calendar date (a month name or a year) says more than a relative one: "last week, as mentioned
# on 6 November 2023" is about the week before that day's conversation, not before today.
_ABSOLUTE = re.compile(
    r"\b\d{4}\b|\b(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b",
    re.I,
)


@dataclass(frozen=True)
class QueryWindow:
    """Event dates from `start` (inclusive) to `end` (exclusive), aware UTC."""

    start: datetime
    end: datetime
    expression: str  # the query's own words
    period: str  # "day", "week", "month", "season" or "year"


def _at_midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _next_month(day: date) -> date:
    return date(day.year + day.month // 12, day.month % 12 + 1, 1)


def window_of(when: date, period: str) -> tuple[datetime, datetime]:
    """The [start, end) of the `period` containing `when`."""
    if period == "year":
        return _at_midnight(date(when.year, 1, 1)), _at_midnight(date(when.year + 1, 1, 1))
    if period == "month":
        first = when.replace(day=1)
        return _at_midnight(first), _at_midnight(_next_month(first))
    if period == "week":
        monday = when - timedelta(days=when.weekday())
        return _at_midnight(monday), _at_midnight(monday + timedelta(days=7))
    return _at_midnight(when), _at_midnight(when + timedelta(days=1))


def _season_window(match: re.Match[str], today: date) -> QueryWindow:
    which = " ".join(match.group(1).lower().split())
    season = match.group(2)
    if which in ("the", "in", "during"):
        # The latest one that has begun: "in the summer" said in October is this year's.
        start = season_start("this", season, today)
        if start > today:
            start = season_start("last", season, today)
    else:
        start = season_start(which, season, today)
    end = _next_month(_next_month(_next_month(start)))
    return QueryWindow(_at_midnight(start), _at_midnight(end), match.group(0), "season")


def _accepted(expression: str, fragment: str, start: int) -> bool:
    words = re.findall(r"\w+", expression.lower())
    # "may" is an English stop word too: month names are kept as content.
    content = [w for w in words if w not in ENGLISH_STOP_WORDS or _MONTH_ONLY.match(w)]
    if content and all(_MONTH_ONLY.match(w) for w in content):
        # A bare month name is a date after a preposition ("in May"), else a word or a name
        # ("May I ask", "June said").
        before = fragment[:start].split()[-1:]
        return any(w in _MONTH_PREPOSITIONS for w in words) or (
            bool(before) and before[0].lower() in _MONTH_PREPOSITIONS
        )
    if content and all(_LONE_NUMBER.match(w) for w in content):
        return False
    # "now", "we", "sun": dateparser's readings of short chat words.
    return any(len(w) > _SHORT or any(ch.isdigit() for ch in w) for w in content)


def may_hold_date(text: str) -> bool:
    """Whether `text` has a digit or a word that can make a date (the gate before dateparser)."""
    return _MAY_HOLD_A_DATE.search(text) is not None


def query_window(text: str, now: datetime) -> QueryWindow | None:
    """The window of a time expression in `text` (a calendar date before a relative one), read
    against `now`; None without one."""
    if not may_hold_date(text):
        return None
    try:
        return _window(text, now)
    except (ValueError, OverflowError) as exc:  # a `now` at the calendar's ends: no window, no error
        logger.warning("query window not read (%s)", exc)
        return None


def _window(text: str, now: datetime) -> QueryWindow | None:
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    base = now.astimezone(UTC).replace(tzinfo=None)
    season = _SEASON.search(text)
    if season is not None:
        return _season_window(season, base.date())
    # dateparser takes ~1 s to import: only for queries that may carry a date
    from dateparser.date import DateDataParser
    from dateparser.search import search_dates

    settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past", "RETURN_TIME_AS_PERIOD": True}
    found: list[QueryWindow] = []
    for fragment in _FRAGMENT.split(_COMMA_YEAR.sub(" ", text)):
        if not fragment.strip():
            continue
        try:
            found += _fragment_windows(fragment, base, settings, DateDataParser, search_dates)
        except Exception as exc:  # a parser failure costs the window, never the search
            logger.warning("query date search failed: %s", exc)
    absolute = [w for w in found if _ABSOLUTE.search(w.expression)]
    chosen = absolute or found
    return chosen[0] if chosen else None


def _fragment_windows(
    fragment: str, base: datetime, settings: dict[str, Any], parser: Any, search: Any
) -> list[QueryWindow]:
    searchable, made = searchable_fragment(fragment, base.date())
    windows = []
    for expression, when in search(searchable, languages=["en"], settings=settings) or []:
        if not _accepted(expression, searchable, searchable.find(expression)):
            continue
        period = parser(languages=["en"], settings=settings).get_date_data(expression).period or "day"
        start, end = window_of(when.date(), period)
        said = as_said(expression.strip(), made)
        if "weekend" in said.lower():  # searched as its Saturday: the window takes Sunday too
            end += timedelta(days=1)
        windows.append(QueryWindow(start, end, said, period))
    return windows
