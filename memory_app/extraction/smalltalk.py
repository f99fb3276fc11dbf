"""Is a chat message small talk or a question (nothing worth recalling later)?

A question asks and states nothing ("What should I cook tonight?"): a message made only of
questions and small talk stays in short-term memory (the session) and is not stored long-term.

A message is small talk when, once function words (scikit-learn's English stop words) and the
words of acknowledgement and reaction below are set aside, no word is left and it names no number.
The reaction words are a hand-written list on purpose: they are the closed vocabulary with which
people acknowledge ("Thanks!", "Sounds good") or react ("Wow, that's great"), and a message built
only from them states nothing about anyone. Anything else, however short ("Paris!", "Got a dog"),
is kept: dropping a real statement costs more than storing a greeting.
"""

from __future__ import annotations

import re

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

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


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# What may follow a question mark before the sentence ends: closing quotes, brackets, emoji.
_TRAILING = re.compile(r"[^\w.!?]+$")


def states_nothing(text: str) -> bool:
    """Every sentence is a question or small talk: nothing to recall later."""
    for sentence in _SENTENCE_END.split(text.strip()):
        sentence = _TRAILING.sub("", sentence)
        if not sentence:
            continue
        if sentence.rstrip("!.").endswith("?") or is_small_talk(sentence):
            continue
        return False
    return True
