"""The committed per-model calibration and its settings overrides."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from memory_app.judge.calibration.params import (
    UnknownFeature,
    calibration_from_dict,
    calibration_path,
    calibration_to_dict,
    clear_calibration_cache,
    load_calibration,
)
from memory_app.judge.offline import duplicate_probability
from memory_app.judge.signals.features import RUNTIME_FEATURES
from memory_eval.features import CANDIDATE_FEATURES, FEATURE_NAMES
from project import env


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_calibration_cache()
    yield
    clear_calibration_cache()


def test_minilm_calibration_is_committed_and_complete(settings):
    settings.DEDUP_CANDIDATE_RADIUS = None
    settings.DEDUP_REVIEW_BELOW = None
    data = json.loads(calibration_path("all-MiniLM-L6-v2").read_text())
    cal = load_calibration("all-MiniLM-L6-v2")
    assert cal.fitted
    assert cal.feature_names == FEATURE_NAMES
    assert len(cal.coef) == len(cal.mean) == len(cal.scale) == len(FEATURE_NAMES)
    assert cal.candidate_radius == data["candidate_radius"]
    assert 0.0 < cal.review_floor < cal.review_below <= 1.0
    assert data["meta"]["pairs_sha256"]


def test_settings_override_radius_and_review_threshold(settings):
    settings.DEDUP_CANDIDATE_RADIUS = 0.42
    settings.DEDUP_REVIEW_BELOW = 0.8
    cal = load_calibration("all-MiniLM-L6-v2")
    assert (cal.candidate_radius, cal.review_below) == (0.42, 0.8)


def test_an_uncalibrated_model_never_merges_on_its_own(settings):
    settings.DEDUP_REVIEW_BELOW = None
    cal = load_calibration("text-embedding-3-small")
    assert not cal.fitted
    assert cal.review_below > 1.0


def test_review_threshold_outside_zero_one_stops_start_up(monkeypatch):
    monkeypatch.setenv("DEDUP_REVIEW_BELOW", "1.5")
    with pytest.raises(ImproperlyConfigured, match=r"DEDUP_REVIEW_BELOW must be <= 1\.0"):
        env.env_optional_float("DEDUP_REVIEW_BELOW", minimum=0.0, maximum=1.0)


def test_unset_override_means_the_calibrated_value(monkeypatch):
    monkeypatch.delenv("DEDUP_CANDIDATE_RADIUS", raising=False)
    assert env.env_optional_float("DEDUP_CANDIDATE_RADIUS", minimum=0.0, maximum=2.0) is None


class _Unmatched:
    """Stands for a pair's features where the model reads only how many words are left unmatched."""

    def __init__(self, words: int) -> None:
        self.words = words

    def vector(self, default_distance, names, features):
        assert tuple(names) == ("unmatched_lexical",)
        return np.array([float(self.words)])


def test_the_committed_model_merges_one_unmatched_word_reviews_two_and_stores_three(settings):
    # The margin above the highest training negative (two words unmatched) must fall between two
    # steps of the count, not inside the one-word class.
    settings.DEDUP_CANDIDATE_RADIUS = None
    settings.DEDUP_REVIEW_BELOW = None
    cal = load_calibration("all-MiniLM-L6-v2")
    p = [duplicate_probability(_Unmatched(words), cal) for words in range(4)]  # type: ignore[arg-type]
    assert p[0] > p[1] >= cal.review_below > p[2] >= cal.review_floor > p[3]


def test_the_runtime_judge_computes_exactly_the_features_the_shipped_calibrations_name():
    named = {
        name
        for path in calibration_path("all-MiniLM-L6-v2").parent.glob("*.json")
        for name in json.loads(path.read_text())["feature_names"]
    }
    assert set(RUNTIME_FEATURES.values) == named


def test_a_calibration_naming_a_fitting_only_feature_is_refused_on_reading_and_on_writing():
    data = calibration_to_dict(load_calibration("all-MiniLM-L6-v2"))
    data["feature_names"] = ["unmatched_lexical", "jaccard"]
    assert "jaccard" in CANDIDATE_FEATURES.values
    with pytest.raises(UnknownFeature, match="jaccard"):
        calibration_from_dict(data)
    studied = replace(
        load_calibration("all-MiniLM-L6-v2"), feature_names=("jaccard",), features=CANDIDATE_FEATURES
    )
    with pytest.raises(UnknownFeature, match=r"memory_eval/features\.py"):
        calibration_to_dict(studied)
