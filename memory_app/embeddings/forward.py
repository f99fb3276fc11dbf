"""The local model's transformer pass: last hidden states of a tokenized batch, on ONNX Runtime
or torch.

One text costs the torch pass about 13.6 ms of CPU on one thread and ONNX Runtime about 5.4 ms,
for the same weights: ONNX Runtime fuses attention, GELU and layer norm and skips torch's per-op
dispatch, which is most of a short text's cost (docs/PERFORMANCE.md, "The local model on ONNX
Runtime"). The hidden states agree to ~1e-7, below the float16 rounding of stored token vectors.

The ONNX file is exported from the installed weights once, under a file lock, into
EMBEDDING_ONNX_DIR, named by a digest of the weights and the torch version, so an upgrade of
either exports anew. When ONNX Runtime is missing or the export or session fails, the torch pass
runs instead and `local_runtime()` says so (health reports it).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from memory_app.conf import embeddings_config

log = logging.getLogger(__name__)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# ONNX opset of the export; part of the file's name.
OPSET = 17

_lock = threading.Lock()
_session: Any = None
_runtime: str | None = None


def local_runtime() -> str:
    """Which runtime ("onnx" or "torch") runs the local model's pass in this process (after its first use)."""
    return _runtime or embeddings_config().local_runtime


def hidden_states(model: Any, batch: dict[str, np.ndarray]) -> np.ndarray:
    """Last hidden states (batch x tokens x 384, float32) of a batch the model's tokenizer made
    with return_tensors="np"; only the three model inputs are read."""
    session = _onnx_session(model)
    if session is not None:
        feed = {name: np.asarray(batch[name], dtype=np.int64) for name in INPUTS}
        return np.asarray(session.run(None, feed)[0], dtype=np.float32)
    return _torch_hidden(model, batch)


def _torch_hidden(model: Any, batch: dict[str, np.ndarray]) -> np.ndarray:
    import torch

    inputs = {name: torch.from_numpy(np.asarray(batch[name], dtype=np.int64)) for name in INPUTS}
    with torch.inference_mode():
        return np.asarray(model[0].auto_model(**inputs).last_hidden_state.numpy(), dtype=np.float32)


def _onnx_session(model: Any) -> Any:
    global _session, _runtime
    if _runtime is None:
        with _lock:
            if _runtime is None:
                _session = None
                if embeddings_config().local_runtime == "onnx":
                    try:
                        _session = _load_session(model)
                    except Exception:  # any failure of an optional runtime: torch still serves
                        log.warning("ONNX Runtime unavailable; the local model runs on torch", exc_info=True)
                _runtime = "onnx" if _session is not None else "torch"
    return _session


def reset() -> None:
    """Forget the session (tests, or after EMBEDDING_LOCAL_RUNTIME changed)."""
    global _session, _runtime
    with _lock:
        _session, _runtime = None, None


def _load_session(model: Any) -> Any:
    import onnxruntime as ort

    path = onnx_export(model)
    options = ort.SessionOptions()
    threads = embeddings_config().torch_threads
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # A spinning pool thread burns a core between passes that the request threads need.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def onnx_export(model: Any) -> Path:
    """The model's ONNX file, exported first if this checkout has none for these weights (bin/setup
    runs it through `manage.py prepare_model`, so no server pays the ~30 s export on a request)."""
    path = export_path(model)
    if not path.exists():
        _export(model, path)
    return path


def export_path(model: Any) -> Path:
    import torch

    weights = Path(model[0].auto_model.name_or_path) / "model.safetensors"
    digest = hashlib.sha256()
    digest.update(weights.read_bytes() if weights.exists() else repr(model[0].auto_model.config).encode())
    digest.update(f"{torch.__version__}/{OPSET}".encode())
    return Path(embeddings_config().onnx_dir) / f"minilm-{digest.hexdigest()[:16]}.onnx"


def _export(model: Any, path: Path) -> None:
    """Export under an exclusive file lock (two workers starting at once export once), written to
    a temporary file and renamed, so a reader never sees half a file."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / ".export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return
        sample = model.tokenizer(["an example"], return_tensors="pt")

        class HiddenStates(torch.nn.Module):
            """The transformer with its three inputs by position and only the last hidden state out."""

            def __init__(self, transformer: Any) -> None:
                super().__init__()
                self.transformer = transformer

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                return self.transformer(
                    input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
                ).last_hidden_state

        wrapper = HiddenStates(model[0].auto_model).eval()
        axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".onnx.tmp")
        os.close(handle)
        try:
            with torch.inference_mode(False), torch.no_grad():
                torch.onnx.export(
                    wrapper,
                    tuple(sample[name] for name in INPUTS),
                    temporary,
                    input_names=list(INPUTS),
                    output_names=["last_hidden_state"],
                    dynamic_axes=axes,
                    opset_version=OPSET,
                    dynamo=False,
                )
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
