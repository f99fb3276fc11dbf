"""Tokens, numbers and word classes for the offline judge's features (pure functions, no database).

The word lists are general English (stop words, number words, negators, common antonym pairs,
abbreviations of months and weekdays); none of them is drawn from the labeled pairs.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache


def _words(block: str) -> list[str]:
    return block.split()


STOPWORDS = frozenset(
    _words(
        """a an the and or but if then than so of to in on at by for from with as into onto about over
    under after before during between through up down out off is are was were be been being am do does
    did doing has have had having will would shall should can could may might must it its this that
    these those there here which who whom whose what when where why how all any each every some such
    very just also too only own same other another more most much many few i me my mine we us our you
    your he him his she her hers they them their theirs themselves himself herself itself user users
    user's person someone one's s t re ve ll d m currently usually typically normally generally really
    around roughly approximately about nearly almost per via etc e g ca wo st nd rd th am pm"""
    )
)

# Ordinary English negators; "n't" is split off before tokenising.
NEGATORS = frozenset(_words("not no never none nothing nobody neither nor without cannot n't"))

NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "single": 1,
    "once": 1,
    "two": 2,
    "twice": 2,
    "pair": 2,
    "three": 3,
    "thrice": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "dozen": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
    "million": 1_000_000,
}
_MULTIPLIERS = {"hundred": 100, "thousand": 1000, "million": 1_000_000}

# Abbreviations with one unambiguous expansion (calendar words, common unit spellings).
CANONICAL = {
    "jan": "january",
    "feb": "february",
    "mar": "march",
    "apr": "april",
    "jun": "june",
    "jul": "july",
    "aug": "august",
    "sep": "september",
    "sept": "september",
    "oct": "october",
    "nov": "november",
    "dec": "december",
    "mon": "monday",
    "tue": "tuesday",
    "tues": "tuesday",
    "wed": "wednesday",
    "thu": "thursday",
    "thur": "thursday",
    "thurs": "thursday",
    "fri": "friday",
    "sat": "saturday",
    "sun": "sunday",
    "kg": "kilogram",
    "kilo": "kilogram",
    "km": "kilometer",
    "kilometre": "kilometer",
    "metre": "meter",
    "min": "minute",
    "mins": "minute",
    "hr": "hour",
    "hrs": "hour",
    "h": "hour",
    "lb": "pound",
    "lbs": "pound",
    "mum": "mom",
    "mother": "mom",
    "dad": "father",
    "colour": "color",
    "favourite": "favorite",
}

MONTHS = frozenset(
    _words("january february march april may june july august september october november december")
)
WEEKDAYS = frozenset(_words("monday tuesday wednesday thursday friday saturday sunday"))

# Common English antonym pairs (both directions are checked).
ANTONYM_PAIRS = (
    ("like", "dislike"),
    ("love", "hate"),
    ("start", "end"),
    ("start", "stop"),
    ("begin", "end"),
    ("open", "close"),
    ("older", "younger"),
    ("old", "young"),
    ("big", "small"),
    ("large", "small"),
    ("morning", "evening"),
    ("morning", "night"),
    ("day", "night"),
    ("early", "late"),
    ("before", "after"),
    ("buy", "sell"),
    ("sold", "bought"),
    ("win", "lose"),
    ("gain", "lose"),
    ("increase", "decrease"),
    ("more", "less"),
    ("maximum", "minimum"),
    ("max", "min"),
    ("high", "low"),
    ("higher", "lower"),
    ("fast", "slow"),
    ("hot", "cold"),
    ("left", "right"),
    ("up", "down"),
    ("in", "out"),
    ("first", "last"),
    ("past", "future"),
    ("always", "never"),
    ("accept", "reject"),
    ("allow", "forbid"),
    ("enable", "disable"),
    ("include", "exclude"),
    ("arrive", "depart"),
    ("outbound", "return"),
    ("husband", "wife"),
    ("brother", "sister"),
    ("son", "daughter"),
    ("mom", "father"),
    ("aunt", "uncle"),
    ("niece", "nephew"),
    ("grandmother", "grandfather"),
    ("male", "female"),
    ("single", "married"),
    ("married", "divorced"),
    ("personal", "business"),
    ("weekday", "weekend"),
    ("weeknight", "weekend"),
    ("weekly", "monthly"),
    ("monthly", "yearly"),
    ("daily", "weekly"),
    ("income", "expense"),
    ("save", "spend"),
    ("light", "dark"),
    ("window", "aisle"),
    ("tab", "space"),
)
_TOKEN = re.compile(r"n't|\d+(?:[.,:]\d+)*|[a-z]+(?:'s)?")
_NUMERIC = re.compile(r"^\d+(?:[.,:]\d+)*$")


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"(\w)n't\b", r"\1 n't", text)
    # "1,800" is one number; "14-day" and "5k" split into the number and the word.
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(\d)([a-z])", r"\1 \2", text)
    text = re.sub(r"\b(\d{1,2})(?::(\d{2}))?\s*(?:p\.?\s?m\b\.?)", _to_24h, text)
    return text


def _to_24h(match: re.Match[str]) -> str:
    """3:30 pm -> 15:30, so a 12-hour and a 24-hour clock compare equal."""
    hour = int(match.group(1))
    minutes = match.group(2) or "00"
    if hour < 12:
        hour += 12
    return f"{hour}:{minutes} "


@lru_cache(maxsize=4096)
def stem(word: str) -> str:
    """A deliberately small stemmer: possessive, plural, then -ing/-ed/-ly, then a final -e."""
    if word.endswith("'s"):
        word = word[:-2]
    word = CANONICAL.get(word, word)
    if len(word) <= 3 or _NUMERIC.match(word):
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "edly", "ed", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 4 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return CANONICAL.get(word, word)


def raw_tokens(text: str) -> list[str]:
    return _TOKEN.findall(_clean(text))


def _parse_number(token: str) -> float | None:
    if ":" in token:  # clock time 3:30 -> 3.5 hours past midnight-ish; keep as a distinct value
        hours, _, minutes = token.partition(":")
        try:
            return float(hours) + float(minutes.split(":")[0]) / 60.0
        except ValueError:
            return None
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None


def numbers(text: str) -> frozenset[float]:
    """Numeric values in the text, written as digits or as English number words."""
    values: list[float] = []
    pending: float | None = None
    for tok in raw_tokens(text):
        if _NUMERIC.match(tok):
            value = _parse_number(tok)
            if value is not None:
                if pending is not None:
                    values.append(pending)
                    pending = None
                values.append(value)
            continue
        word = tok[:-2] if tok.endswith("'s") else tok
        if word in NUMBER_WORDS:
            number = NUMBER_WORDS[word]
            if word in _MULTIPLIERS and pending is not None:
                pending *= number
            elif pending is not None and pending >= 20 and number < 10:
                pending += number
            else:
                if pending is not None:
                    values.append(pending)
                pending = float(number)
            continue
        if pending is not None:
            values.append(pending)
            pending = None
    if pending is not None:
        values.append(pending)
    return frozenset(values)


def content_words(text: str) -> frozenset[str]:
    """Stemmed words that carry meaning: no stop words, no number words, no digits."""
    out = set()
    for tok in raw_tokens(text):
        if _NUMERIC.match(tok) or tok == "n't":
            continue
        base = tok[:-2] if tok.endswith("'s") else tok
        if base in STOPWORDS or base in NUMBER_WORDS or len(base) < 2:
            continue
        out.add(stem(base))
    return frozenset(out)


def possessors(text: str) -> frozenset[str]:
    """Words marked with a possessive 's ("partner's", "Tom's"): who the fact is about."""
    out = set()
    for tok in raw_tokens(text):
        if tok.endswith("'s"):
            base = tok[:-2]
            if base not in STOPWORDS:
                out.add(stem(base))
    return frozenset(out)


# Kinship and social-role nouns: when one side names such a person and the other does not, the fact
# is about someone else ("User's wife goes to yoga" vs "User goes to yoga").
PERSON_NOUNS = frozenset(
    stem(w)
    for w in _words(
        """wife husband partner spouse fiance fiancee girlfriend boyfriend son daughter child children
    kid kids baby brother sister sibling mother mom father parent parents grandmother grandfather
    grandma grandpa
    grandparent grandchild grandchildren grandson granddaughter aunt uncle cousin niece nephew law in-law
    friend roommate flatmate neighbor neighbour colleague coworker boss manager mentor mentee teacher
    student doctor dentist therapist landlord tenant client customer team family dog cat pet"""
    )
)

# Words that announce a changed value ("now", "switched", "no longer").
CHANGE_MARKERS = frozenset(
    stem(w)
    for w in _words(
        """now anymore longer switched switch moved move changed change quit stopped stop started
    start became become relocated replaced instead promoted postponed rescheduled cancelled canceled
    left sold gave new latest updated"""
    )
)


def capitalised_names(text: str) -> frozenset[str]:
    """Capitalised words not at the start of the text: proper names, brands, places."""
    words = re.findall(r"[A-Za-z][\w.-]*", unicodedata.normalize("NFKC", text))
    out = set()
    for index, word in enumerate(words):
        if word[0].isupper() and word.casefold() not in STOPWORDS and (index > 0 or len(words) > 1):
            out.add(stem(word.casefold()))
    return frozenset(out)


def _antonym_table() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for left, right in ANTONYM_PAIRS:
        a, b = stem(left), stem(right)
        table.setdefault(a, set()).add(b)
        table.setdefault(b, set()).add(a)
    return {word: frozenset(others) for word, others in table.items()}


# Keyed by stem, like content_words(), so "dislikes" meets "like".
ANTONYMS = _antonym_table()


def negation_count(text: str) -> int:
    return sum(1 for tok in raw_tokens(text) if tok in NEGATORS)
