"""Is a chat message small talk or a question (nothing worth recalling later)?

A question asks and states nothing ("What should I cook tonight?"): a message made only of
questions and small talk stays in short-term memory (the session) and is not stored long-term.

A question that carries a fact is no empty question: it presupposes something about someone, and
that something is worth recalling ("How was your trip to Paris last week?" says the person went to
Paris last week). A question carries a fact when it holds any of (`carries_fact`):
- a proper name (`names_in`: a capitalised word not opening the sentence, weekday and month names
  aside), unless the name only addresses someone ("Hey Joanna, what's up?", "How are you, Gina?");
- a number;
- a date of a past event (`resolve_event_date`, the dateparser reading ingestion dates messages
  with): "last week", "yesterday", "on June 5th"; a date ahead or today ("tonight", "next Friday")
  presupposes nothing that happened;
- a thing the speaker or the person addressed has: "my", "your" or "our" before a content word
  ("ideas for your dance studio", "invite your tournament friends"), except right after a question
  word and a form of "be" ("What's your favourite film?", "How's your day?"), where the words after
  "your" name what is asked, not something presupposed;
- something the speaker or the person addressed did, said as a statement: "I", "we" or "you" then a
  past-tense verb that no inverted "be" or "have" precedes ("the 10k you trained for", "looks like
  you had fun"; in "have you tried" or "were you surprised" the participle belongs to the question
  itself), or a question word, a past-tense verb and "you" ("What got you into running?" takes it
  as given that the person got into running).

A message is small talk when, once function words (scikit-learn's English stop words) and the
words of acknowledgement and reaction below are set aside, no word is left and it names no number.
The reaction words are a hand-written list on purpose: they are the closed vocabulary with which
people acknowledge ("Thanks!", "Sounds good") or react ("Wow, that's great"), and a message built
only from them states nothing about anyone. Anything else, however short ("Paris!", "Got a dog"),
is kept: dropping a real statement costs more than storing a greeting.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from memory_app.extraction.dates import looks_ahead, resolve_event_date
from memory_app.extraction.rules import not_calendar

_REACTION_WORDS = """
    thanks thank thx ty appreciate appreciated welcome wow whoa woah omg oh ah aw aww awww ooh yay
    haha hahaha lol lmao hehe great awesome cool nice amazing wonderful fantastic incredible super
    lovely brilliant impressive terrific excellent perfect glad happy hear heard sounds sound good
    yeah yes yep yup ok okay sure totally definitely absolutely agree agreed true right exactly
    really congrats congratulations hey hi hello bye goodbye cheers later soon talk chat catch
    care luck wish proud fun blast cute beautiful sweet inspiring wholesome love lovely thrilled
    excited stoked keep going doing buddy dear friend pal man girl guys wait glad means lot
"""
REACTIONS = frozenset(_REACTION_WORDS.split())
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def content_words(text: str) -> list[str]:
    words = [w.split("'")[0] for w in _WORD.findall(text.lower())]
    return [w for w in words if w not in ENGLISH_STOP_WORDS and w not in REACTIONS and len(w) > 1]


def is_small_talk(text: str) -> bool:
    if any(ch.isdigit() for ch in text):
        return False
    return not content_words(text)


# A capitalised word that does not open its sentence (a cheap stand-in for NER, as `names_in` of
# extraction/conversation.py, which imports this module).
_NAME = re.compile(r"\b[A-Z][a-zA-Z'-]+\b")
_OPENS = re.compile(r"^\W*$")
_PRONOUN_I = frozenset({"I'm", "I've", "I'd", "I'll"})


def _is_address(sentence: str, start: int, end: int) -> bool:
    """The name at sentence[start:end] only addresses someone: set off by a comma (or ending the
    sentence) with nothing before it but greeting and reaction words ("Hey Joanna, ..."), or set
    off by a comma at the sentence's end ("How are you, Gina?")."""
    before, after = sentence[:start], sentence[end:]
    opening = all(w in REACTIONS for w in _WORD.findall(before.lower()))
    if opening and re.match(r"\s*(?:,|[!?.]|$)", after):
        return True
    return bool(re.search(r",\s*$", before)) and bool(re.match(r"\W*$", after))


def names_someone(sentence: str) -> bool:
    """A proper name other than one that only addresses the listener."""
    for m in _NAME.finditer(sentence):
        word = m.group(0)
        if _OPENS.match(sentence[: m.start()]) or word.lower() in ENGLISH_STOP_WORDS:
            continue
        if word in _PRONOUN_I or not not_calendar({word}):
            continue
        if not _is_address(sentence, m.start(), m.end()):
            return True
    return False


# Any fixed moment serves: only whether the words name a day before it matters, not which day.
_ANCHOR = datetime(2000, 6, 15, 12, tzinfo=UTC)


def dates_past_event(sentence: str) -> bool:
    """A date expression that lands before the day it is said, in a sentence not looking ahead."""
    if looks_ahead(sentence):
        return False
    found = resolve_event_date(sentence, _ANCHOR)
    return bool(found and found.expression and found.when.date() < _ANCHOR.date())


# English question words and the forms of "be" that follow them: after them "your X" names the
# attribute asked about ("What's your name?"), not a thing presupposed. Closed word classes.
_ASKS_ABOUT = re.compile(
    r"\b(?:what|which|who|how)(?:'s|'re|\s+(?:is|are|was|were))\s+(?:\w+\s+){0,2}$", re.I
)
_POSSESSIVE = re.compile(r"\b(?:my|your|our)\s+([a-z]+)", re.I)


def owns_something(sentence: str) -> bool:
    """ "my", "your" or "our" before a content word, outside "what's your ..."."""
    for m in _POSSESSIVE.finditer(sentence):
        if _ASKS_ABOUT.search(sentence[: m.start()]):
            continue
        if content_words(m.group(1)):
            return True
    return False


# The irregular past tenses of the commonest English verbs: a closed class that no library in the
# project lists (regular ones are found by their "-ed"). Forms that double as the present or the
# participle of a question ("put", "read", "come") are left out.
_IRREGULAR_PAST_WORDS = """
    had got went made saw took came gave found bought told said met left won ran wrote began
    brought caught felt fell flew forgot grew heard held kept knew lost meant paid sang sat slept
    sold sent spent spoke stood taught thought threw understood woke wore drove ate drank swam
    rode chose broke built
"""
_IRREGULAR_PAST = frozenset(_IRREGULAR_PAST_WORDS.split())
# After an inverted "be" or "have" ("have you tried", "were you surprised") the participle belongs
# to the question; the forms of the two auxiliaries are a closed class.
_INVERTED = frozenset({"am", "is", "are", "was", "were", "be", "been", "have", "has", "had"})
_PERSON_THEN = re.compile(r"(\w+\s+)?\b(?:I|we|you)(?:'ve)?\s+([a-z]+)\b", re.I)
# A question word, a past-tense verb and "you": the question asks why or how something happened
# to the person addressed, which it takes as given ("What got you into running?").
_WHAT_MADE_YOU = re.compile(r"\b(?:what|who|how|why)\s+([a-z]+)\s+you\b", re.I)


def _past(verb: str) -> bool:
    verb = verb.lower()
    regular = verb.endswith("ed") and not verb.endswith("eed") and len(verb) > 4
    return regular or verb in _IRREGULAR_PAST


def says_what_someone_did(sentence: str) -> bool:
    """ "I", "we" or "you" then a past-tense verb, not after an inverted "be" or "have"; or a question
    word, a past-tense verb and "you"."""
    sentence = sentence.replace("\u2019", "'")
    for m in _PERSON_THEN.finditer(sentence):
        if (m.group(1) or "").strip().lower() not in _INVERTED and _past(m.group(2)):
            return True
    return any(_past(m.group(1)) for m in _WHAT_MADE_YOU.finditer(sentence))


def carries_fact(sentence: str) -> bool:
    """The question presupposes something about someone (see the module's docstring)."""
    return (
        any(ch.isdigit() for ch in sentence)
        or names_someone(sentence)
        or owns_something(sentence)
        or says_what_someone_did(sentence)
        or dates_past_event(sentence)
    )


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# What may follow a question mark before the sentence ends: closing quotes, brackets, emoji.
_TRAILING = re.compile(r"[^\w.!?]+$")


def states_nothing(text: str) -> bool:
    """Every sentence is small talk or a question that carries no fact: nothing to recall later."""
    for sentence in _SENTENCE_END.split(text.strip()):
        sentence = _TRAILING.sub("", sentence)
        if not sentence:
            continue
        if sentence.rstrip("!.").endswith("?"):
            if carries_fact(sentence):
                return False
            continue
        if not is_small_talk(sentence):
            return False
    return True
