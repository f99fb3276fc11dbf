"""Word-level differences between cluster members, computed on the server with difflib."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

_PUNCT = ".,;:!?\"'()[]{}"


@dataclass(frozen=True)
class Segment:
    text: str
    changed: bool


def _key(word: str) -> str:
    # Case and trailing punctuation are noise to a reviewer: "Rex." and "rex" are the same word.
    return word.lower().strip(_PUNCT)


def _changed_flags(a: list[str], b: list[str]) -> tuple[list[bool], list[bool]]:
    """Which words of `a` and of `b` are not part of their longest common matching blocks."""
    matcher = difflib.SequenceMatcher(a=[_key(w) for w in a], b=[_key(w) for w in b], autojunk=False)
    in_a, in_b = [True] * len(a), [True] * len(b)
    for block in matcher.get_matching_blocks():
        for i in range(block.size):
            in_a[block.a + i] = False
            in_b[block.b + i] = False
    return in_a, in_b


def _segments(words: list[str], changed: list[bool]) -> list[Segment]:
    out: list[Segment] = []
    for word, flag in zip(words, changed, strict=True):
        if out and out[-1].changed == flag:
            out[-1] = Segment(out[-1].text + " " + word, flag)
        else:
            out.append(Segment(word, flag))
    return out


def word_diff(texts: Sequence[str]) -> list[list[Segment]]:
    """Segments per text: the first text is the reference; every other text marks the words it
    does not share with the reference, and the reference marks the words some other text lacks."""
    if not texts:
        return []
    ref = texts[0].split()
    ref_changed = [False] * len(ref)
    others: list[list[Segment]] = []
    for text in texts[1:]:
        words = text.split()
        in_ref, in_other = _changed_flags(ref, words)
        ref_changed = [x or y for x, y in zip(ref_changed, in_ref, strict=True)]
        others.append(_segments(words, in_other))
    return [_segments(ref, ref_changed), *others]


def render_segments(segments: Sequence[Segment]) -> SafeString:
    """HTML with the differing words in <mark class="diff">; everything escaped."""
    parts = [
        f'<mark class="diff">{escape(s.text)}</mark>' if s.changed else str(escape(s.text)) for s in segments
    ]
    # Safe: every part was escaped above.
    return mark_safe(" ".join(parts))
