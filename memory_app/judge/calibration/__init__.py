"""The offline judge's fitted model per embedding model: `load_calibration` (params.py) reads
`<model>.json` in this folder; `fit_calibration` and `cross_validate` (memory_eval/fitting.py, the
calibration tooling) fit it for `calibrate_dedup`.

Modules: params.
"""
