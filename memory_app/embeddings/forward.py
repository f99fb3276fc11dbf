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

A search's query takes its own pass (`query_hidden_states`): with EMBEDDING_QUERY_INT8, through an
int8 copy of that file (the weights of its matrix products quantized per output channel, made
once beside it): ~1.85 ms of CPU for a short query instead of ~4.5 ms, the largest step of a
search (bench/request_cost.py, docs/PERFORMANCE.md). Its vectors keep a cosine of 0.995 (0.991 at
least, over 200 questions) with the full model's, and every vector that is stored or judged (a
memory's, a cache row's, the judge's token vectors) comes from the full model: only the ranking of
a search reads it, and LoCoMo recall did not drop (docs/EVALUATION.md). Without the copy, queries
run the full model.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Callable
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
_query_session: Any = None
_query_runtime: str | None = None


def local_runtime() -> str:
    """Which runtime ("onnx" or "torch") runs the local model's pass in this process (after its first use)."""
    return _runtime or embeddings_config().local_runtime


def query_runtime() -> str:
    """What runs a search query's pass in this process (after its first query): "onnx-int8", or
    the full model's runtime."""
    if _query_runtime is not None:
        return _query_runtime
    config = embeddings_config()
    return "onnx-int8" if config.query_int8 and config.local_runtime == "onnx" else local_runtime()


def hidden_states(model: Any, batch: dict[str, np.ndarray]) -> np.ndarray:
    """Last hidden states (batch x tokens x 384, float32) of a batch the model's tokenizer made
    with return_tensors="np"; only the three model inputs are read."""
    session = _onnx_session(model)
    if session is not None:
        return _onnx_hidden(session, batch)
    return _torch_hidden(model, batch)


def query_hidden_states(model: Any, batch: dict[str, np.ndarray]) -> np.ndarray:
    """`hidden_states` of a batch of search queries: through the int8 copy when there is one."""
    session = _int8_session(model)
    if session is None:
        return hidden_states(model, batch)
    return _onnx_hidden(session, batch)


def _onnx_hidden(session: Any, batch: dict[str, np.ndarray]) -> np.ndarray:
    feed = {name: np.asarray(batch[name], dtype=np.int64) for name in INPUTS}
    return np.asarray(session.run(None, feed)[0], dtype=np.float32)


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
                        _session = _session_of(onnx_export(model))
                    except Exception:  # any failure of an optional runtime: torch still serves
                        log.warning("ONNX Runtime unavailable; the local model runs on torch", exc_info=True)
                _runtime = "onnx" if _session is not None else "torch"
    return _session


def _int8_session(model: Any) -> Any:
    global _query_session, _query_runtime
    if _query_runtime is None:
        full = _onnx_session(model) if embeddings_config().query_int8 else None
        with _lock:
            if _query_runtime is None:
                _query_session = None
                if full is not None:
                    try:
                        _query_session = _session_of(onnx_int8(model))
                    except Exception:  # an optional copy: the full model answers queries
                        log.warning("int8 query model unavailable; queries run the full model", exc_info=True)
                _query_runtime = "onnx-int8" if _query_session is not None else local_runtime()
    return _query_session


def reset() -> None:
    """Forget the sessions (tests, or after EMBEDDING_LOCAL_RUNTIME or EMBEDDING_QUERY_INT8 changed)."""
    global _session, _runtime, _query_session, _query_runtime
    with _lock:
        _session, _runtime, _query_session, _query_runtime = None, None, None, None


def _session_of(path: Path) -> Any:
    import onnxruntime as ort

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


def onnx_int8(model: Any) -> Path:
    """The int8 copy of the model's ONNX file, made first if missing (`manage.py prepare_model`
    makes it at set-up): dynamic quantization of the matrix products' weights, per output channel
    (per tensor, queries kept a cosine of only ~0.96 with the full model's)."""
    source = onnx_export(model)
    path = int8_path(model)
    if not path.exists():
        _quantize(source, path)
    return path


def _quantize(source: Path, path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def write(temporary: str) -> None:
        quantize_dynamic(
            str(source),
            temporary,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )

    _written_once(path, write)


def _written_once(path: Path, write: Callable[[str], None]) -> None:
    """`write(temporary)` under the folder's exclusive file lock (two workers starting at once make
    the file once), into a temporary file then renamed to `path`, so a reader never sees half a
    file; nothing when `path` exists by the time the lock is held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / ".export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".onnx.tmp")
        os.close(handle)
        try:
            write(temporary)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)


def int8_path(model: Any) -> Path:
    full = export_path(model)
    return full.with_name(f"{full.stem}-int8.onnx")


def export_path(model: Any) -> Path:
    import torch

    weights = Path(model[0].auto_model.name_or_path) / "model.safetensors"
    digest = hashlib.sha256()
    digest.update(weights.read_bytes() if weights.exists() else repr(model[0].auto_model.config).encode())
    digest.update(f"{torch.__version__}/{OPSET}".encode())
    return Path(embeddings_config().onnx_dir) / f"minilm-{digest.hexdigest()[:16]}.onnx"


def _export(model: Any, path: Path) -> None:
    """The transformer traced to ONNX (`_written_once`)."""
    import torch

    def write(temporary: str) -> None:
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

    _written_once(path, write)
