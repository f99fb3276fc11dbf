"""The operators' dashboard page (views.py) and its inline SVG charts (charts.py).

Modules: charts, views.
"""
