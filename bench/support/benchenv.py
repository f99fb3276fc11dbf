"""Imported first by every benchmark script: the project on sys.path and the environment a bench
run needs, each only as a default (a variable already set wins)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

for path in (str(ROOT), str(ROOT / "bench")):
    if path not in sys.path:
        sys.path.insert(0, path)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
os.environ.setdefault("LOG_LEVEL", "warning")


def write_results(path: Path, report: dict, *, print_json: bool) -> None:
    """Save a run's JSON under bench/results/; with --json, also print it as stdout's last line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    if print_json:
        print(json.dumps(report))
