"""Precision and recall of an extractor on labeled utterances (pure; no database).

A predicted memory matches an expected one when their content words overlap (Jaccard) by at least
`threshold`; each expected memory is matched at most once (greedy, best overlap first). Precision is
matched predictions / predictions, recall matched expectations / expectations; type accuracy is the
share of matched pairs whose event_type agrees.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from memory_app.extraction.types import ExtractedMemory

STOPWORDS = frozenset(
    [
        "user",
        "user's",
        "the",
        "a",
        "an",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "is",
        "are",
        "was",
        "be",
        "been",
        "their",
        "they",
        "them",
        "it",
        "its",
        "with",
        "s",
        "that",
        "this",
        "my",
        "i",
        "i'm",
    ]
)


def content_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())
    return {w.removesuffix("'s") for w in words if w not in STOPWORDS}


def overlap(a: str, b: str) -> float:
    x, y = content_words(a), content_words(b)
    return len(x & y) / len(x | y) if x | y else 1.0


@dataclass
class ExtractionScore:
    utterances: int = 0
    predicted: int = 0
    expected: int = 0
    matched: int = 0
    type_agree: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.matched / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.expected if self.expected else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "utterances": self.utterances,
            "predicted": self.predicted,
            "expected": self.expected,
            "matched": self.matched,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
            "type_accuracy": round(self.type_agree / self.matched, 4) if self.matched else None,
        }


def score_extractor(
    rows: Iterable[dict[str, Any]],
    extract: Callable[[str], list[ExtractedMemory]],
    *,
    threshold: float = 0.5,
) -> ExtractionScore:
    score = ExtractionScore()
    for row in rows:
        predicted = extract(row["text"])
        expected = row["expected"]
        score.utterances += 1
        score.predicted += len(predicted)
        score.expected += len(expected)
        pairs = sorted(
            (
                (overlap(p.text, e["text"]), i, j)
                for i, p in enumerate(predicted)
                for j, e in enumerate(expected)
            ),
            reverse=True,
        )
        used_p: set[int] = set()
        used_e: set[int] = set()
        for value, i, j in pairs:
            if value < threshold or i in used_p or j in used_e:
                continue
            used_p.add(i)
            used_e.add(j)
            score.matched += 1
            score.type_agree += predicted[i].event_type == expected[j].get("type")
        if len(used_p) < len(predicted) or len(used_e) < len(expected):
            score.errors.append(
                {
                    "id": row.get("id"),
                    "text": row["text"],
                    "false_positives": [p.text for i, p in enumerate(predicted) if i not in used_p],
                    "missed": [e["text"] for j, e in enumerate(expected) if j not in used_e],
                }
            )
    return score
