"""The pure parts of BM25 candidate selection (selectors/search/lexical.py runs the SQL).

A query word held by more than `cap` rows of the scope (a "common" word) no longer selects
candidates: matching on it would score most of the scope, and its inverse document frequency is
small, so it cannot lift a row above the rows that hold a rarer word. It still counts in the score
of every row that is scored. Which rows may be missing from the top k is bounded from above, as in
MaxScore (Turtle and Flood, 1995): a row holding only common words scores at most
(k1 + 1) x the sum of their IDFs, because BM25's term-frequency part tf (k1 + 1) / (tf + K) stays
below k1 + 1. When the k-th best row holding a rarer word scores at least that, no row left out
could have entered the top k, and the result is exactly full BM25's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def idf(*, n: float, df: float) -> float:
    """BM25's inverse document frequency (the "+1" form, never negative) of a word in df of n rows."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def common_words(counts: Mapping[str, int], *, cap: int) -> frozenset[str]:
    """The words counted in more than `cap` rows of the scope (counts stop at cap + 1)."""
    return frozenset(t for t, c in counts.items() if c > cap)


def common_only_bound(*, n: float, common_dfs: Sequence[float], k1: float) -> float:
    """The most a row holding none of the rare words can score: (k1 + 1) x the common words' IDFs."""
    return (k1 + 1) * sum(idf(n=n, df=df) for df in common_dfs)


def top_is_exact(scores: Sequence[float], *, k: int, bound: float) -> bool:
    """Whether the k best rows that hold a rare word (`scores`, best first) are full BM25's top k:
    there are k of them and the k-th scores at least what a row without a rare word can reach."""
    return len(scores) >= k and scores[k - 1] >= bound


def within_budget(estimates: Mapping[str, float], *, budget: float) -> list[str]:
    """The words that select rows to score: rarest first while their rows (`estimates`, each word's
    df or an upper bound of it) add up to at most `budget`, and always the rarest one. The words
    left out still count in the score of every scored row, as common words do."""
    chosen: list[str] = []
    total = 0.0
    for word in sorted(estimates, key=lambda w: (estimates[w], w)):
        if chosen and total + estimates[word] > budget:
            break
        chosen.append(word)
        total += estimates[word]
    return chosen
