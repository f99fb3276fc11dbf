"""Word-level alignment of two texts with the local model's contextual token embeddings.

BERTScore-style greedy matching, per content word: the similarity of its best counterpart on the
other side (1.0 for the same stem). A duplicate states what the other text states, so every word of
each side should find a counterpart; two different facts about one person share the name and a
few words and leave the rest unmatched, however close their sentence vectors are.

The pure part (`coverage`, `Alignment`) works on arrays; `TokenEncoder` runs the model once per
text and keeps the result in a bounded per-process cache, since a stored text meets many new ones.
A stored memory's vectors are also kept in the database (models.MemoryTokens): a caller that judges
stored texts hands the encoder a loader of those rows (`stored_tokens`), consulted before the model.

The judge imports no embeddings (it is a pure package, pyproject.toml's import contracts): the model
it runs is handed to it as a callable (`word_model_use`, called by memory_app/apps.py with the
embeddings package's local model), and the embeddings package hands back each forward pass's token
vectors the same way (`offer_forward_pass`, registered there too).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from memory_app.judge.signals import text_norm as tn
from memory_app.judge.signals.lexicon import NUMBER_WORDS, STOPWORDS

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?")
# A content word without a counterpart: a name or a word the other side does not restate.
UNMATCHED = 0.0
# A word whose best counterpart is less similar than this is taken as not restated. Measured on the
# dev pairs: at 0.4 two different facts about one person leave 3 or more words unmatched in 90 %
# of pairs, a restatement 2 or fewer in about 60 % (0.5 and 0.6 separated less; EVALUATION.md).
MATCHED = 0.4
# Width of the local model's token vectors (all-MiniLM-L6-v2's hidden size).
TOKEN_DIMENSIONS = 384
# The stored and the computed form of a word vector: int8 codes in [-CODE_MAX, CODE_MAX] times one
# float16 scale per word (the largest component over CODE_MAX). A quarter of float32's bytes, half
# of float16's; the judge's decisions on the pair files, the scenarios and the LoCoMo 0-4 stream are
# those of float16 vectors (bench/token_codec.py; SCALING.md).
CODE_MAX = 127
WORD_BYTES = 2 + TOKEN_DIMENSIONS  # a float16 scale and the int8 codes


class WordModel(Protocol):
    """What the encoder reads of the local model: its tokenizer (a Hugging Face fast tokenizer, for
    word-piece offsets and the vocabulary) and the transformer's last hidden states of a batch that
    tokenizer made with return_tensors="np"."""

    @property
    def tokenizer(self) -> Any: ...

    def hidden_states(self, batch: dict[str, np.ndarray]) -> np.ndarray: ...


_word_model: Callable[[], WordModel] | None = None


def word_model_use(provider: Callable[[], WordModel]) -> None:
    """Names the model the judge's word vectors come from: `provider()` is called at each use, so
    the model loads on first use and the runtime (ONNX or torch) is the one of that moment."""
    global _word_model
    _word_model = provider


def word_model() -> WordModel:
    if _word_model is None:
        raise RuntimeError("no word model: memory_app's AppConfig.ready() names it (word_model_use)")
    return _word_model()


@dataclass(frozen=True)
class TextTokens:
    """The content words of one text: stem, whether it is written as a name, and a unit vector each."""

    stems: tuple[str, ...]
    names: tuple[bool, ...]
    vectors: np.ndarray


@dataclass(frozen=True)
class Alignment:
    """How well each side's content words are restated by the other.

    cover_old / cover_new: mean best-counterpart similarity of the old / new text's words;
    worst: the least restated word of either side (one unmatched word decides a fact);
    unmatched: how many words of both sides have no counterpart at MATCHED or above.
    """

    cover_old: float
    cover_new: float
    worst: float
    unmatched: int = 0
    # The same count per side: words of both sides without a counterpart mean each text states
    # something the other does not (two facts), words of one side only that it adds detail.
    unmatched_old: int = 0
    unmatched_new: int = 0

    @property
    def cover_min(self) -> float:
        return min(self.cover_old, self.cover_new)


@lru_cache(maxsize=8192)
def content_spans(text: str) -> tuple[tuple[str, int, int, bool], ...]:
    """(stem, start, end, is_name) for each content word as written: stop words, number words and
    digits are left to the number rules. A capitalised word after the first is taken as a name.
    Remembered per text: the judge's word rules and the token vectors of a text both read it."""
    spans = []
    for index, match in enumerate(_WORD.finditer(text)):
        word = match.group(0).replace("\u2019", "'")
        folded = word.casefold()
        base = folded[:-2] if folded.endswith("'s") else folded
        if base in STOPWORDS or base in NUMBER_WORDS or len(base) < 2 or any(ch.isdigit() for ch in base):
            continue
        if _function_contraction(base):
            continue
        spans.append((tn.stem(base), match.start(), match.end(), index > 0 and word[0].isupper()))
    return tuple(spans)


def _function_contraction(word: str) -> bool:
    """A stop word fused with an auxiliary ("they're", "they'd", "i'm", "we've", "you'll"): two
    function words, as the word rules read them (text_norm splits them), not a content word the
    other side must restate. A negated auxiliary ("aren't", "doesn't") is not one: its negation is
    content, and its head is no stop word."""
    head, _, clitic = word.partition("'")
    return clitic in _AUXILIARY_CLITICS and head in STOPWORDS


# The clitic forms of be/have/will/would/had: "'re", "'ve", "'ll", "'d", "'m" ("'s" is the
# possessive or "is", already cut above).
_AUXILIARY_CLITICS = frozenset({"re", "ve", "ll", "d", "m"})


@lru_cache(maxsize=8192)
def spelled(text: str) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """The stems and name flags TokenEncoder gives a text, without running the model."""
    spans = content_spans(text)
    return tuple(s[0] for s in spans), tuple(s[3] for s in spans)


def coverage(a: TextTokens, b: TextTokens) -> np.ndarray:
    """For each content word of `a`, the similarity of its best counterpart in `b`.

    The same stem counts 1.0. A name counts only when the same name is there: token vectors place
    "Tim" near "John", and a fact about another person is another fact.
    """
    if not a.stems:
        return np.ones(1)
    if not b.stems:
        return np.full(len(a.stems), UNMATCHED)
    sim = np.clip(a.vectors @ b.vectors.T, 0.0, 1.0)
    other = {stem: j for j, stem in enumerate(b.stems)}
    best: np.ndarray = sim.max(axis=1)
    for i, (stem, is_name) in enumerate(zip(a.stems, a.names, strict=True)):
        if stem in other:
            best[i] = 1.0
        elif is_name:
            best[i] = UNMATCHED
    return best


def align(old: TextTokens, new: TextTokens) -> Alignment:
    return alignment_of(coverage(old, new), coverage(new, old))


def alignment_of(old_cover: np.ndarray, new_cover: np.ndarray) -> Alignment:
    """The Alignment of two sides' per-word best-counterpart similarities."""
    unmatched_old, unmatched_new = int((old_cover < MATCHED).sum()), int((new_cover < MATCHED).sum())
    return Alignment(
        cover_old=float(old_cover.mean()),
        cover_new=float(new_cover.mean()),
        worst=float(min(old_cover.min(), new_cover.min())),
        unmatched=unmatched_old + unmatched_new,
        unmatched_old=unmatched_old,
        unmatched_new=unmatched_new,
    )


class TokenEncoder:
    """Content-word vectors from the local model's last layer, computed at most once per text.

    A word's vector is the mean of its word pieces' vectors. The cache is bounded (least recently
    used text dropped first) and shared by the threads of one process.
    """

    def __init__(self, max_texts: int = 8192, max_tokens: int = 128, max_offered: int = 1024) -> None:
        self.max_texts = max_texts
        self.max_tokens = max_tokens
        self.max_offered = max_offered
        self._cache: OrderedDict[str, TextTokens] = OrderedDict()
        # Texts the sentence model embedded (offer()): kept apart and bounded, so that search
        # queries, which are never judged, cannot push judged texts out of the cache.
        self._offered: OrderedDict[str, TextTokens] = OrderedDict()
        self._lock = threading.Lock()
        self.encoded = 0  # texts this encoder ran the model for (for measurements)
        self.loaded = 0  # texts whose vectors came from stored rows (stored_tokens)

    def offer(self, found: dict[str, TextTokens]) -> None:
        """Token vectors that a sentence-embedding forward pass computed anyway (`forward_pass_tokens`)."""
        with self._lock:
            for text, tokens in found.items():
                if text not in self._cache:
                    self._offered[text] = tokens
                    self._offered.move_to_end(text)
            while len(self._offered) > self.max_offered:
                self._offered.popitem(last=False)

    def known(self, texts: Sequence[str]) -> dict[str, TextTokens]:
        """The vectors this encoder already holds for any of `texts`, without running the model
        (what a writer of token rows may keep: it never pays a forward pass for the table)."""
        with self._lock:
            found = {t: self._cache[t] for t in texts if t in self._cache}
            found.update({t: self._offered[t] for t in texts if t in self._offered and t not in found})
        return found

    def available(self, texts: Sequence[str]) -> set[str]:
        """Which of `texts` this encoder can give vectors for without running the model: those it
        holds, and those the stored rows of the current `stored_tokens` source hold (read now, in
        one call, and kept as `tokens()` keeps what it loads)."""
        held = set(self.known(texts))
        loaded = self._from_stored([t for t in dict.fromkeys(texts) if t not in held])
        with self._lock:
            self._cache.update(loaded)
            self._trim()
        return held | set(loaded)

    def _from_stored(self, missing: list[str]) -> dict[str, TextTokens]:
        """The vectors the current `stored_tokens` source holds for `missing`; called outside the
        lock, since the loader reads the database."""
        source = getattr(_stored, "source", None)
        if not missing or source is None:
            return {}
        found = source(missing)
        loaded = {t: found[t] for t in missing if t in found}
        with self._lock:
            self.loaded += len(loaded)
        return loaded

    def _trim(self) -> None:
        # Under the lock: the least recently used texts go first.
        while len(self._cache) > self.max_texts:
            self._cache.popitem(last=False)

    def tokens(self, texts: Sequence[str]) -> list[TextTokens]:
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
            computed: dict[str, TextTokens] = {t: self._offered.pop(t) for t in missing if t in self._offered}
            missing = [t for t in missing if t not in computed]
        computed.update(self._from_stored(missing))
        missing = [t for t in missing if t not in computed]
        with self._lock:
            self.encoded += len(missing)
        for start in range(0, len(missing), 64):
            computed.update(self._encode(missing[start : start + 64]))
        with self._lock:
            self._cache.update(computed)
            out = []
            for text in texts:
                found = self._cache.get(text) or computed[text]
                self._cache[text] = found
                self._cache.move_to_end(text)
                out.append(found)
            self._trim()
        return out

    def _encode(self, texts: list[str]) -> dict[str, TextTokens]:
        model = word_model()
        batch = model.tokenizer(
            texts,
            return_offsets_mapping=True,
            truncation=True,
            max_length=self.max_tokens,
            padding=True,
            return_tensors="np",
        )
        offsets = batch.pop("offset_mapping")
        mask = batch["attention_mask"].astype(bool)
        hidden = model.hidden_states(batch)
        return {text: _word_vectors(text, hidden[i], offsets[i], mask[i]) for i, text in enumerate(texts)}

    def from_forward_pass(
        self, texts: Sequence[str], rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    ) -> dict[str, TextTokens]:
        """Content-word vectors of `texts` out of a sentence model's forward pass: `rows` are
        (input_ids, attention_mask, token_embeddings) of each batch, padded. A text is taken only
        when the pass read exactly the word pieces _encode() would give it (same ids, not
        truncated), so its vectors are the ones the encoder would compute."""
        by_ids: dict[tuple[int, ...], np.ndarray] = {}
        for input_ids, attention, hidden in rows:
            real = attention.astype(bool)
            for row in range(input_ids.shape[0]):
                by_ids[tuple(int(i) for i in input_ids[row][real[row]])] = hidden[row]
        # A text this long cannot fit max_tokens word pieces: not worth tokenizing again.
        texts = [text for text in texts if len(text) <= 16 * self.max_tokens]
        if not texts or not by_ids:
            return {}
        encoded = word_model().tokenizer(list(texts), return_offsets_mapping=True, truncation=False)
        found = {}
        for text, ids, offsets in zip(texts, encoded["input_ids"], encoded["offset_mapping"], strict=True):
            states = by_ids.get(tuple(ids))
            if states is None or len(ids) > self.max_tokens:
                continue
            n = len(ids)
            found[text] = _word_vectors(text, states[:n], np.asarray(offsets), np.ones(n, dtype=bool))
        return found


def _word_vectors(text: str, hidden: np.ndarray, offsets: np.ndarray, mask: np.ndarray) -> TextTokens:
    spans = content_spans(text)
    starts, ends = offsets[:, 0], offsets[:, 1]
    real = mask & (ends > starts)  # special tokens and padding have empty spans
    vectors = np.zeros((len(spans), hidden.shape[1]), dtype=np.float32)
    for row, (_, start, end, _) in enumerate(spans):
        pieces = real & (ends > start) & (starts < end)
        if pieces.any():
            vector = hidden[pieces].mean(axis=0)
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                vectors[row] = vector / norm
    # Quantised here, at the source, so that the vectors kept in the database and those computed
    # afresh are the same numbers and give the same verdicts.
    vectors = dequantised(*quantised(vectors))
    return TextTokens(stems=tuple(s[0] for s in spans), names=tuple(s[3] for s in spans), vectors=vectors)


_encoder: TokenEncoder | None = None
_encoder_lock = threading.Lock()


def token_encoder() -> TokenEncoder:
    global _encoder
    if _encoder is None:
        with _encoder_lock:
            if _encoder is None:
                _encoder = TokenEncoder()
    return _encoder


def offer_forward_pass(texts: Sequence[str], rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """After the sentence model's pass over `texts` (embeddings/local.py, which apps.py points at
    this function): hands the content-word
    vectors that pass computed, `rows` of (input_ids, attention_mask, hidden states) per batch, to
    the token encoder, so a text the store path embeds is never run again for the judge."""
    encoder = token_encoder()
    encoder.offer(encoder.from_forward_pass(texts, rows))


def text_alignment(old: str, new: str, encoder: Any = None) -> Alignment:
    """Alignment of two texts with the process-wide encoder (or `encoder`, for tests)."""
    old_tokens, new_tokens = (encoder or token_encoder()).tokens([old, new])
    return align(old_tokens, new_tokens)


_stored = threading.local()
StoredSource = Callable[[Sequence[str]], Mapping[str, TextTokens]]


@contextmanager
def stored_tokens(source: StoredSource) -> Iterator[None]:
    """Within the block, this thread's `TokenEncoder.tokens()` (and `available()`) asks `source`
    for the texts it holds in neither cache before it runs the model: `source(texts)` returns the
    vectors it has (the stored rows of those texts' memories, selectors/store/tokens.py), the rest
    is computed. Thread-local, so concurrent requests of one process each read their own
    memories' rows; blocks nest."""
    previous = getattr(_stored, "source", None)
    _stored.source = source
    try:
        yield
    finally:
        _stored.source = previous


def text_digest(text: str) -> bytes:
    """What a stored row's vectors were computed from: the SHA-256 of the exact text."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def quantised(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scales, codes) of word vectors: a float16 scale per word, so that its largest component is
    CODE_MAX times it, and int8 codes. Quantising the dequantised vectors gives the same scales and
    codes again (the largest code is CODE_MAX, and a code times a float16 scale is exact in float32),
    so a stored row and a fresh computation hold the very same numbers."""
    vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, TOKEN_DIMENSIONS)
    peaks = np.abs(vectors).max(axis=1) if len(vectors) else np.zeros(0, dtype=np.float32)
    scales = (peaks / CODE_MAX).astype(np.float16)
    divisors = np.where(scales > 0, scales, 1).astype(np.float32)
    codes = np.clip(np.rint(vectors / divisors[:, None]), -CODE_MAX, CODE_MAX).astype(np.int8)
    return scales, codes


def dequantised(scales: np.ndarray, codes: np.ndarray) -> np.ndarray:
    return codes.astype(np.float32) * scales.astype(np.float32)[:, None]


def tokens_bytes(tokens: TextTokens) -> bytes:
    """The stored form of a text's vectors: `words` float16 scales, then the int8 codes, row-major,
    words x TOKEN_DIMENSIONS (WORD_BYTES a word). Exact, since _word_vectors quantises already."""
    scales, codes = quantised(tokens.vectors)
    return scales.tobytes() + codes.tobytes()


def tokens_from_bytes(text: str, words: int, data: bytes) -> TextTokens | None:
    """A stored row back as the encoder's TextTokens, or None when it does not fit `text` (another
    count of content words than `spelled(text)` gives, or another size, such as a row of the
    float16 form written before): the caller computes it."""
    stems, names = spelled(text)
    if words != len(stems) or len(data) != words * WORD_BYTES:
        return None
    scales = np.frombuffer(data, dtype=np.float16, count=words)
    codes = np.frombuffer(data, dtype=np.int8, offset=2 * words).reshape(words, TOKEN_DIMENSIONS)
    return TextTokens(stems=stems, names=names, vectors=dequantised(scales, codes))
