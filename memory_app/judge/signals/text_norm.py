"""Tokens, numbers and stemmed word classes for the offline judge's features (pure, no database).

The raw word lists live in `lexicon.py`.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from memory_app.judge.signals import lexicon
from memory_app.judge.signals.lexicon import (
    ANTONYM_PAIRS,
    CANONICAL,
    MONTHS,
    NEGATORS,
    NUMBER_WORDS,
    STOPWORDS,
    WEEKDAYS,
)

__all__ = ["ANTONYM_PAIRS", "CANONICAL", "MONTHS", "NEGATORS", "NUMBER_WORDS", "STOPWORDS", "WEEKDAYS"]

_TOKEN = re.compile(r"n't|\d+(?:[.,:]\d+)*|[a-z]+(?:'s)?")
_NUMERIC = re.compile(r"^\d+(?:[.,:]\d+)*$")


_ROMAN = {"II": "2", "III": "3", "IV": "4", "VI": "6", "VII": "7", "VIII": "8", "IX": "9", "XII": "12"}
_ROMAN_TOKEN = re.compile(r"\b(" + "|".join(sorted(_ROMAN, key=len, reverse=True)) + r")\b")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
# "a fifth of their pay" is 20 %, the form a percentage takes in words.
_FRACTIONS = {"half": "50", "third": "33", "quarter": "25", "fifth": "20", "tenth": "10"}
_FRACTION = re.compile(r"\b(?:a|one)\s+(" + "|".join(_FRACTIONS) + r")\b")


def _iso_date(match: re.Match[str]) -> str:
    year, month, day = match.groups()
    if not 1 <= int(month) <= 12:
        return match.group(0)
    return f"{int(day)} {_MONTH_NAMES[int(month) - 1]} {year}"


_DIGIT = re.compile(r"\d")
_NUMBER_ONE = re.compile(r"\bnumber (?:one|1)\b")
_NOT = re.compile(r"(\w)n't\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_DIGIT_LETTER = re.compile(r"(\d)([a-z])")
_PM = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(?:p\.?\s?m\b\.?)")
_ROMAN_LETTERS = frozenset("IVX")


def _clean(text: str) -> str:
    # Each rewrite runs only when the text holds what its pattern cannot match without (a "-" for an
    # ISO date, a digit for the clock and unit splits): the same result, and most texts skip most
    # patterns. A search's collapse reads ~30 texts new to the process; this cost ~30 us a text.
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    # Before case folding: only capital Roman numerals are numbers ("type II"), "ii" is not.
    if not _ROMAN_LETTERS.isdisjoint(text):
        text = _ROMAN_TOKEN.sub(lambda m: _ROMAN[m.group(1)], text)
    if "-" in text:
        text = _ISO_DATE.sub(_iso_date, text)
    text = text.casefold()
    if any(word in text for word in _FRACTIONS):
        text = _FRACTION.sub(lambda m: _FRACTIONS[m.group(1)] + " percent", text)
    # The idiom, not a count: "Thai is their number one cuisine".
    if "number " in text:
        text = _NUMBER_ONE.sub("top", text)
    text = text.replace("%", " percent ")
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    if "n't" in text:
        text = _NOT.sub(r"\1 n't", text)
    if _DIGIT.search(text) is None:
        return text
    # "1,800" is one number; "14-day" and "5k" split into the number and the word.
    if "," in text:
        text = _THOUSANDS.sub("", text)
    text = _DIGIT_LETTER.sub(r"\1 \2", text)
    text = _PM.sub(_to_24h, text)
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


@lru_cache(maxsize=8192)
def raw_tokens(text: str) -> tuple[str, ...]:
    # Cached, like every per-text function here (all return immutable values): a new memory meets
    # several candidates and a stored text many new memories, and each pair feature re-reads both.
    return tuple(_TOKEN.findall(_clean(text)))


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


@lru_cache(maxsize=8192)
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
            if word in lexicon.MULTIPLIERS and pending is not None:
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


@lru_cache(maxsize=8192)
def content_sequence(text: str) -> tuple[str, ...]:
    """Stemmed content words in order of first appearance (content_words keeps no order)."""
    seen: dict[str, None] = {}
    for tok in raw_tokens(text):
        if _NUMERIC.match(tok) or tok == "n't":
            continue
        base = tok[:-2] if tok.endswith("'s") else tok
        if base in STOPWORDS or base in NUMBER_WORDS or len(base) < 2:
            continue
        seen.setdefault(stem(base), None)
    return tuple(seen)


@lru_cache(maxsize=8192)
def content_words(text: str) -> frozenset[str]:
    """Stemmed words that carry meaning: no stop words, no number words, no digits."""
    return frozenset(content_sequence(text))


@lru_cache(maxsize=8192)
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
PERSON_NOUNS = frozenset(stem(w) for w in lexicon.PERSON_NOUNS_WORDS)

# Words that announce a changed value ("now", "switched", "no longer").
CHANGE_MARKERS = frozenset(stem(w) for w in lexicon.CHANGE_MARKERS_WORDS)


# Units of measure: the same number in another unit is another quantity ("12 years" vs "12 pounds").
UNITS = frozenset(stem(w) for w in lexicon.UNITS_WORDS)

# Words that place a fact in time relative to now: "wants to lose" (future) vs "lost last summer".
TIME_MARKERS = frozenset(stem(w) for w in lexicon.TIME_MARKERS_WORDS if w not in STOPWORDS)


def _synonym_table() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for group in lexicon.SYNONYM_GROUPS:
        members = {stem(w) for w in group.split()}
        for member in members:
            table.setdefault(member, set()).update(members)
    return {word: frozenset(members) for word, members in table.items()}


# Stem -> the stems of its listed synonyms (lexicon.SYNONYM_GROUPS), itself included.
SYNONYMS = _synonym_table()


def morphological_negation(a: frozenset[str], b: frozenset[str]) -> bool:
    """One side has a word the other has with a negating prefix: fiction/nonfiction, able/unable.

    Each word is stripped of each prefix and looked up on the other side (linear in the words; the
    store judges five candidates per memory, and comparing every pair of words cost a third of it)."""
    for words, others in ((a, b), (b, a)):
        for word in words:
            for prefix in lexicon.NEGATING_PREFIXES:
                if len(word) - len(prefix) >= 4 and word.startswith(prefix) and word[len(prefix) :] in others:
                    return True
    return False


_IDENTIFIER = re.compile(r"\b\w+(?:[_=]\w+)+\b")


@lru_cache(maxsize=8192)
def identifiers(text: str) -> frozenset[str]:
    """Code-like tokens (snake_case names, key=value parameters), compared verbatim."""
    return frozenset(_IDENTIFIER.findall(text.casefold()))


def same_root(a: str, b: str, length: int = 4) -> bool:
    """Two stems sharing their first `length` letters are taken as forms of one word."""
    return len(a) >= length and len(b) >= length and a[:length] == b[:length]


@lru_cache(maxsize=8192)
def _words(text: str) -> tuple[str, ...]:
    """Words as written (case kept, "Fly.io" and "oslo-based" whole): what the name checks read."""
    return tuple(re.findall(r"[A-Za-z][\w.-]*", unicodedata.normalize("NFKC", text)))


@lru_cache(maxsize=8192)
def capitalised_names(text: str) -> frozenset[str]:
    """Capitalised words not at the start of the text: proper names, brands, places."""
    words = _words(text)
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


@lru_cache(maxsize=8192)
def name_sequence(text: str) -> tuple[str, ...]:
    """Capitalised words after the first word, in order: the entities a sentence relates."""
    words = _words(text)
    seen: dict[str, None] = {}
    for word in words[1:]:
        folded = word.casefold()
        if word[0].isupper() and folded not in STOPWORDS and stem(folded) not in MONTHS | WEEKDAYS:
            seen.setdefault(stem(folded), None)
    return tuple(seen)


@lru_cache(maxsize=8192)
def negation_count(text: str) -> int:
    return sum(1 for tok in raw_tokens(text) if tok in NEGATORS)


def frame_split(old: str, new: str) -> tuple[float, tuple[str, ...], tuple[str, ...]]:
    """Share of the shorter text's content words that sit in a common prefix or suffix, and the
    differing middles: "Omar's dog is scared of [thunderstorms | the vacuum cleaner]".

    Only the ends count: a paraphrase that keeps a few words in order but rewrites around them
    ("planning a trip to Iceland" / "intend to travel to Iceland") is not a frame (measured: an
    in-order alignment anywhere in the text caught many more true paraphrases, see EVALUATION.md).
    """
    a, b = content_sequence(old), content_sequence(new)
    shortest = min(len(a), len(b))
    prefix = 0
    while prefix < shortest and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    share = (prefix + suffix) / shortest if shortest else 0.0
    return share, a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]


@lru_cache(maxsize=8192)
def _initials(name: str) -> frozenset[str]:
    """Abbreviations a name may go by: its camel-case or hyphen initials (TypeScript -> ts)."""
    parts = re.findall(r"[A-Z][a-z]*|[a-z]+|\d+", name)
    return frozenset({"".join(p[0] for p in parts).casefold()}) if len(parts) > 1 else frozenset()


def _name_matched(name: str, other_text: str) -> bool:
    """A name restated on the other side: verbatim, as a prefix either way (Postgres/PostgreSQL,
    °C/Celsius), as initials of a run of words there (AWS/Amazon Web Services) or of itself (TS)."""
    folded = name.casefold()
    words = _words(other_text)
    for word in words:
        other = word.casefold()
        if other.startswith(folded) or (len(other) >= 3 and folded.startswith(other)):
            return True
        if other in _initials(name) or folded in _initials(word):
            return True
    capitals = "".join(w[0] for w in words if w[0].isupper()).casefold()
    return len(folded) >= 2 and folded.isalpha() and name.isupper() and folded in capitals


def foreign_names(old: str, new: str) -> bool:
    """Each side names something (after the first word) that the other does not restate in any
    form: another product, place or person (Heroku vs Fly.io), so another fact or a changed one."""
    old_names = _words(old)[1:]
    new_names = _words(new)[1:]

    def unmatched(names: tuple[str, ...], other: str) -> bool:
        return any(
            n[0].isupper() and n.casefold() not in STOPWORDS and not _name_matched(n.rstrip("."), other)
            for n in names
        )

    return unmatched(old_names, new) and unmatched(new_names, old)


# Words whose presence never changes the fact: articles and the service's own name for its user.
_BARE_DROP = frozenset({"a", "an", "the", "user", "user's", "users"})


@lru_cache(maxsize=8192)
def bare_tokens(text: str) -> tuple[str, ...]:
    """The text's tokens in order without articles and "user": equal only for restatements that
    differ in nothing else (pronouns, numbers, negators and punctuation-free words all stay)."""
    return tuple(tok for tok in raw_tokens(text) if tok not in _BARE_DROP)
