"""Per-embedding-model calibration of the offline judge, committed as JSON next to this module.

`calibrate_dedup --pairs FILE` writes `calibration/<model>.json`; settings may override the two
thresholds the write path reads (`DEDUP_CANDIDATE_RADIUS`, `DEDUP_REVIEW_BELOW`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from memory_app.conf import embeddings_config, judge_config
from memory_app.judge.signals.features import RUNTIME_FEATURES, FeatureSet

log = logging.getLogger(__name__)

CALIBRATION_DIR = Path(__file__).resolve().parent
DEFAULT_MODEL = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Calibration:
    """Thresholds and the fitted duplicate model for one embedding model.

    candidate_radius: loose cosine-distance radius for neighbours handed to the judge.
    review_below: a non-distinct judgement less confident than this is queued for review.
    review_floor: duplicate probability from which the offline judge says "duplicate" (then
        decide() queues it unless it reaches review_below); below it the pair is distinct.
    feature_names: the model's inputs, in order, each a feature of `features` (the runtime set for
        a calibration read from or written to a file); mean, scale and coef hold one value per name
        (standardise, then a logistic model with `intercept`).
    max_words: the longest text (in words) among the fitted pairs; the judge reads no text more
        than reach.LENGTH_FACTOR times longer (0: no limit).
    search_dedup_threshold: cosine distance under which search results collapse as near-duplicates
        at load time (SEARCH_DEDUP_THRESHOLD overrides it). Not fitted: kept across refits.
    """

    model: str
    candidate_radius: float
    review_below: float
    review_floor: float = 0.1
    default_distance: float = 0.3
    feature_names: tuple[str, ...] = ()
    mean: tuple[float, ...] = ()
    scale: tuple[float, ...] = ()
    coef: tuple[float, ...] = ()
    intercept: float = 0.0
    max_words: int = 0
    fitted: bool = True
    meta: dict[str, Any] = field(default_factory=dict)
    search_dedup_threshold: float = 0.4
    # What computes the named features: the runtime set, or the tooling's candidates while fitting.
    features: FeatureSet = field(default=RUNTIME_FEATURES, compare=False, repr=False)


class UnknownFeature(ValueError):
    """A calibration names a feature the runtime judge does not compute."""


def _runtime_names(names: tuple[str, ...], model: str) -> tuple[str, ...]:
    unknown = [name for name in names if name not in RUNTIME_FEATURES.values]
    if unknown:
        raise UnknownFeature(
            f"the calibration of {model!r} names features the runtime judge does not compute: "
            f"{', '.join(unknown)}; move them from memory_eval/features.py into "
            "judge/signals/features.py RUNTIME_FEATURES first"
        )
    return names


def calibration_path(model: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model)
    return CALIBRATION_DIR / f"{safe}.json"


def calibration_from_dict(data: dict[str, Any]) -> Calibration:
    return Calibration(
        model=str(data["model"]),
        candidate_radius=float(data["candidate_radius"]),
        review_below=float(data["review_below"]),
        review_floor=float(data.get("review_floor", 0.1)),
        default_distance=float(data.get("default_distance", 0.3)),
        feature_names=_runtime_names(tuple(data.get("feature_names", ())), str(data["model"])),
        mean=tuple(float(x) for x in data.get("mean", ())),
        scale=tuple(float(x) for x in data.get("scale", ())),
        coef=tuple(float(x) for x in data.get("coef", ())),
        intercept=float(data.get("intercept", 0.0)),
        max_words=int(data.get("max_words", 0)),
        fitted=bool(data.get("fitted", True)),
        meta=dict(data.get("meta", {})),
        search_dedup_threshold=float(data.get("search_dedup_threshold", 0.4)),
    )


def calibration_to_dict(cal: Calibration) -> dict[str, Any]:
    return {
        "search_dedup_threshold": cal.search_dedup_threshold,
        "model": cal.model,
        "candidate_radius": cal.candidate_radius,
        "review_below": cal.review_below,
        "review_floor": cal.review_floor,
        "default_distance": cal.default_distance,
        "feature_names": list(_runtime_names(cal.feature_names, cal.model)),
        "mean": list(cal.mean),
        "scale": list(cal.scale),
        "coef": list(cal.coef),
        "intercept": cal.intercept,
        "max_words": cal.max_words,
        "fitted": cal.fitted,
        "meta": cal.meta,
    }


@lru_cache(maxsize=8)
def _load_file(model: str) -> Calibration:
    path = calibration_path(model)
    if path.exists():
        return calibration_from_dict(json.loads(path.read_text()))
    # No calibration for this model: borrow MiniLM's feature weights but never merge on its own
    # (review_below above 1), since distances from another model mean something else.
    log.warning(
        "no dedup calibration for embedding model %r: conservative thresholds, every merge goes to "
        "review; fit one with `manage.py calibrate_dedup --pairs FILE` (run with EMBEDDING_MODEL=%s)",
        model,
        model,
    )
    base = _load_file(DEFAULT_MODEL) if model != DEFAULT_MODEL else None
    if base is None:
        return Calibration(model=model, candidate_radius=0.5, review_below=1.01, fitted=False)
    return replace(base, model=model, review_below=1.01, fitted=False)


def load_calibration(model: str | None = None) -> Calibration:
    """The calibration for `model` (default: the configured embedding model, EMBEDDING_MODEL; the
    store path names the tenant's live one), with settings overrides."""
    # EMBEDDING_MODEL read from the settings, as embeddings.configured_model_name does: the judge
    # imports no embeddings (a pure package, pyproject.toml's import contracts).
    cal = _load_file(model or str(embeddings_config().model))
    overrides = judge_config()
    radius, review_below = overrides.candidate_radius, overrides.review_below
    if radius is not None:
        cal = replace(cal, candidate_radius=float(radius))
    if review_below is not None:
        cal = replace(cal, review_below=float(review_below))
    return cal


def clear_calibration_cache() -> None:
    _load_file.cache_clear()
