"""The per-domain config objects: built once from the strict settings, frozen, refreshed on override."""

from __future__ import annotations

import dataclasses

import pytest
from django.conf import settings
from django.test import override_settings

from memory_app import conf

BUILDERS = [
    conf.store_config,
    conf.judge_config,
    conf.llm_config,
    conf.search_config,
    conf.context_config,
    conf.embeddings_config,
    conf.maintenance_config,
    conf.kinds_config,
]


def _setting_names_read_by_builders() -> set[str]:
    return {setting.name for setting in conf.DECLARED}


@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__)
def test_a_config_object_is_built_once_and_cannot_be_changed(build):
    config = build()
    assert build() is config
    field = dataclasses.fields(config)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(config, field.name, getattr(config, field.name))


def test_every_field_holds_the_value_the_settings_parser_gave():
    store, search, embeddings = conf.store_config(), conf.search_config(), conf.embeddings_config()
    assert store.max_batch == settings.STORE_MAX_BATCH
    assert store.max_text_chars == settings.MEMORY_MAX_TEXT_CHARS
    assert search.dedup_threshold == settings.SEARCH_DEDUP_THRESHOLD
    assert search.hnsw_max_scan_tuples == settings.SEARCH_HNSW_MAX_SCAN_TUPLES
    assert embeddings.near_dup_threshold == settings.SEMANTIC_DEDUP_THRESHOLD
    assert embeddings.openai.batch_size == settings.OPENAI_EMBEDDING_BATCH_SIZE
    assert dict(conf.context_config().all_shares) == {
        "short_term": settings.CONTEXT_ALL_SHARE_SHORT_TERM,
        "episodic": settings.CONTEXT_ALL_SHARE_EPISODIC,
        "semantic": settings.CONTEXT_ALL_SHARE_SEMANTIC,
        "procedural": settings.CONTEXT_ALL_SHARE_PROCEDURAL,
    }
    assert conf.maintenance_config().ttl_days_short_term == settings.MEMORY_TTL_DAYS_SHORT_TERM
    assert conf.kinds_config().extraction_mode == settings.EXTRACTION_MODE
    assert conf.judge_config().judge == settings.DEDUP_JUDGE


def test_the_builders_read_only_settings_that_the_settings_module_defines():
    names = _setting_names_read_by_builders()
    assert len(names) > 90
    assert [name for name in sorted(names) if not hasattr(settings, name)] == []


def test_override_settings_is_seen_by_the_next_read_and_undone_after():
    before = conf.search_config()
    with override_settings(SEARCH_MMR_LAMBDA=0.25, STORE_MAX_BATCH=7):
        assert conf.search_config().mmr_lambda == 0.25
        assert conf.store_config().max_batch == 7
        assert conf.search_config().fusion == before.fusion
    assert conf.search_config().mmr_lambda == before.mmr_lambda
    assert conf.store_config().max_batch == settings.STORE_MAX_BATCH


def test_the_settings_fixture_is_seen_by_the_next_read(settings):
    settings.CONTEXT_ALL_MAX_TOKENS = 123
    assert conf.context_config().all_max_tokens == 123


def test_the_llm_counts_as_configured_only_with_a_model_and_a_key():
    with override_settings(LLM_MODEL="m", OPENAI_API_KEY=""):
        assert not conf.llm_config().configured
    with override_settings(LLM_MODEL="m", OPENAI_API_KEY="sk-test"):
        assert conf.llm_config().configured
