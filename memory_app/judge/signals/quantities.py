"""Amounts as a person reads them: a value with its unit or currency, however it is written.

"$1,800", "1800 USD" and "eighteen hundred dollars" are one amount; so are "5 km" and "five
kilometres", "100°C" and "100 degrees Celsius", "~7h" and "about 7 hours". The judge's vetoes compare
texts word by word and symbol by symbol, so before they do, `canonical()` rewrites every amount that
states a unit or a currency as "<value> <unit>" (a sign kept as "-"), and both sides meet in one
notation. Nothing here makes two different amounts equal: another value, sign, currency or unit gives
another canonical form, and a unit or currency stated on one side only is a difference too
(`quantities()` of the two sides differ). Units are not converted (37 °C and 98.6 °F stay apart):
a conversion is a claim the judge does not check.

Units come from pint's registry, currencies from the CLDR data babel ships (English symbols, ISO
codes and names); numbers written as words use the judge's own number words (`lexicon.NUMBER_WORDS`).
Pure functions of one text, cached like the rest of `text_norm`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from memory_app.judge.signals.lexicon import MULTIPLIERS, NUMBER_WORDS, STOPWORDS


@dataclass(frozen=True)
class Quantity:
    """One amount: its value (signed) and its canonical unit ("kilometer", "degree_Celsius", "USD")."""

    value: float
    unit: str


@dataclass(frozen=True)
class _Token:
    kind: str  # "num", "word", "sym" or "clock"
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class _Match:
    quantity: Quantity
    start: int
    end: int


_TOKENS = re.compile(
    r"(?P<clock>\d{1,2}(?::\d{2})+)"
    r"|(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"|(?P<word>[^\W\d_]+)"
    r"|(?P<sym>[^\w\s])"
)
# Hyphen-minus, the minus sign and an en dash typed for one (U+2013 before "3°C"); only written right
# before the amount and not after a letter or digit, so an en dash in "60-100" stays a range.
_SIGNS = frozenset("-\u2212\u2013")
# "~7h" reads "about 7 hours"; "about" is a stop word, so the tilde is dropped like it.
_APPROXIMATELY = frozenset("~\u2248")
_HYPHENS = frozenset("-\u2010\u2011")
# Longest unit or currency name read after a number, in words ("degrees Celsius", "US dollars").
_MAX_UNIT_WORDS = 3


def _tokens(text: str) -> list[_Token]:
    out = []
    for match in _TOKENS.finditer(text):
        kind = match.lastgroup or "sym"
        out.append(_Token(kind, match.group(0), match.start(), match.end()))
    return out


def units_load() -> None:
    """Load the unit registry now (server warm-up), not on the first amount a request reads."""
    _registry()


@lru_cache(maxsize=1)
def _registry() -> Any:
    # start-up cost: the unit registry (about a second) only when a text states an amount
    import pint

    return pint.UnitRegistry()


# A prefixed unit is read only when written as a two-letter symbol (km, kg, ml, GB) or with its
# prefix spelled out (kilometres, milligrams): pint also splits ordinary words into a prefix and a
# unit symbol ("cats" = centi + technical atmosphere, "hats" = hecto + ...).
_PREFIXED_SYMBOL_LENGTH = 2


@lru_cache(maxsize=4096)
def unit_name(word: str) -> str:
    """pint's canonical name of a unit as written ("km" and "kilometres" -> "kilometer"), or ''."""
    word = unicodedata.normalize("NFKC", word)
    # A capital letter after a number is a magnitude or a name far more often than a unit: "a 5K
    # run", "$5M", "4K", "3D", and "100 F" means Fahrenheit, not farads.
    if not word or word.casefold() in STOPWORDS or (len(word) == 1 and word.isupper()):
        return ""
    try:
        readings = _registry().parse_unit_name(word, case_sensitive=True)
    except Exception:  # pint raises several types for odd input; any of them means "not a unit"
        return ""
    plain = sorted(unit for prefix, unit, _ in readings if not prefix)
    if plain:
        name = plain[0]
    else:
        prefixed = [
            prefix + unit
            for prefix, unit, _ in readings
            if len(word) <= _PREFIXED_SYMBOL_LENGTH or word.casefold().startswith(prefix)
        ]
        if not prefixed:
            return ""
        name = sorted(prefixed)[0]
    # Physical constants (k, c, G) are not units anyone states an amount in.
    return "" if "constant" in name else name


@lru_cache(maxsize=1)
def _currency_table() -> tuple[dict[str, str], dict[str, str], frozenset[str]]:
    """English currency symbols, names and ISO codes from CLDR (babel): what "$", "euros" or
    "British pounds" stand for.

    A bare noun ("dollars", "pounds", "yen") stands for the currency whose English symbol has no
    letters ("$" is USD, "CA$" is CAD), when exactly one does."""
    from babel import Locale
    from babel.numbers import get_currency_name

    english = Locale("en")
    symbols: dict[str, str] = {}
    names: dict[str, str] = {}
    bare: dict[str, set[str]] = {}
    for key in english.currencies:
        code = str(key)
        symbol = str(english.currency_symbols.get(code, code))
        if symbol != code:
            symbols[symbol] = code
        for count in (1, 2):
            name = get_currency_name(code, count=count, locale="en").casefold()
            names[name] = code
            if not any(ch.isalpha() for ch in symbol):
                bare.setdefault(name.split()[-1], set()).add(code)
    for noun, codes in bare.items():
        if len(codes) == 1:
            names.setdefault(noun, next(iter(codes)))
    return symbols, names, frozenset(str(code) for code in english.currencies)


# What `_currency_word` returns for a word that names a currency and a unit of measure alike.
AMBIGUOUS = "?"


def _currency_word(words: list[str]) -> tuple[str, int]:
    """(ISO code, words used) for a currency named by the first 1-3 of `words`, or ('', 0)."""
    _, names, codes = _currency_table()
    for size in range(min(_MAX_UNIT_WORDS, len(words)), 0, -1):
        phrase = " ".join(words[:size])
        code = names.get(phrase.casefold())
        if code:
            # "5 pounds" is money or a weight: such a word is read as neither, so it never equals
            # "£5" (money on one side only); against "5 lbs" it leaves the unit unsaid.
            if size == 1 and unit_name(phrase):
                return AMBIGUOUS, 1
            return code, size
    if words and words[0] in codes:  # "USD", written in capitals
        return words[0], 1
    return "", 0


def _currency_symbol(tokens: list[_Token], index: int) -> tuple[str, int]:
    """(ISO code, tokens used) for a currency symbol at `index`: "$", "€", or "CA$" / "US$"."""
    symbols, _, _ = _currency_table()
    token = tokens[index]
    if token.kind == "sym" and unicodedata.category(token.text) == "Sc":
        return symbols.get(token.text, token.text), 1
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    if token.kind == "word" and following is not None and following.start == token.end:
        code = symbols.get(token.text + following.text)
        if code:
            return code, 2
    return "", 0


def _number_words(tokens: list[_Token], index: int) -> tuple[float | None, int]:
    """The value of a run of number words at `index` ("eighteen hundred", "twenty-five"), the
    same reading `text_norm.numbers` gives, and the tokens it spans."""
    value: float | None = None
    used = 0
    i = index
    while i < len(tokens):
        token = tokens[i]
        word = token.text.casefold()
        if token.kind == "word" and word in NUMBER_WORDS:
            number = float(NUMBER_WORDS[word])
            if word in MULTIPLIERS and value is not None:
                value *= number
            elif value is not None and value >= 20 and number < 10:
                value += number
            elif value is None:
                value = number
            else:
                break
            used = i - index + 1
            i += 1
            continue
        # "twenty-five": a hyphen joining two number words.
        joined = (
            token.kind == "sym"
            and token.text in _HYPHENS
            and value is not None
            and i + 1 < len(tokens)
            and tokens[i + 1].kind == "word"
            and tokens[i + 1].text.casefold() in NUMBER_WORDS
        )
        if not joined:
            break
        i += 1
    return value, used


def _unit_after(tokens: list[_Token], index: int) -> tuple[str, int]:
    """(unit, tokens used) for a unit, percent sign or currency right after a number at `index`."""
    i = index
    # "14-day", "5-year-old": a hyphen joins the number to its unit.
    if i < len(tokens) and tokens[i].kind == "sym" and tokens[i].text in _HYPHENS:
        if i + 1 < len(tokens) and tokens[i + 1].kind == "word" and tokens[i + 1].start == tokens[i].end:
            i += 1
        else:
            return "", 0
    if i >= len(tokens):
        return "", 0
    if tokens[i].kind == "sym":
        unit, used = _symbol_unit(tokens, i)
    elif tokens[i].kind == "word":
        unit, used = _word_unit(tokens, i)
    else:
        return "", 0
    return (unit, i - index + used) if unit else ("", 0)


def _symbol_unit(tokens: list[_Token], i: int) -> tuple[str, int]:
    """(unit, tokens used from `i`) for a percent sign, degree sign or currency symbol at `i`."""
    token = tokens[i]
    if token.text == "%":
        return "percent", 1
    if token.text == "°":
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if following is not None and following.kind == "word" and following.start == token.end:
            name = unit_name("°" + following.text)
            if name:
                return name, 2
        return "degree", 1
    code, used = _currency_symbol(tokens, i)
    if code:
        return code, used
    name = unit_name(token.text)  # "℃" folds to "°C"
    return (name, 1) if name else ("", 0)


def _word_unit(tokens: list[_Token], i: int) -> tuple[str, int]:
    """(unit, tokens used from `i`) for a unit or currency named in words at `i`."""
    words: list[str] = []
    for j in range(i, min(i + _MAX_UNIT_WORDS, len(tokens))):
        if tokens[j].kind != "word":
            break
        words.append(tokens[j].text)
    code, used = _currency_word(words)
    if code == AMBIGUOUS:
        return "", 0
    if code:
        return code, used
    # "degrees Celsius" is pint's degree_Celsius; "degrees" alone is an angle.
    if len(words) >= 2:
        singular = words[0].removesuffix("s")
        name = unit_name(f"{singular}_{words[1]}")
        if name:
            return name, 2
    name = unit_name(words[0])
    return (name, 1) if name else ("", 0)


@lru_cache(maxsize=8192)
def _matches(text: str) -> tuple[_Match, ...]:
    """Every amount of `text` (frozen matches, so quantities, canonical and spans of one text share
    one reading)."""
    return tuple(_read_matches(text))


_DIGIT = re.compile(r"\d")
_LETTERS = re.compile(r"[^\W\d_]+")  # _TOKENS' word tokens


def _has_number(text: str) -> bool:
    """Whether any token could start an amount (`_number_at`): digits, or a number word. Most texts
    state none, and tokenising them cost a search's collapse ~70 us a text."""
    return _DIGIT.search(text) is not None or any(
        word.casefold() in NUMBER_WORDS for word in _LETTERS.findall(text)
    )


def _read_matches(text: str) -> list[_Match]:
    return _read_tokens(text) if _has_number(text) else []


def _read_tokens(text: str) -> list[_Match]:
    tokens = _tokens(text)
    found: list[_Match] = []
    i = 0
    while i < len(tokens):
        number = _number_at(tokens, i)
        if number is None:
            i += 1
            continue
        value, used = number
        start_index, end_index = i, i + used
        unit, size = _currency_before(tokens, start_index - 1)
        if unit:
            start_index -= size
        else:
            unit, after_used = _unit_after(tokens, end_index)
            end_index += after_used
        if not unit:
            i = end_index
            continue
        start_index, value = _signed(text, tokens, start_index, value)
        found.append(_Match(Quantity(value, unit), tokens[start_index].start, tokens[end_index - 1].end))
        i = end_index
    return found


def _number_at(tokens: list[_Token], i: int) -> tuple[float, int] | None:
    """(value, tokens used) of a number in digits or words starting at `i`, or None."""
    token = tokens[i]
    if token.kind == "num":
        value = float(token.text.replace(",", ""))
        # "5 million": a multiplier word after digits.
        if i + 1 < len(tokens) and tokens[i + 1].text.casefold() in MULTIPLIERS:
            return value * MULTIPLIERS[tokens[i + 1].text.casefold()], 2
        return value, 1
    if token.kind == "word" and token.text.casefold() in NUMBER_WORDS:
        words_value, used = _number_words(tokens, i)
        assert words_value is not None
        return words_value, used
    return None


def _currency_before(tokens: list[_Token], before: int) -> tuple[str, int]:
    """(currency, tokens used) written before a number, ending at `before`: "$1,800", "€5",
    "US$ 20", "USD 100" (a sign before either is read by _signed)."""
    if before < 0:
        return "", 0
    code, size = "", 0
    if before >= 1:
        code, size = _currency_symbol(tokens, before - 1)
        code = code if size == 2 else ""
    if not code and tokens[before].kind == "sym":
        code, size = _currency_symbol(tokens, before)
    if not code and tokens[before].kind == "word":
        code, size = _currency_word([tokens[before].text])
        code = code if tokens[before].text.isupper() and code != AMBIGUOUS else ""
    return (code, size) if code and size else ("", 0)


def _signed(text: str, tokens: list[_Token], start_index: int, value: float) -> tuple[int, float]:
    """A sign or "~" written right before the amount: "-3°C", "-$40", "~7h", "~-2"."""
    while start_index >= 1:
        mark = tokens[start_index - 1]
        stuck = mark.end == tokens[start_index].start
        previous_end = tokens[start_index - 2].end if start_index >= 2 else -1
        free = previous_end < mark.start or not text[previous_end - 1 : previous_end].isalnum()
        if stuck and free and mark.text in _SIGNS:
            value = -value
        elif not (stuck and mark.text in _APPROXIMATELY):
            break
        start_index -= 1
    return start_index, value


@lru_cache(maxsize=8192)
def quantities(text: str) -> frozenset[Quantity]:
    """Every amount the text states with a unit or currency, as (value, canonical unit)."""
    return frozenset(match.quantity for match in _matches(text))


def _written(quantity: Quantity) -> str:
    value = quantity.value
    number = str(int(value)) if value == int(value) else repr(value)
    # Lower case and without underscores, so the rules read the unit as one common word, never as
    # a name ("USD") or a code identifier ("degree_Celsius").
    return f"{number} {quantity.unit.replace('_', '').casefold()}"


@lru_cache(maxsize=8192)
def canonical(text: str) -> str:
    """The text with each amount rewritten in one notation ("$1,800" -> "1800 usd")."""
    matches = _matches(text)
    if not matches:
        return text
    parts = []
    position = 0
    for match in matches:
        parts.append(text[position : match.start])
        parts.append(_written(match.quantity))
        position = match.end
    parts.append(text[position:])
    return "".join(parts)


@lru_cache(maxsize=8192)
def spans(text: str) -> tuple[tuple[int, int, Quantity], ...]:
    """(start, end, quantity) of each amount as written in `text`."""
    return tuple((match.start, match.end, match.quantity) for match in _matches(text))


def _strict(unit: str) -> bool:
    """Money and shares: "$5" or "5 %" against a bare "5" is another claim (it was a differing
    symbol before amounts were read); a unit of measure left out ("twelve" / "12 years old",
    "2 coffees" / "two cups of coffee") only leaves it unsaid."""
    return unit == "percent" or unit in _currency_table()[2]


def differ(old: str, new: str, old_values: frozenset[float], new_values: frozenset[float]) -> bool:
    """Whether the two texts' amounts are not the same: a value one side states with a unit that
    the other does not state at all (a sign counts: -3 °C / 3 °C), one value in other units or
    currencies on the two sides, or money or a share on one side only. `*_values` are each text's
    plain numbers (`text_norm.numbers` of its canonical form), which carry no sign."""
    old_amounts, new_amounts = quantities(old), quantities(new)
    if any(_strict(amount.unit) for amount in old_amounts ^ new_amounts):
        return True
    old_units: dict[float, set[str]] = {}
    new_units: dict[float, set[str]] = {}
    for amounts, units in ((old_amounts, old_units), (new_amounts, new_units)):
        for amount in amounts:
            units.setdefault(amount.value, set()).add(amount.unit)
    if any(value not in new_units and value not in new_values for value in old_units):
        return True
    if any(value not in old_units and value not in old_values for value in new_units):
        return True
    return any(old_units[value] != new_units[value] for value in old_units.keys() & new_units.keys())


def unit_words(text: str) -> frozenset[str]:
    """The unit and currency words `canonical(text)` writes ("usd", "kilometer", "degreecelsius")."""
    return frozenset(_written(amount).split()[1] for amount in quantities(text))
