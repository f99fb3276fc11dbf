"""The server processes' warm-up (project/warmup.py) loads what the judge reads on first use."""

from __future__ import annotations

import gc

import pytest

from memory_app.judge.signals import alignment, quantities
from project.warmup import embedding_warmup, gc_tune, judge_warmup, query_time_warmup


def test_the_judge_warm_up_loads_the_unit_registry_without_the_token_model(monkeypatch):
    cold = alignment.TokenEncoder()
    monkeypatch.setattr(alignment, "_encoder", cold)
    quantities._registry.cache_clear()
    judge_warmup()
    assert quantities._registry.cache_info().currsize == 1
    assert cold.encoded == 0


def test_the_query_time_warm_up_loads_dateparser_before_the_first_search_naming_a_date():
    import sys

    query_time_warmup()
    assert "dateparser.search" in sys.modules


def test_the_warm_up_opens_the_int8_query_model_before_the_first_search(settings, tmp_path):
    from memory_app.embeddings import forward
    from memory_app.embeddings.local import local_model

    settings.EMBEDDING_ONNX_DIR, settings.EMBEDDING_LOCAL_RUNTIME = str(tmp_path), "onnx"
    settings.EMBEDDING_QUERY_INT8 = True
    forward.reset()
    try:
        embedding_warmup()
        assert forward._query_session is not None
        assert forward.int8_path(local_model()).exists()
    finally:
        forward.reset()


def test_warm_up_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("EMBEDDING_WARMUP", "false")
    quantities._registry.cache_clear()
    embedding_warmup()
    assert quantities._registry.cache_info().currsize == 0


@pytest.fixture
def collector():
    # The suite's process may hold frozen objects already (project/asgi.py tunes on import).
    gc.unfreeze()
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_a_warmed_up_process_freezes_its_objects_and_collects_less_often(settings, collector):
    settings.SERVER_GC_THRESHOLD = 12345
    _, older, oldest = gc.get_threshold()
    gc_tune()
    assert gc.get_threshold() == (12345, older, oldest)
    assert gc.get_freeze_count() > 0


def test_a_threshold_of_zero_leaves_the_collector_as_python_sets_it(settings, collector):
    settings.SERVER_GC_THRESHOLD = 0
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc_tune()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen
