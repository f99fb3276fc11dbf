"""Evaluation and calibration tooling, kept out of the runtime app (memory_app).

The `evaluate_*`, `calibrate_dedup` and `seed_review_demo` commands and what they run: LoCoMo and
scenario replays through the same services the API calls, the judge's fitting, the review demo.
memory_app never imports this package (an import-linter contract); this package imports memory_app's
services and selectors like any other caller.
"""
