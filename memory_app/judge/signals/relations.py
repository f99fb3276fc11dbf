"""What kind of difference separates two short texts: another item, another occasion, another
subject, or a change of state. Pure functions of the two texts (no vectors, no database).

Each reads the pair as a person would (docs/JUDGE.md):
- a number or code that names an item ("Policy 6", "flight LH400", "order #1042") makes another
  subject, so another number there is another item, never a changed value;
- two happenings at different times ("ran 5 km on Monday" / "ran 10 km on Wednesday") are two
  events, both true;
- the same statement about someone or something else ("Alice is allergic..." / "Bob is
  allergic...") is another fact;
- a change word together with the attribute both texts state ("I live in Berlin" / "I moved to
  Munich") ends the older state.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from memory_app.judge.signals import lexicon, reach
from memory_app.judge.signals import text_norm as tn

_TOKEN = re.compile(
    r"#\s?\d+|[A-Z]{1,4}-?\d+[A-Za-z]?\b|\d+[A-Z]\b|[A-Za-z]+(?:'[A-Za-z]+)?|\d+(?:[.,:]\d+)*(?:[A-Za-z]+)?"
)
# A number followed by this closes its phrase ("Policy 6: ...", "Room 12, ..."): nothing it counts.
_PHRASE_END = re.compile(r"^\s*[:;,.!?)]")
# A code of letters then digits ("LH400", "B12", "A-3"): an item's name, not an amount.
_CODE = re.compile(r"^(?:[A-Z]{1,4}-?\d+[A-Za-z]?|\d+[A-Z])$")
_PLAIN_NUMBER = re.compile(r"^\d+(?:\.\d+)*$")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
# Words that open a noun phrase: the subject of "the kitchen light" or "my son Leo" is its second word.
_DETERMINERS = frozenset(lexicon.words("the a an my our your his her their this that these those"))


@lru_cache(maxsize=8192)
def tokens(text: str) -> tuple[str, ...]:
    """Words, numbers and codes as written (case kept), punctuation dropped."""
    return tuple(m.group(0) for m in _spans(text))


@lru_cache(maxsize=8192)
def _spans(text: str) -> tuple[re.Match[str], ...]:
    return tuple(_TOKEN.finditer(_plain(text)))


def _plain(text: str) -> str:
    """The text with typographic apostrophes as plain ones (same length: spans stay valid)."""
    return text.replace("\u2019", "'")


@lru_cache(maxsize=8192)
def stems(text: str) -> frozenset[str]:
    """Stems of every word but the stop words (number words too: "single", "double")."""
    return frozenset(tn.stem(w) for w in _folded(text) if w.isalpha() and w not in lexicon.STOPWORDS)


def _folded(text: str) -> tuple[str, ...]:
    return tuple(t.casefold() for t in tokens(text))


def _is_content(word: str) -> bool:
    folded = word.casefold()
    base = folded[:-2] if folded.endswith("'s") else folded
    return base.isalpha() and base not in lexicon.STOPWORDS and len(base) > 1


def _verb_form(word: str) -> bool:
    """-ed / -ing forms ("aged 34", "running 5"): a number after them is a value, not a name."""
    folded = word.casefold()
    return folded.endswith(("ed", "ing")) and len(folded) > 4


@lru_cache(maxsize=8192)
def item_codes(text: str) -> dict[str, str]:
    """Stemmed head noun -> the number or code that names the item ("Room 12" -> {"room": "12"}).

    A number names an item when it follows its noun directly and the sentence goes on without a
    noun it would count ("Room 12 is", "Policy 6:", "version 2.1 was"; not "ran 5 km", "is 7 years
    old", nor "BMI goal 23", whose number is the value stated), or when it is written as a code
    ("LH400") or after "#"."""
    spans = _spans(text)
    toks = tuple(m.group(0) for m in spans)
    found: dict[str, str] = {}
    for i, tok in enumerate(toks):
        head = toks[i - 1] if i > 0 else ""
        if tok.startswith("#"):
            found[tn.stem(head.casefold()) if _is_content(head) else "#"] = tok.lstrip("# ")
        elif _CODE.match(tok) and tok.casefold() not in tn.UNITS:
            if _is_content(head):
                found[tn.stem(head.casefold())] = tok
            elif tok[0].isalpha():  # "LH400" alone: its letters name the series
                found[tok.rstrip("0123456789")] = tok
        elif _names_item(text, spans[i], head, toks[i + 1] if i + 1 < len(toks) else ""):
            found[tn.stem(head.casefold())] = tok
    return found


def _names_item(text: str, span: re.Match[str], head: str, following: str) -> bool:
    """Whether the plain number `span` after `head` names an item rather than a value or a count."""
    head_folded = head.casefold()
    if not _PLAIN_NUMBER.match(span.group(0)) or not _is_content(head) or _verb_form(head):
        return False
    if head_folded in tn.MONTHS or head_folded in tn.WEEKDAYS or tn.stem(head_folded) in tn.UNITS:
        return False
    if not following:
        return False  # "BMI goal 23": a number that ends the text is the value stated
    closed = bool(_PHRASE_END.match(_plain(text)[span.end() :]))
    counts = _is_content(following) and not closed and not _past_verb(following)
    # "5 km", "bake 3 cakes": the number counts what follows. A capitalised head names a series
    # ("Bus 42 goes", "Chapter 3 covers") unless a unit follows.
    return not (counts and (not head[:1].isupper() or tn.stem(following.casefold()) in tn.UNITS))


def other_item(old: str, new: str) -> str:
    """'names another item: X / Y' when both texts name an item of the same kind by different
    numbers or codes, else ''."""
    old_codes, new_codes = item_codes(old), item_codes(new)
    for head in old_codes.keys() & new_codes.keys():
        if old_codes[head].casefold() != new_codes[head].casefold():
            return f"names another item: {old_codes[head]} / {new_codes[head]}"
    return ""


@lru_cache(maxsize=8192)
def time_anchors(text: str) -> frozenset[str]:
    """The points in time a text places itself at: a weekday, a month with or without a day, a
    year, or a relative point ("yesterday", "last week"). A plural weekday ("on Tuesdays") or
    "every" is a recurring schedule, which is a state, not a point."""
    toks = _folded(text)
    if "every" in toks:
        return frozenset()
    anchors = set()
    for i, tok in enumerate(toks):
        following = toks[i + 1] if i + 1 < len(toks) else ""
        if tok in tn.WEEKDAYS or tok in ("yesterday", "today", "tonight", "tomorrow"):
            anchors.add(tok)
        elif tok in tn.MONTHS:
            anchors.add(f"{tok} {following}" if following.isdigit() else tok)
        elif _YEAR.match(tok):
            anchors.add(tok)
        elif tok == "last" and following:
            anchors.add(f"last {following}")
        elif tok.removesuffix("'s") in ("yesterday", "today", "tonight", "tomorrow"):
            anchors.add(tok.removesuffix("'s"))  # "yesterday's match"
        elif tok == "ago" and i >= 2:
            anchors.add(" ".join(toks[i - 2 : i + 1]))
    return frozenset(anchors)


def _past_verb(word: str) -> bool:
    folded = word.casefold()
    if folded in lexicon.IRREGULAR_PAST:
        return True
    return folded.endswith("ed") and not folded.endswith("eed") and len(folded) > 4


@lru_cache(maxsize=8192)
def tells_past(text: str) -> bool:
    """Whether the text narrates something that happened: a verb in the past tense."""
    return any(_past_verb(tok) and tok not in lexicon.STOPWORDS for tok in _folded(text))


def other_occasion(old: str, new: str) -> str:
    """'another occasion: X / Y' when both texts tell a past happening at different points in
    time and the newer states no change, else ''."""
    old_at, new_at = time_anchors(old), time_anchors(new)
    if not old_at or not new_at or old_at == new_at:
        return ""
    if change_words(new) - change_words(old):
        return ""
    if not (tells_past(old) and tells_past(new)):
        return ""
    return f"another occasion: {', '.join(sorted(old_at))} / {', '.join(sorted(new_at))}"


def _opcodes(old: str, new: str) -> Sequence[tuple[str, int, int, int, int]]:
    matcher = difflib.SequenceMatcher(None, _folded(old), _folded(new), autojunk=False)
    return matcher.get_opcodes()


def other_subject(old: str, new: str) -> str:
    """'about another subject: X / Y' when the texts say the same thing (at least half of the longer
    text's words in the same order) of a different subject: the words that differ open the
    sentence (after a determiner at most), each side's are content words, and none restates the
    other's. Pronouns and "the user" are not another subject: they are stop words."""
    old_toks, new_toks = tokens(old), tokens(new)
    if not old_toks or not new_toks:
        return ""
    codes = _opcodes(old, new)
    changed = [c for c in codes if c[0] != "equal"]
    if not changed:
        return ""
    _, i1, i2, j1, j2 = changed[0]
    opening = max(i1, j1)
    if opening > 1 or (opening == 1 and old_toks[0].casefold() not in _DETERMINERS) or i1 != j1:
        return ""
    if not _mostly_equal(codes, old_toks, new_toks):
        return ""
    if not _another_subject(old_toks[i1:i2], new_toks[j1:j2]):
        return ""
    return f"about another subject: {' '.join(old_toks[i1:i2])} / {' '.join(new_toks[j1:j2])}"


def _mostly_equal(
    codes: Sequence[tuple[str, int, int, int, int]], old_toks: Sequence[str], new_toks: Sequence[str]
) -> bool:
    """At least half of the longer text's words stand in both, in order."""
    equal = sum(c[2] - c[1] for c in codes if c[0] == "equal")
    return 2 * equal >= max(len(old_toks), len(new_toks))


def _another_subject(old_opening: Sequence[str], new_opening: Sequence[str]) -> bool:
    """Each opening holds content words, none restates the other's, and none states a change or a time."""
    old_words = {tn.stem(w.casefold()) for w in old_opening if _is_content(w)}
    new_words = {tn.stem(w.casefold()) for w in new_opening if _is_content(w)}
    if not old_words or not new_words or old_words & new_words:
        return False
    return not (old_words | new_words) & (tn.CHANGE_MARKERS | tn.TIME_MARKERS)


# More exchanged words than this on a side is a rewording, not one phrase put in another's place.
_MAX_EXCHANGED = 3


def _exchangeable(old_words: Sequence[str], new_words: Sequence[str]) -> bool:
    """Each side puts one to _MAX_EXCHANGED content words in the other's place, none a change or
    time word, none a name."""
    if not old_words or not new_words or max(len(old_words), len(new_words)) > _MAX_EXCHANGED:
        return False
    if {tn.stem(w.casefold()) for w in [*old_words, *new_words]} & (tn.CHANGE_MARKERS | tn.TIME_MARKERS):
        return False
    # "lives in Toronto" / "in Vancouver": a named value exchanged may be an update.
    return not any(w[:1].isupper() for w in [*old_words, *new_words])


def exchanged_phrase(old: str, new: str) -> str:
    """'a phrase exchanged in the same frame: X / Y' when at least half of the longer text's words
    stand in both, in order, every other word of one side stands in the place of words of the
    other (nothing only inserted or dropped), and each side puts its own content words there
    ("drinks green tea every afternoon" / "drinks black coffee every morning"), else ''. Whether
    those words restate each other by meaning is the caller's to check (the word alignment)."""
    old_toks, new_toks = tokens(old), tokens(new)
    if not old_toks or not new_toks:
        return ""
    codes = _opcodes(old, new)
    if any(c[0] in ("insert", "delete") for c in codes):
        return ""  # words only one side has, beside the exchanged ones: a rewording
    if not _mostly_equal(codes, old_toks, new_toks):
        return ""
    old_words = [w for c in codes if c[0] != "equal" for w in old_toks[c[1] : c[2]] if _is_content(w)]
    new_words = [w for c in codes if c[0] != "equal" for w in new_toks[c[3] : c[4]] if _is_content(w)]
    if not _exchangeable(old_words, new_words):
        return ""
    frame = {tn.stem(w.casefold()) for c in codes if c[0] == "equal" for w in old_toks[c[1] : c[2]]}
    if frame & _ONE_VALUE:
        return ""  # "favorite language is Python" / "is Rust": an attribute with one value at a time
    return f"a phrase exchanged in the same frame: {' '.join(old_words)} / {' '.join(new_words)}"


# Words before a noun that the text attributes to its own subject: "Sofia is a teacher", "works as
# a nurse". A role noun there describes the subject; it is not another person.
_PREDICATE = re.compile(
    r"\b(?:is|was|am|are|were|became|become|as)\s+(?:a|an|the)?\s*((?:[a-z]+\s+){0,2}[a-z]+)",
    re.IGNORECASE,
)


@lru_cache(maxsize=8192)
def predicate_roles(text: str) -> frozenset[str]:
    """Stems of the nouns the text says its subject is ("is a student" -> {"student"})."""
    roles = set()
    for match in _PREDICATE.finditer(_plain(text)):
        for word in match.group(1).casefold().split():
            if word in lexicon.STOPWORDS:
                break  # "a friend of Bob": the noun phrase ends before "of"
            roles.add(tn.stem(word))
    return frozenset(roles)


def change_words(text: str) -> frozenset[str]:
    """The stemmed words of the text that announce a change of state or value."""
    return stems(text) & (tn.CHANGE_MARKERS | STATE_TRANSITIONS)


# The attribute each life-event verb changes, so that "moved to Munich" is read against "lives in
# Berlin" and "got married" against "is single": a change usually says what happened, not which
# attribute it ends, and no word is shared. Whole classes of states (where one lives, works or
# studies, with whom, what one eats or does), not any one pair's words.
_ATTRIBUTES = {
    "residence": (
        "live lives living lived home house apartment flat reside resides based moved move relocated "
        "relocate",
        "moved move relocated relocate",
    ),
    "work": (
        "work works working job employer employed company office hired joined quit fired retired "
        "promoted position role career",
        "hired joined quit fired retired promoted left",
    ),
    "partner": (
        "single married divorced engaged widowed separated dating partner boyfriend girlfriend "
        "husband wife spouse relationship",
        "married divorced engaged separated widowed",
    ),
    "study": (
        "study studies studying student school university college degree enrolled graduated",
        "enrolled graduated",
    ),
    "diet": (
        "vegetarian vegan pescatarian diet eat eats eating meat",
        "vegetarian vegan",
    ),
}
ATTRIBUTE_WORDS = {
    name: frozenset(tn.stem(w) for w in lexicon.words(members)) for name, (members, _) in _ATTRIBUTES.items()
}
STATE_TRANSITIONS = frozenset(
    tn.stem(w) for _, transitions in _ATTRIBUTES.values() for w in lexicon.words(transitions)
)
# A value that moved in a direction ("went up to", "rose to", "dropped to"): with a changed number
# in the same frame, as much a change word as "now".
VALUE_CHANGE = frozenset(
    tn.stem(w)
    for w in lexicon.words(
        "went rose risen increased decreased dropped fell grew raised lowered reduced cut doubled halved"
    )
)


# Words that begin something rather than end it ("started painting", "a new class"): most often a
# further activity beside the old one, not a change of the state it states.
_BEGINNINGS = frozenset(tn.stem(w) for w in lexicon.words("start started new latest updated gave sold"))
# Words that end the state they name even when the newer text repeats it ("left Google", "no
# longer", "quit smoking").
_ENDINGS = frozenset(
    tn.stem(w)
    for w in lexicon.words("left quit stopped stop anymore longer moved relocated switched replaced instead")
)
# How many words the older text may state beyond the attribute and its values for a change to be
# worth a person's look rather than left to the paraphrase rules.
_UNSURE_LEFT_OVER = 2


# Attributes that hold one value at a time ("favorite", "main", where one lives or works): a value
# exchanged there may be an update, so a person looks rather than both being kept as facts.
_ONE_VALUE = frozenset(
    tn.stem(w) for w in lexicon.words("favorite favourite main primary usual current only")
) | (ATTRIBUTE_WORDS["residence"] | ATTRIBUTE_WORDS["work"] | ATTRIBUTE_WORDS["partner"])


@dataclass(frozen=True)
class StateChange:
    sure: bool
    reason: str


def _subject(text: str) -> str:
    """The first content word, or 'i' for a first-person text: whom the state is about."""
    folded = _folded(text)
    if folded and folded[0] in ("i", "my", "i'm", "we", "our"):
        return "i"
    for word in tokens(text):
        if _is_content(word):
            return tn.stem(word.casefold().removesuffix("'s"))
    return ""


def state_change(old: str, new: str) -> StateChange | None:
    """A change of the state `old` states, announced by `new` ("now", "moved to", "no longer",
    "got married"), or None.

    The two texts must be about the same subject and state the same attribute: a shared content
    word beside the subject, or words of one attribute class (where one lives, works, studies,
    with whom). Sure when everything `old` states beside that attribute is a value the change
    replaces (a name, a day, a number) or is restated in `new`; otherwise a person should look."""
    markers = (change_words(new) - change_words(old)) - _BEGINNINGS
    if not markers:
        return None
    subject = _subject(old)
    if not subject or subject != _subject(new):
        return None
    old_words, new_words = stems(old) - {subject}, stems(new) - {subject}
    shared = (old_words & new_words) - tn.CHANGE_MARKERS
    classes = [
        name
        for name, members in ATTRIBUTE_WORDS.items()
        if old_words & members and new_words & members and (markers & members or shared & members)
    ]
    if not shared and not classes:
        return None
    attribute = set(shared)
    for name in classes:
        attribute |= (old_words | new_words) & ATTRIBUTE_WORDS[name]
    values = tn.content_words(" ".join(_value_words(old))) | (tn.MONTHS | tn.WEEKDAYS)
    left_over = old_words - attribute - new_words - values
    if not (old_words - new_words) and not markers & _ENDINGS:
        # "I live in Berlin" / "I live in Berlin now and love it": nothing of the old state is
        # replaced, and no word says it ended.
        return None
    if len(left_over) > _UNSURE_LEFT_OVER:
        # The older text states much beside the attribute: the change may concern only a part of
        # it, and the pair is left to the other rules.
        return None
    named = ", ".join(sorted(shared or set(classes)))
    # A word that ends the old state ("quit", "no longer", "moved") ends the details it had too
    # ("a pack a day", "on Mondays"); otherwise only replaced values may be left over.
    sure = not left_over or bool(markers & _ENDINGS)
    return StateChange(sure=sure, reason=f"states a change of {named}")


def _value_words(text: str) -> list[str]:
    """Capitalised words after the first: the names a change replaces ("Berlin", "Google")."""
    return [w for w in tokens(text)[1:] if w[:1].isupper()]


def antonym_and_swap(old: str, new: str) -> str:
    """'another fact: ...' when an antonym is exchanged together with another word ("vitamin D every
    morning" / "magnesium every evening"): a reversal changes one word, two exchanged words are
    another fact."""
    old_words, new_words = tn.content_words(old), tn.content_words(new)
    only_old, only_new = old_words - new_words, new_words - old_words
    opposed_old = {w for w in only_old if tn.ANTONYMS.get(w, frozenset()) & only_new}
    if not opposed_old:
        return ""
    opposed_new = {w for w in only_new if tn.ANTONYMS.get(w, frozenset()) & opposed_old}
    if tn.negation_count(old) != tn.negation_count(new):
        return ""
    rest_old, rest_new = only_old - opposed_old, only_new - opposed_new
    if not rest_old or not rest_new or (rest_old | rest_new) & tn.CHANGE_MARKERS:
        return ""
    old_side, new_side = ", ".join(sorted(opposed_old | rest_old)), ", ".join(sorted(opposed_new | rest_new))
    return f"another fact: {old_side} / {new_side}"


_ARTICLES = frozenset(("a", "an", "the"))


def moved_phrase(old: str, new: str) -> bool:
    """Whether `new` is `old` with a phrase moved from its end to its front, the phrase's own
    words with it ("I prefer aisle seats on flights" / "On flights I prefer an aisle seat"). Roles
    exchanged around a word that stays ("tabs over spaces" / "spaces over tabs") are no such move."""
    old_seq = [tn.stem(w) for w in _folded(old) if w not in _ARTICLES]
    new_seq = [tn.stem(w) for w in _folded(new) if w not in _ARTICLES]
    if len(old_seq) != len(new_seq) or old_seq == new_seq:
        return False
    return any(new_seq == old_seq[k:] + old_seq[:k] for k in range(1, len(old_seq)))


def difference(old: str, new: str) -> str:
    """The hard difference a person must see before merging two texts, or '': signs, symbols or
    emoji ("-5" / "5", "❤️" / "😡"), numbers, names, or a negation on one side only. A merge
    of such a pair would state something one source does not, whatever the vectors say."""
    old_symbols, new_symbols = reach.symbols(old), reach.symbols(new)
    if old_symbols != new_symbols:
        return f"signs or symbols: {''.join(old_symbols) or 'none'} / {''.join(new_symbols) or 'none'}"
    old_numbers, new_numbers = tn.numbers(old), tn.numbers(new)
    if old_numbers != new_numbers:
        return f"numbers: {_listed(old_numbers)} / {_listed(new_numbers)}"
    old_names, new_names = _names(old), _names(new)
    if old_names != new_names:
        return f"names: {', '.join(sorted(old_names)) or 'none'} / {', '.join(sorted(new_names)) or 'none'}"
    if (tn.negation_count(old) > 0) != (tn.negation_count(new) > 0):
        return "negation: one text says not"
    return ""


def _listed(values: frozenset[float]) -> str:
    return ", ".join(f"{v:g}" for v in sorted(values)) or "none"


def _names(text: str) -> frozenset[str]:
    """Capitalised words that are not stop words, as written: names, places, brands."""
    return frozenset(
        w.removesuffix("'s")
        for w in tokens(text)
        if w[:1].isupper() and w.casefold() not in lexicon.STOPWORDS
    )
