"""When a message's event happened: relative expressions resolved against the message's timestamp.

`dateparser.search.search_dates` with the message time as RELATIVE_BASE does the resolving
("yesterday", "last Saturday", "next month", "two weeks ago"). Its search also matches ordinary
chat words that happen to be date abbreviations ("We" → Wednesday, "may" → May, "now"), so a match
counts only if, function words aside, it holds a number or a word longer than three letters; and a
bare year or month name ("2023", "May") is not taken as the event's date: it names a span, not a day.

Rewrites of the searched text, each for something dateparser does not read; the expression
recorded keeps the message's own words:
- a possessive or contracted "'s" after a word ("Tomorrow's opening", "this week's been busy"): the
  search then finds nothing at all, so the "'s" is dropped before searching;
- "weekend" after last/this/next/past/this past: dateparser has no weekend, so it is searched as
  that weekend's Saturday (its first day; "last weekend" said on Monday 8 May is Saturday 6 May);
- an approximate count before "ago" or after "in" ("a few weeks ago", "in a couple of days",
  "several years ago") and "the other day": searched as that many units ago or ahead, a few and
  several as three, a couple as two, the other day as three days; the date is approximate, as the
  words are;
- "the day before yesterday" and "the day after tomorrow", of which dateparser reads only the last
  word: searched as two days ago and in two days;
- a season after last/this/next ("last summer"): searched as the first day of that season (see
  `season_start`).
"Recently" and "lately" name no day and stay unresolved: the event date is then the message's own
time, and no expression is recorded.

A date that leaves its year (or week) open ("June 5th", "Friday") is the previous occurrence before
the message, unless its sentence looks ahead ("see you on Friday June 5th!", "next", "we'll meet on
Friday"): then it is the next one. Said on 2026-05-12, "see you on Friday June 5th!" is 2026-06-05.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime

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
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# Words that put a sentence in the future. English marks the future with a closed set of
# auxiliaries and phrases (will, shall, going to, about to...) and a few adverbs of time ahead;
# dateparser has no notion of tense, so a date without a year would otherwise always be past.
_AHEAD = re.compile(
    r"\b(?:see\s+you|next|will|shall|going\s+to|gonna|about\s+to|plan(?:s|ning)?\s+to|let's|"
    r"looking\s+forward|can't\s+wait|cannot\s+wait|upcoming|coming\s+up|tomorrow|"
    r"soon)\b|\w'll\b",
    re.I,
)


def looks_ahead(sentence: str) -> bool:
    """Whether the sentence speaks of something still to come (see `_AHEAD`)."""
    return bool(_AHEAD.search(sentence.replace("\u2019", "'")))


_POSSESSIVE = re.compile(r"(?<=\w)['\u2019]s\b", re.I)
_WEEKEND = re.compile(r"\b(this\s+past|last|this|next|past)\s+weekend\b", re.I)
_WEEKEND_AS = "saturday"
# How many units an approximate count stands for: "a few" and "several" are read as three, "a
# couple" as two, so that "a few weeks ago" dates the event about three weeks back. Without a number
# dateparser finds nothing there and the event gets the message's own day, further off.
_APPROXIMATE = re.compile(
    r"\b(in\s+)?(a\s+few|few|several|a\s+couple(?:\s+of)?|couple\s+of)\s+(day|week|month|year)s?"
    r"(\s+ago)?\b",
    re.I,
)
_OTHER_DAY = re.compile(r"\bthe\s+other\s+day\b", re.I)
# dateparser reads only the last word of these ("yesterday", "tomorrow"): a day off.
_DAY_BEYOND = re.compile(r"\bthe\s+day\s+(before\s+yesterday|after\s+tomorrow)\b", re.I)
_SEASON = re.compile(r"\b(this\s+past|last|this|next|past)\s+(spring|summer|fall|autumn|winter)\b", re.I)
# A determiner before "last summer" makes it a noun phrase ("the last summer of college", "my last
# fall"), not a date: the closed class of English determiners that can stand there.
_DETERMINERS = frozenset({"the", "a", "my", "your", "his", "her", "its", "our", "their"})
# Meteorological seasons of the northern hemisphere, where the service's users and its development
# data (LoCoMo) are; the first month of each (winter runs December to February).
_SEASON_MONTH = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}


def season_start(which: str, season: str, said: date) -> date:
    """The first day of the season meant by `which` ("last", "this", "next"; "past" and "this
    past" are "last") said on `said`. "last summer" is the latest summer that ended before that day
    (said in May 2023: June 2022; said in October 2023: June 2023); "this summer" the one that
    starts in that day's year (for winter said in January or February, the one under way); "next"
    the one a year after "this"."""
    month = _SEASON_MONTH[season.lower()]
    which = " ".join(which.lower().split())
    if which in ("last", "past", "this past"):
        year = said.year
        while _add_months(date(year, month, 1), 3) > said:
            year -= 1
        return date(year, month, 1)
    year = said.year - 1 if month == 12 and said.month <= 2 else said.year
    return date(year + (which == "next"), month, 1)


def _add_months(day: date, months: int) -> date:
    index = day.month - 1 + months
    return date(day.year + index // 12, index % 12 + 1, 1)


def _searchable(fragment: str, said: date) -> tuple[str, list[tuple[str, str]]]:
    """The fragment as dateparser is asked it, and each (searched, said) substitution made."""
    made: list[tuple[str, str]] = []

    def swap(match: re.Match[str], searched: str) -> str:
        made.append((searched, match.group(0)))
        return searched

    def approximate(match: re.Match[str]) -> str:
        ahead, quantifier, unit, ago = match.groups()
        if bool(ahead) == bool(ago):  # "a few weeks" alone is a duration; "in ... ago" is nonsense
            return match.group(0)
        count = "2" if "couple" in quantifier.lower() else "3"
        return swap(match, f"in {count} {unit.lower()}s" if ahead else f"{count} {unit.lower()}s ago")

    def weekend(match: re.Match[str]) -> str:
        # "past" and "this past" say "last"; dateparser reads "past saturday" as "saturday" alone.
        which = match.group(1).lower()
        return swap(match, f"{'last' if 'past' in which else which} {_WEEKEND_AS}")

    def season(match: re.Match[str]) -> str:
        before = match.string[: match.start()].split()[-1:]
        if before and before[0].lower() in _DETERMINERS:
            return match.group(0)
        return swap(match, season_start(match.group(1), match.group(2), said).isoformat())

    text = _POSSESSIVE.sub("", fragment)
    text = _WEEKEND.sub(weekend, text)
    text = _APPROXIMATE.sub(approximate, text)
    text = _OTHER_DAY.sub(lambda m: swap(m, "3 days ago"), text)
    text = _DAY_BEYOND.sub(
        lambda m: swap(m, "2 days ago" if "before" in m.group(1).lower() else "in 2 days"), text
    )
    text = _SEASON.sub(season, text)
    return text, made


def _as_said(expression: str, made: list[tuple[str, str]]) -> str:
    """The expression in the message's words: what a substitution put in is said back as it was."""
    for searched, said in made:
        # Case-blind, since dateparser may change the case; `said`'s backslashes escaped, since a
        # replacement string's are read as group references.
        expression = re.compile(re.escape(searched), re.I).sub(said.replace("\\", "\\\\"), expression)
    # dateparser may join a following word to a date it was given ("2023-06-01 we"): not said as
    # part of the expression.
    words = expression.split()
    while made and len(words) > 1 and words[-1].lower() in ENGLISH_STOP_WORDS:
        words.pop()
    return " ".join(words)


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

    relative = _naive_utc(base)
    # Searched phrase by phrase: dateparser's search misses a date that opens a longer sentence
    # ("Last week, someone wrote me" finds nothing; "Last week" alone is found).
    for sentence in _SENTENCE.split(text):
        prefer = "future" if looks_ahead(sentence) else "past"
        settings = {"RELATIVE_BASE": relative, "PREFER_DATES_FROM": prefer}
        for fragment in _FRAGMENT.split(sentence):
            if not fragment.strip():
                continue
            try:
                searchable, made = _searchable(fragment, relative.date())
                found = search_dates(searchable, languages=["en"], settings=settings)
            except Exception as exc:  # a parser failure costs the date, never the message
                logger.warning("date search failed: %s", exc)
                continue
            for expression, when in found or []:
                if _accepted(expression):
                    resolved = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
                    said = _as_said(_TRAILING_CONJUNCTION.sub("", expression.strip()), made)
                    return EventDate(when=resolved, expression=said)
    return EventDate(when=base.astimezone(UTC), expression="")


def searchable_fragment(fragment: str, said: date) -> tuple[str, list[tuple[str, str]]]:
    """`fragment` with the rewrites above, as dateparser is asked it, and each (searched, said)
    substitution made; query windows (extraction/query_time.py) read queries the same way."""
    return _searchable(fragment, said)


def as_said(expression: str, made: list[tuple[str, str]]) -> str:
    """A found expression in the fragment's own words (the substitutions said back)."""
    return _as_said(expression, made)
