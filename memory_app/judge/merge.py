"""Choosing the text a merge keeps, without writing a new sentence."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import islice

from memory_app.judge.facts import WORD as _WORD
from memory_app.judge.facts import names_of, numbers_of, states_amounts, words_of
from memory_app.judge.signals import quantities
from memory_app.judge.signals import text_norm as tn
from memory_app.judge.signals.features import same_word_in


def information(text: str) -> int:
    """How many distinct content words and numbers a text states."""
    return len(words_of(text)) + len(numbers_of(text))


def most_informative(texts: Sequence[str]) -> str:
    """The most informative member, verbatim: most content words and numbers, then the longer, then first.

    Offline merges never invent a sentence; the LLM judge's merged text is used instead when present.
    """
    candidates = [t for t in texts if t and t.strip()]
    if not candidates:
        raise ValueError("most_informative needs at least one non-empty text")
    best_index = max(
        range(len(candidates)),
        key=lambda i: (information(candidates[i]), len(candidates[i].strip()), -i),
    )
    return candidates[best_index]


@lru_cache(maxsize=8192)
def _kept_forms(kept: str) -> tuple[frozenset[str], frozenset[str], str]:
    """The kept text's words, their stems and their initials: what `_name_kept` looks a name up in."""
    # The normalised tokens too: they spell an ISO date's month out ("2025-08-31" -> "august").
    words = [w.removesuffix("'s").casefold() for w in _WORD.findall(kept)] + list(tn.raw_tokens(kept))
    return frozenset(words), frozenset(tn.stem(w) for w in words), "".join(w[0] for w in words)


def _name_kept(name: str, kept: str) -> bool:
    """The name itself (or its stem) is in the kept text, or an acronym ("BMI") spelled out there."""
    words, stems, initials = _kept_forms(kept)
    folded = name.casefold()
    if folded in words or tn.stem(folded) in stems:
        return True
    if name.isupper() and name.isalpha() and 3 <= len(name) <= 6:
        return folded in initials
    return False


def lost_words(kept: str, source: str) -> list[str]:
    """The content words of `source` that `kept` states neither exactly, by stem, by a spelling or
    short form, nor by a listed synonym (`same_word`). Token-vector
    similarity does not count here: a merge keeps a text, and that text must say every word."""
    return list(_lost_words(tn.content_words(kept), tn.content_words(source)))


def _lost_words(kept_words: frozenset[str], source_words: frozenset[str]) -> Iterator[str]:
    """lost_words of two texts' content words, one at a time: a caller that needs only the first
    stops there."""
    for word in sorted(source_words - kept_words):
        if not same_word_in(word, kept_words):
            yield word


def lost_facts(kept: str, source: str, *, words: bool = True) -> list[str]:
    """The numbers, amounts, names and content words of `source` that `kept` does not state
    (empty: nothing is lost). An amount counts as kept in any notation ("$1,800" / "1800
    dollars"), and so do the words it is written with ("Celsius" in "100 degrees Celsius" when
    `kept` says "100°C"). `words=False` checks numbers, amounts and names only: for a text the
    LLM judge wrote, which restates words by meaning and vouches for them."""
    return [item for part in _lost_parts(kept, source, words=words, first=False) for item in part]


def loses_facts(kept: str, source: str, *, words: bool = True) -> bool:
    """Whether lost_facts would list anything: its checks in the same order, stopping at the first
    that finds a loss (load-time dedup asks this of every proposed pair; for two texts that differ
    in a name, the content-word check, most of the cost, is then never made)."""
    return any(part for part in _lost_parts(kept, source, words=words, first=True))


def _lost_parts(kept: str, source: str, *, words: bool, first: bool) -> Iterator[list[str]]:
    """lost_facts' items, one list per kind, each computed only when the previous was taken.
    `first`: the content words' list stops at its first item (all `loses_facts` needs; two texts
    of different content differ in several words, each looked up in the other's)."""
    # Each text's numbers, names, words and whether it states amounts are kept with a memory, so a
    # search's collapse need not read its rows' texts again (facts.readings_given).
    numbers = numbers_of(source) - numbers_of(kept)
    yield [f"{n:g}" for n in sorted(numbers)]
    written: list[tuple[int, int]] = []
    if states_amounts(source):
        kept_amounts = quantities.quantities(kept) if states_amounts(kept) else frozenset()
        # A number already listed is not listed again with its unit.
        dropped = quantities.quantities(source) - kept_amounts
        yield sorted(f"{a.value:g} {a.unit}" for a in dropped if abs(a.value) not in numbers)
        written = [(start, end) for start, end, a in quantities.spans(source) if a in kept_amounts]
    yield sorted(
        name
        for name in names_of(source)
        if not _name_kept(name, kept) and not _inside_amount(name, source, written)
    )
    if not words:
        return
    named = {tn.stem(name.casefold()) for name in names_of(source)}
    lost = (
        word
        for word in _lost_words(words_of(kept), words_of(source))
        if word not in named and not _amount_word(word, written, source)
    )
    yield list(islice(lost, 1) if first else lost)


def _amount_word(word: str, amounts: Sequence[tuple[int, int]], text: str) -> bool:
    """A unit or currency word of an amount the kept text states in another notation."""
    if not amounts:
        return False
    for match in _WORD.finditer(text):
        if tn.stem(match.group(0).casefold()) == word and any(lo <= match.start() < hi for lo, hi in amounts):
            return True
    return False


def _inside_amount(name: str, text: str, amounts: Sequence[tuple[int, int]]) -> bool:
    """Whether every occurrence of the word `name` in `text` is part of one of the `amounts` spans."""
    if not amounts:
        return False
    found = [m.start() for m in re.finditer(rf"\b{re.escape(name)}\b", text)]
    return bool(found) and all(any(lo <= at < hi for lo, hi in amounts) for at in found)


def keeps_everything(kept: str, sources: Sequence[str], *, words: bool = True) -> bool:
    """Whether one text can stand for all `sources`: it states every number and name each states.

    The relation judge has already said the texts state the same thing (duplicate) or that one adds
    detail to the other (refine); this is the check a merge makes on the text it keeps, so that no
    merge drops a value or a name even when the verdict was wrong about the wording.
    """
    return not any(loses_facts(kept, source, words=words) for source in sources)


def stands_for(kept: str, other: str, *, relation: str, kept_refines: bool) -> bool:
    """Whether `kept` alone can stand for itself and `other`, given the judge's relation between them.

    A duplicate states what the other states; a refinement states everything the refined text states
    and more, so only the refining text can stand for both. Either way no number or name may be lost.
    """
    if relation == "duplicate" or (relation == "refine" and kept_refines):
        return not loses_facts(kept, other)
    return False


# How a conversation's memories say where their text comes from (metadata["extracted_by"]).
AS_SAID, EXTRACTED = "message", ("rules", "llm")


def choose_merge_text(
    *,
    new: str,
    old: str,
    relation: str,
    proposed: str | None = None,
    new_origin: str = "",
    old_origin: Callable[[], str] = str,
) -> str | None:
    """The text a merge of `new` into `old` keeps, or None when no text can stand for both (a text
    that would drop a number or a name of either source is not a merge: the pair is queued).

    The judge's own merged text (LLM) first, if it keeps every number and name of both; else the new
    text for a refinement; for a duplicate `most_informative`'s choice, or the other text when only
    that one keeps everything both state. A fact extracted from a message and that message as said:
    the fact's clean words are kept when they state everything the message states
    (`fact_stands_for_message`). `new_origin`: the new text's metadata["extracted_by"] ("" for a
    memory stored directly); `old_origin` reads the old one's, only when the new one has an origin.
    """
    text = _lossless_text(new=new, old=old, relation=relation, proposed=proposed)
    if text is None or not new_origin:
        return text
    origins = (new_origin, old_origin())
    if origins[0] in EXTRACTED and origins[1] == AS_SAID:
        fact, message = new, old
    elif origins[0] == AS_SAID and origins[1] in EXTRACTED:
        fact, message = old, new
    else:
        return text
    return fact if fact_stands_for_message(fact, message) else text


def _lossless_text(*, new: str, old: str, relation: str, proposed: str | None) -> str | None:
    if proposed and keeps_everything(proposed, [old, new], words=False):
        return proposed
    if relation == "refine":
        return new if stands_for(new, old, relation=relation, kept_refines=True) else None
    # The more informative text first; when it drops a name or a value of the other, the other may
    # still state everything both state ("User runs Arch Linux on their laptop" keeps "Arch" of
    # "Their laptop's operating system is Arch", not the other way round).
    first = most_informative([old, new])
    for kept in dict.fromkeys((first, old, new)):
        other = old if kept == new else new
        if stands_for(kept, other, relation=relation, kept_refines=False):
            return kept
    return None


_QUESTION = re.compile(r"[^.!?\n]*\?+")


def fact_stands_for_message(fact: str, message: str) -> bool:
    """Whether a fact extracted from a message ("Hana loves hiking") says everything the message
    as said ("Hana: I love hiking. Any trail tips?") states: every number and name, and every
    content word of its statements (its questions ask, they state nothing). A merge of the two
    then keeps the fact's clean words rather than the raw message."""
    statements = _QUESTION.sub(" ", message)
    return not loses_facts(fact, statements) and tn.content_words(statements) <= tn.content_words(fact)
