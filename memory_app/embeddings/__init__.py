"""The one entry point for turning text into vectors: `embed_texts`.

Callers get L2-normalised float32 rows in input order; which provider and cache tiers serve them
is this package's business.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.conf import settings


def embedding_model_name() -> str:
    return str(settings.EMBEDDING_MODEL)


def embed_texts(texts: Sequence[str]) -> np.ndarray:
    from memory_app.embeddings.local import local_embed

    return local_embed(list(texts))


def embed_text(text: str) -> np.ndarray:
    return embed_texts([text])[0]
