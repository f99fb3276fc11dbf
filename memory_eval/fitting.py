"""Fitting and measuring the offline judge on labeled pairs (used by `calibrate_dedup`).

Pure functions of pairs and their cosine distances: no database. The decision simulated here is the
write path's own (`judge_pair` then `decide` on one candidate, candidates beyond the radius unseen),
so these figures predict what `evaluate_dedup` measures end to end.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from memory_app.judge.calibration.params import Calibration
from memory_app.judge.offline import duplicate_probability, judge_pair, vetoed
from memory_app.judge.policy import decide
from memory_app.judge.signals import reach
from memory_app.judge.signals.alignment import token_encoder
from memory_app.judge.signals.features import pair_facts
from memory_eval.features import CANDIDATE_FEATURES, FEATURE_NAMES

LABELS = ("duplicate", "update", "distinct", "refine")
ACTIONS = ("merge", "supersede", "store", "review")

# Conservative choices, fixed before looking at held-out folds.
REGULARISATION_C = 0.5
# review_floor: keep this share of training duplicates out of "distinct" (0.95 sent a third of the
# stream pairs to review, see docs/EVALUATION.md).
TARGET_HANDLED = 0.9
# The lowest review_floor: a pair the model scores under it is stored as distinct. With the word
# alignment model, 0.65 reviews pairs that leave at most two words without a counterpart. Chosen on
# the development stream (LoCoMo conversations 0-4, scope speaker, simulated): floor 0.49 queued
# 20 % of the facts, 0.60 12 %, 0.65 5.5 % (see docs/EVALUATION.md).
REVIEW_FLOOR_MIN = 0.65
RADIUS_QUANTILE = 0.95  # candidate_radius: reach this share of training duplicates and refinements
RADIUS_MARGIN = 0.05
# review_below sits this far above the lowest threshold that merged no training update/distinct pair:
# held-out negatives score above the training ones now and then (cross-validated: margin 0 -> 2% false
# merges, 0.03 -> 1%, 0.06 -> 0.5%, 0.1 -> none in 20 folds; see docs/EVALUATION.md).
MERGE_MARGIN = 0.07


def load_pairs(path: str | Path) -> list[dict[str, Any]]:
    rows = []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("label") not in LABELS:
                raise ValueError(f"pair {row.get('id')!r} has unknown label {row.get('label')!r}")
            rows.append(row)
    return rows


def feature_matrix(
    pairs: Sequence[dict[str, Any]],
    distances: np.ndarray,
    default: float,
    names: Sequence[str] = FEATURE_NAMES,
) -> np.ndarray:
    # The token model in batches once, rather than one pair at a time inside the features.
    token_encoder().tokens(list(dict.fromkeys(p[key] for p in pairs for key in ("existing", "new"))))
    return np.array(
        [
            pair_facts(p["existing"], p["new"], float(d)).vector(default, names, CANDIDATE_FEATURES)
            for p, d in zip(pairs, distances, strict=True)
        ]
    )


def fit_duplicate_model(
    x: np.ndarray, labels: np.ndarray, ruled: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Logistic regression duplicate vs update/distinct (refine left out), on standardised features.

    `ruled` marks pairs a rule already keeps from merging (a changed number, another name...): the
    model is fitted on the rest, where it has to tell a restatement from another fact about the
    same subject, and not on minimal edits it would learn to read by their word counts.
    """
    # start-up cost: scikit-learn only when fitting
    from sklearn.linear_model import LogisticRegression

    keep = labels != "refine"
    if ruled is not None:
        keep &= ~ruled
    xs, ys = x[keep], (labels[keep] == "duplicate").astype(int)
    mean = xs.mean(axis=0)
    scale = xs.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=REGULARISATION_C, class_weight="balanced", max_iter=2000)
    model.fit((xs - mean) / scale, ys)
    return mean, scale, model.coef_[0], float(model.intercept_[0])


def ruled_out(pairs: Sequence[dict[str, Any]], distances: np.ndarray) -> np.ndarray:
    """True where a rule forbids merging the pair whatever the model says."""
    facts = (pair_facts(p["existing"], p["new"], float(d)) for p, d in zip(pairs, distances, strict=True))
    return np.array([bool(vetoed(f)) for f in facts])


def simulate(pairs: Sequence[dict[str, Any]], distances: np.ndarray, cal: Calibration) -> list[str]:
    """The action the write path would take for each pair stored after its `existing` text."""
    actions = []
    for pair, distance in zip(pairs, distances, strict=True):
        if float(distance) > cal.candidate_radius:
            actions.append("store")
            continue
        judgement = judge_pair(pair["existing"], pair["new"], float(distance), cal)
        actions.append(decide([judgement], review_below=cal.review_below).action)
    return actions


def metrics(labels: Sequence[str], actions: Sequence[str]) -> dict[str, Any]:
    """The figures evaluate_dedup reports, from labels and actions."""
    table: dict[str, Counter[str]] = {label: Counter() for label in LABELS}
    for label, action in zip(labels, actions, strict=True):
        table[label][action] += 1
    n = {label: sum(table[label].values()) for label in LABELS}
    neg = n["update"] + n["distinct"]

    def rate(count: int, total: int) -> float:
        return round(count / total, 4) if total else 0.0

    refine_ok = table["refine"]["merge"] + table["refine"]["store"] + table["refine"]["review"]
    return {
        "pairs": len(labels),
        "false_merge_rate": rate(table["update"]["merge"] + table["distinct"]["merge"], neg),
        "wrong_supersede_rate": rate(table["distinct"]["supersede"], n["distinct"]),
        "duplicate_merge_rate": rate(table["duplicate"]["merge"], n["duplicate"]),
        "duplicate_handled_rate": rate(
            table["duplicate"]["merge"] + table["duplicate"]["review"], n["duplicate"]
        ),
        "update_supersede_rate": rate(table["update"]["supersede"], n["update"]),
        "refine_ok_rate": rate(refine_ok, n["refine"]),
        "review_rate": rate(sum(table[label]["review"] for label in LABELS), len(labels)),
        "confusion": {label: {a: table[label][a] for a in ACTIONS} for label in LABELS},
    }


def choose_thresholds(
    pairs: Sequence[dict[str, Any]],
    distances: np.ndarray,
    cal: Calibration,
    *,
    max_false_merge: float,
    merge_margin: float = MERGE_MARGIN,
) -> Calibration:
    """Pick radius, review_floor and review_below from training pairs only."""
    labels = np.array([p["label"] for p in pairs])
    reach = distances[(labels == "duplicate") | (labels == "refine")]
    radius = round(float(np.ceil((np.quantile(reach, RADIUS_QUANTILE) + RADIUS_MARGIN) * 20) / 20), 2)
    cal = replace(cal, candidate_radius=min(radius, 1.0))
    facts = [pair_facts(p["existing"], p["new"], float(d)) for p, d in zip(pairs, distances, strict=True)]

    probs = np.array([duplicate_probability(f, cal) for f in facts])
    dup_probs = np.sort(probs[labels == "duplicate"])
    floor_index = int(np.floor((1 - TARGET_HANDLED) * len(dup_probs)))
    floor = max(float(dup_probs[floor_index] - 1e-3), REVIEW_FLOOR_MIN)
    cal = replace(cal, review_floor=min(floor, cal.review_below))
    # review_below: the lowest threshold whose training false-merge rate stays within the budget.
    negatives = int(((labels == "update") | (labels == "distinct")).sum())
    best = 1.0
    # Capped below the rules' own confidence (offline.SURE), so a fitted threshold never silences them.
    for threshold in np.arange(0.98, 0.49, -0.01):
        trial = replace(cal, review_below=float(threshold))
        actions = simulate(pairs, distances, trial)
        merged = sum(
            1
            for label, action in zip(labels, actions, strict=True)
            if action == "merge" and label in ("update", "distinct")
        )
        if merged > max_false_merge * negatives:
            break
        best = float(threshold)
    return replace(cal, review_below=round(min(best + merge_margin, 0.98), 2))


def fit_calibration(
    pairs: Sequence[dict[str, Any]],
    distances: np.ndarray,
    *,
    model: str,
    max_false_merge: float = 0.0,
    merge_margin: float = MERGE_MARGIN,
    feature_names: Sequence[str] = FEATURE_NAMES,
) -> Calibration:
    labels = np.array([p["label"] for p in pairs])
    # Candidates are computed while fitting and simulating; writing the result checks that the names
    # it kept are runtime features (calibration_to_dict).
    base = Calibration(model=model, candidate_radius=1.0, review_below=1.0, features=CANDIDATE_FEATURES)
    default_distance = float(np.median(distances))
    x = feature_matrix(pairs, distances, default_distance, feature_names)
    mean, scale, coef, intercept = fit_duplicate_model(x, labels, ruled_out(pairs, distances))
    cal = replace(
        base,
        default_distance=round(default_distance, 4),
        feature_names=tuple(feature_names),
        mean=tuple(round(float(v), 6) for v in mean),
        scale=tuple(round(float(v), 6) for v in scale),
        coef=tuple(round(float(v), 6) for v in coef),
        intercept=round(intercept, 6),
        max_words=max(reach.word_count(p[key]) for p in pairs for key in ("existing", "new")),
    )
    return choose_thresholds(
        pairs, distances, cal, max_false_merge=max_false_merge, merge_margin=merge_margin
    )


def cross_validate(
    pairs: Sequence[dict[str, Any]],
    distances: np.ndarray,
    *,
    model: str,
    splits: int = 5,
    repeats: int = 10,
    seed: int = 0,
    max_false_merge: float = 0.0,
    merge_margin: float = MERGE_MARGIN,
    feature_names: Sequence[str] = FEATURE_NAMES,
) -> dict[str, Any]:
    """Repeated stratified k-fold: fit on k-1 folds, decide on the held-out fold, pool the actions."""
    # start-up cost: scikit-learn only when fitting
    from sklearn.model_selection import RepeatedStratifiedKFold

    labels = np.array([p["label"] for p in pairs])
    folds = RepeatedStratifiedKFold(n_splits=splits, n_repeats=repeats, random_state=seed)
    pooled_labels: list[str] = []
    pooled_actions: list[str] = []
    pooled_sources: list[str] = []
    per_fold: list[dict[str, Any]] = []
    for train, test in folds.split(np.zeros(len(pairs)), labels):
        cal = fit_calibration(
            [pairs[i] for i in train],
            distances[train],
            model=model,
            max_false_merge=max_false_merge,
            merge_margin=merge_margin,
            feature_names=feature_names,
        )
        actions = simulate([pairs[i] for i in test], distances[test], cal)
        pooled_labels += list(labels[test])
        pooled_actions += actions
        pooled_sources += [str(pairs[i].get("source", "")) for i in test]
        per_fold.append(metrics(list(labels[test]), actions))
    summary = metrics(pooled_labels, pooled_actions)
    summary["pairs"] = len(pairs)
    # Pairs from several files are fitted together; each file's held-out figures are reported apart.
    summary["by_source"] = {
        source: metrics(
            [label for label, s in zip(pooled_labels, pooled_sources, strict=True) if s == source],
            [action for action, s in zip(pooled_actions, pooled_sources, strict=True) if s == source],
        )
        for source in sorted(set(pooled_sources))
        if source
    }
    summary["folds"] = splits * repeats
    # The worst single fold, since a held-out set of this size is about one fold's worth of pairs.
    for key in ("false_merge_rate", "wrong_supersede_rate"):
        summary[f"{key}_worst_fold"] = max(fold[key] for fold in per_fold)
    for key in ("duplicate_merge_rate", "duplicate_handled_rate"):
        summary[f"{key}_worst_fold"] = min(fold[key] for fold in per_fold)
    return summary
