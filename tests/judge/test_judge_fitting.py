"""Fitting and measuring the offline judge: metric definitions and the cross-validated quality guard."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from memory_app.embeddings import embed_texts
from memory_app.judge.calibration.params import clear_calibration_cache, load_calibration
from memory_eval import fitting

PAIRS = Path(settings.BASE_DIR).parent / "shared" / "data" / "memory_pairs_dev.jsonl"


def test_metrics_follow_the_evaluate_dedup_definitions():
    labels = ["duplicate", "duplicate", "update", "distinct", "distinct", "refine"]
    actions = ["merge", "review", "merge", "supersede", "store", "store"]
    m = fitting.metrics(labels, actions)
    assert m["false_merge_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert m["wrong_supersede_rate"] == pytest.approx(0.5)
    assert m["duplicate_merge_rate"] == pytest.approx(0.5)
    assert m["duplicate_handled_rate"] == pytest.approx(1.0)
    assert m["refine_ok_rate"] == pytest.approx(1.0)
    assert m["review_rate"] == pytest.approx(1 / 6, abs=1e-4)
    assert m["confusion"]["distinct"] == {"merge": 0, "supersede": 1, "store": 1, "review": 0}


def test_a_pair_beyond_the_candidate_radius_is_stored_unseen():
    cal = load_calibration("all-MiniLM-L6-v2")
    pair = {"existing": "User lives in Lisbon", "new": "User lives in Lisbon", "label": "duplicate"}
    assert fitting.simulate([pair], np.array([cal.candidate_radius + 0.01]), cal) == ["store"]


@pytest.mark.skipif(not PAIRS.exists(), reason=f"labeled pairs not found at {PAIRS}")
def test_committed_calibration_never_merges_an_update_or_distinct_pair_of_a_dev_sample(settings):
    settings.DEDUP_CANDIDATE_RADIUS = None
    settings.DEDUP_REVIEW_BELOW = None
    clear_calibration_cache()
    pairs = fitting.load_pairs(PAIRS)[::6]  # 40 pairs, every label represented
    existing = embed_texts([p["existing"] for p in pairs], tenant=None)
    new = embed_texts([p["new"] for p in pairs], tenant=None)
    distances = 1.0 - np.einsum("ij,ij->i", existing, new).astype(np.float64)
    m = fitting.metrics([p["label"] for p in pairs], fitting.simulate(pairs, distances, load_calibration()))
    assert m["false_merge_rate"] == 0.0
    assert m["wrong_supersede_rate"] == 0.0
    # Not switched off: it merges or queues most duplicates (78 % of the whole file; a pair leaving
    # three or more words without a counterpart is stored, so the review queue stays small on
    # streams) and merges some on its own (33 %).
    assert m["duplicate_handled_rate"] >= 0.6
    assert m["duplicate_merge_rate"] > 0.0
