from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.embeddings import embed_texts, embedding_model_name
from memory_app.judge.calibration.params import (
    Calibration,
    calibration_path,
    calibration_to_dict,
    clear_calibration_cache,
)
from memory_eval import fitting


class Command(BaseCommand):
    help = (
        "Fit the offline relation judge on labeled pairs for the current embedding model, save it under "
        "memory_app/judge/calibration/, and print the precision/recall trade-off and cross-validated figures."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--pairs",
            required=True,
            nargs="+",
            help="JSONL files with existing, new, label, fitted together",
        )
        parser.add_argument("--cv-repeats", type=int, default=10, help="repeats of 5-fold CV (0: none)")
        parser.add_argument(
            "--merge-margin",
            type=float,
            default=fitting.MERGE_MARGIN,
            help="added to the lowest review_below that merged no training update/distinct pair",
        )
        parser.add_argument("--paws", help="PAWS-Wiki TSV for an out-of-domain check (not used to fit)")
        parser.add_argument("--paws-sample", type=int, default=400, help="PAWS pairs per label")
        parser.add_argument("--output", help="where to write the JSON (default: the committed file)")
        parser.add_argument("--dry-run", action="store_true", help="fit and report without writing")
        parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        paths = [Path(name) for name in options["pairs"]]
        pairs = _read_pairs(paths)
        model = embedding_model_name()
        existing = embed_texts([p["existing"] for p in pairs], tenant=None)
        new = embed_texts([p["new"] for p in pairs], tenant=None)
        distances = 1.0 - np.einsum("ij,ij->i", existing, new).astype(np.float64)

        margin = options["merge_margin"]
        if not 0.0 <= margin <= 0.5:
            raise CommandError("--merge-margin must be between 0 and 0.5")
        cal = fitting.fit_calibration(pairs, distances, model=model, merge_margin=margin)
        labels = [p["label"] for p in pairs]
        self.stdout.write(
            f"{len(pairs)} pairs, model {model}: radius {cal.candidate_radius}, "
            f"review_floor {cal.review_floor:.3f}, review_below {cal.review_below}"
        )
        self._trade_off(pairs, distances, labels=labels, cal=cal)
        full = fitting.metrics(labels, fitting.simulate(pairs, distances, cal))
        cv: dict[str, Any] | None = None
        if options["cv_repeats"] > 0:
            cv = self._cross_validate(
                pairs, distances, model=model, repeats=options["cv_repeats"], margin=margin
            )
        paws = self._paws_check(options["paws"], options["paws_sample"], cal) if options["paws"] else None
        cal = replace(
            cal,
            meta={
                "pairs_files": [path.name for path in paths],
                "pairs_sha256": [hashlib.sha256(path.read_bytes()).hexdigest() for path in paths],
                "pairs": len(pairs),
                "fitted_by": "manage.py calibrate_dedup",
                "merge_margin": margin,
                "in_sample": _without_confusion(full),
                "cross_validated": None if cv is None else _without_confusion(cv),
                "paws_check": paws,
            },
        )
        if not options["dry_run"]:
            cal = self._write(cal, output=options.get("output"), model=model)
        if options["json"]:
            summary = {"calibration": calibration_to_dict(cal), "in_sample": full, "cv": cv, "paws": paws}
            self.stdout.write(json.dumps(summary))

    def _trade_off(
        self, pairs: list[dict[str, Any]], distances: np.ndarray, *, labels: list[str], cal: Calibration
    ) -> None:
        self.stdout.write("trade-off on all pairs (in-sample) as review_below moves:")
        self.stdout.write("  review_below  false_merge  dup_merged  dup_handled  review_rate")
        for threshold in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.99):
            trial = replace(cal, review_below=threshold)
            m = fitting.metrics(labels, fitting.simulate(pairs, distances, trial))
            self.stdout.write(
                f"  {threshold:12.2f}  {m['false_merge_rate']:11.3f}  {m['duplicate_merge_rate']:10.3f}"
                f"  {m['duplicate_handled_rate']:11.3f}  {m['review_rate']:11.3f}"
            )

    def _cross_validate(
        self, pairs: list[dict[str, Any]], distances: np.ndarray, *, model: str, repeats: int, margin: float
    ) -> dict[str, Any]:
        cv = fitting.cross_validate(pairs, distances, model=model, repeats=repeats, merge_margin=margin)
        self.stdout.write(
            f"cross-validated (5-fold x {repeats}): "
            f"false_merge {cv['false_merge_rate']:.4f}, "
            f"wrong_supersede {cv['wrong_supersede_rate']:.4f}, "
            f"dup_merged {cv['duplicate_merge_rate']:.4f}, "
            f"dup_handled {cv['duplicate_handled_rate']:.4f}, review {cv['review_rate']:.4f}"
        )
        for source, m in cv["by_source"].items():
            self.stdout.write(
                f"  {source}: false_merge {m['false_merge_rate']:.4f}, "
                f"dup_merged {m['duplicate_merge_rate']:.4f}, "
                f"dup_handled {m['duplicate_handled_rate']:.4f}, "
                f"review {m['review_rate']:.4f}"
            )
        return cv

    def _write(self, cal: Calibration, *, output: str | None, model: str) -> Calibration:
        """Writes the calibration (the committed file unless `output`) and returns what was written."""
        out = Path(output) if output else calibration_path(model)
        if out.exists():  # the search threshold is not fitted here: a refit keeps it
            kept = json.loads(out.read_text()).get("search_dedup_threshold")
            if kept is not None:
                cal = replace(cal, search_dedup_threshold=float(kept))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(calibration_to_dict(cal), indent=2) + "\n")
        clear_calibration_cache()
        self.stdout.write(f"wrote {out}")
        return cal

    def _paws_check(self, path: str, per_label: int, cal: Any) -> dict[str, Any]:
        """Adversarial word-swap pairs: how often a non-paraphrase would merge, a paraphrase merge."""
        rows = [line.split("\t") for line in Path(path).read_text().splitlines()[1:] if line.strip()]
        rng = np.random.default_rng(0)
        pairs = []
        for label in ("0", "1"):
            chosen = [r for r in rows if len(r) >= 4 and r[3].strip() == label]
            for index in rng.choice(len(chosen), size=min(per_label, len(chosen)), replace=False):
                row = chosen[int(index)]
                pairs.append(
                    {"existing": row[1], "new": row[2], "label": "duplicate" if label == "1" else "distinct"}
                )
        first = embed_texts([p["existing"] for p in pairs], tenant=None)
        second = embed_texts([p["new"] for p in pairs], tenant=None)
        distances = 1.0 - np.einsum("ij,ij->i", first, second).astype(np.float64)
        m = fitting.metrics([p["label"] for p in pairs], fitting.simulate(pairs, distances, cal))
        result = {
            "pairs": len(pairs),
            "non_paraphrase_merged": m["false_merge_rate"],
            "paraphrase_merged": m["duplicate_merge_rate"],
            "paraphrase_handled": m["duplicate_handled_rate"],
        }
        self.stdout.write(f"PAWS-Wiki check (out of domain, {len(pairs)} pairs): {result}")
        return result


def _read_pairs(paths: list[Path]) -> list[dict[str, Any]]:
    """Every labelled pair of the files, each tagged with its file's name as its source."""
    pairs: list[dict[str, Any]] = []
    for path in paths:
        if not path.exists():
            raise CommandError(f"pairs file not found: {path}")
        try:
            pairs += [{**pair, "source": path.name} for pair in fitting.load_pairs(path)]
        except (ValueError, KeyError) as exc:
            raise CommandError(f"bad pairs file {path}: {exc}") from exc
    return pairs


def _without_confusion(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items() if k != "confusion"}
