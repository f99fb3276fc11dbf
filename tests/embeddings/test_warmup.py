"""The server processes' warm-up (project/warmup.py) loads what the judge reads on first use."""

from __future__ import annotations

from memory_app.judge.signals import alignment, quantities
from project.warmup import embedding_warmup, judge_warmup


def test_the_judge_warm_up_loads_the_unit_registry_without_the_token_model(monkeypatch):
    cold = alignment.TokenEncoder()
    monkeypatch.setattr(alignment, "_encoder", cold)
    quantities._registry.cache_clear()
    judge_warmup()
    assert quantities._registry.cache_info().currsize == 1
    assert cold.encoded == 0


def test_warm_up_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("EMBEDDING_WARMUP", "false")
    quantities._registry.cache_clear()
    embedding_warmup()
    assert quantities._registry.cache_info().currsize == 0
