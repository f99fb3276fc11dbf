"""Data for bench/embedding_cache.py: the labeled pair sets and the near-duplicate-heavy workload.

The workload is LoCoMo's dialogue turns as an agent would send them, where many texts come back
slightly changed. Each variant kind says what it changes and which cache tier should catch it:

| kind        | change                                              | tier that can catch it |
|-------------|-----------------------------------------------------|------------------------|
| repeat      | the same text again                                 | exact hash             |
| case        | lower-, upper- or title-cased                       | normalised hash        |
| whitespace  | doubled spaces, leading/trailing blanks, a newline   | normalised hash        |
| punctuation | punctuation dropped or added ("!!", "...", commas)  | normalised hash        |
| contraction | "I'm" <-> "I am", "don't" <-> "do not", ...          | near duplicate only    |
| typo        | two adjacent letters of one long word swapped       | near duplicate only    |
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
VARIANT_KINDS = ("repeat", "case", "whitespace", "punctuation", "contraction", "typo")
CONTRACTIONS = {
    "i'm": "i am",
    "don't": "do not",
    "it's": "it is",
    "can't": "cannot",
    "that's": "that is",
    "you're": "you are",
    "i've": "i have",
    "didn't": "did not",
    "i'll": "i will",
    "what's": "what is",
    "isn't": "is not",
    "we're": "we are",
}
EXPANSIONS = {v: k for k, v in CONTRACTIONS.items()}


def data_dir() -> Path | None:
    return DATA if DATA.is_dir() else None


def sts_pairs() -> list[tuple[float, str, str]]:
    """(score 0..5, sentence1, sentence2); tab-split, never a CSV parser (the texts hold quotes)."""
    pairs = []
    for line in (DATA / "stsbenchmark_test.tsv").read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) >= 7:
            pairs.append((float(parts[4]), parts[5], parts[6]))
    return pairs


def paws_pairs() -> list[tuple[int, str, str]]:
    """(label 1 = paraphrase / 0 = not, sentence1, sentence2)."""
    lines = (DATA / "paws_wiki_test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    pairs = []
    for line in lines:
        parts = line.split("\t")
        if len(parts) >= 4:
            pairs.append((int(parts[3]), parts[1], parts[2]))
    return pairs


def locomo_turns(limit: int | None = None) -> list[str]:
    """Dialogue turns of LoCoMo in conversation order, distinct, at least three words."""
    conversations = json.loads((DATA / "locomo10.json").read_text(encoding="utf-8"))
    seen: set[str] = set()
    turns: list[str] = []
    for item in conversations:
        conversation = item["conversation"]
        for key in sorted(k for k in conversation if re.fullmatch(r"session_\d+", k)):
            session = conversation[key]
            if not isinstance(session, list):
                continue
            for turn in session:
                text = turn.get("text", "").strip()
                if len(text.split()) >= 3 and text not in seen:
                    seen.add(text)
                    turns.append(text)
    return turns[:limit] if limit else turns


def _swap_words(text: str, table: dict[str, str]) -> str | None:
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in table) + r")\b", re.IGNORECASE)
    match = pattern.search(text.replace("\u2019", "'"))
    if not match:
        return None
    source = text.replace("\u2019", "'")
    word = match.group(0)
    replacement = table[word.lower()]
    if word[0].isupper():
        replacement = replacement[0].upper() + replacement[1:]
    return source[: match.start()] + replacement + source[match.end() :]


def variant(text: str, kind: str, rng: random.Random) -> str | None:
    """`text` changed the way `kind` says, or None when that change does not apply to it."""
    if kind == "repeat":
        return text
    if kind == "case":
        return rng.choice([text.lower(), text.upper(), text.title()])
    if kind == "whitespace":
        words = text.split(" ")
        i = rng.randrange(len(words))
        words[i] = words[i] + rng.choice(["  ", "\n", "\t"])
        return "  " + " ".join(words) + " "
    if kind == "punctuation":
        stripped = re.sub(r"[.,!?;:]", "", text)
        return stripped if stripped != text else text.rstrip(".!?") + rng.choice(["!!", "...", "?!"])
    if kind == "contraction":
        return _swap_words(text, CONTRACTIONS) or _swap_words(text, EXPANSIONS)
    if kind == "typo":
        words = [i for i, w in enumerate(text.split(" ")) if len(w) >= 6 and w.isalpha()]
        if not words:
            return None
        parts = text.split(" ")
        i = rng.choice(words)
        w = parts[i]
        j = rng.randrange(1, len(w) - 2)
        parts[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
        return " ".join(parts)
    raise ValueError(kind)


def workload(n_turns: int, *, variant_share: float = 0.5, seed: int = 7) -> list[tuple[str, str]]:
    """(kind, text) in arrival order: every turn once ("original"), plus for `variant_share` of them
    one variant of a random applicable kind, arriving after its original."""
    rng = random.Random(seed)
    turns = locomo_turns(n_turns)
    stream: list[tuple[str, str]] = [("original", t) for t in turns]
    for t in turns:
        if rng.random() >= variant_share:
            continue
        kinds = list(VARIANT_KINDS)
        rng.shuffle(kinds)
        for kind in kinds:
            changed = variant(t, kind, rng)
            if changed is not None:
                position = rng.randrange(stream.index(("original", t)) + 1, len(stream) + 1)
                stream.insert(position, (kind, changed))
                break
    return stream
