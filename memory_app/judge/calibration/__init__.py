"""The offline judge's fitted model per embedding model: `load_calibration` (params.py) reads
`<model>.json` in this folder; `fit_calibration` and `cross_validate` (judge/fitting.py, outside this
folder since fitting runs the offline judge, which reads params.py) fit it for `calibrate_dedup`.

Modules: params.
"""
