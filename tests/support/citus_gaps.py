"""Tests that cannot pass on a Citus cluster yet, each with the reason (`bin/test --citus` skips
them; docs/SCALING.md "What does not run on Citus yet"). A pytest plugin loaded by
tests/conftest.py; on a single server it changes nothing.

Keyed by test function name (every parametrisation), or by file for a whole file.
"""

from __future__ import annotations

import pytest

JOIN_BY_ID = (
    "the ORM joins two distributed tables by id alone (select_related / related lookups without "
    "the tenant): Citus refuses joins that are not on the distribution column"
)

PLAN_ON_COORDINATOR = (
    "reads the plan or the planner statistics of the memory table on the coordinator, where the "
    "distributed table is empty: its plan is Citus's and the statistics live on the shards"
)
PARTIAL_INDEXES = (
    "per-scope partial HNSW indexes size scopes from pg_stats of the coordinator's empty table and "
    "would be built on every shard (docs/SCALING.md, still to do)"
)
REFERENCE_UPDATE = (
    "an all-tenant reindex updates the reindexvector reference table from a join with the "
    "distributed memory table, which Citus refuses"
)

GAPS_BY_FILE: dict[str, str] = {"tests/admin/test_admin_review.py": JOIN_BY_ID}

# test function name -> reason
GAPS: dict[str, str] = {
    "test_deleting_a_memory_in_the_admin_forgets_it_with_its_lineage": JOIN_BY_ID,
    "test_a_change_record_is_read_only_in_the_admin": JOIN_BY_ID,
    "test_admin_lists_and_review_pages_never_load_vectors": JOIN_BY_ID,
    "test_deleting_a_user_leaves_no_text_of_theirs_in_any_table": JOIN_BY_ID,
    "test_the_backfill_computes_the_missing_rows_and_nothing_twice": JOIN_BY_ID,
    "test_reindex_tokens_reports_and_refreshes_a_row_counted_by_older_word_rules_"
    "and_leaves_fitting_rows_alone": JOIN_BY_ID,
    "test_the_stale_row_scan_reads_page_after_page_and_skips_rows_of_an_older_text": JOIN_BY_ID,
    "test_reindex_dry_run_changes_nothing_and_apply_switches_every_row_to_the_configured_model": (
        REFERENCE_UPDATE
    ),
    "test_reindex_re_embeds_procedure_patterns_of_another_model": REFERENCE_UPDATE,
    "test_the_planner_statistics_give_each_frequent_words_share_of_the_table": PLAN_ON_COORDINATOR,
    "test_iterative_scan_returns_k_rows_under_a_selective_filter": PLAN_ON_COORDINATOR,
    "test_hnsw_falls_back_to_exact_when_the_scan_stops_before_k_rows": PLAN_ON_COORDINATOR,
    "test_a_large_user_gets_a_partial_index_that_serves_only_its_scope": PARTIAL_INDEXES,
    "test_a_scope_that_shrank_loses_its_partial_index": PARTIAL_INDEXES,
    "test_the_search_indexes_command_reports_what_it_would_build": PARTIAL_INDEXES,
    "test_the_periodic_task_indexes_large_scopes_of_active_tenants_and_a_rerun_changes_nothing": (
        PARTIAL_INDEXES
    ),
    "test_counting_an_access_on_a_page_the_inserts_filled_is_a_heap_only_update": (
        "counts heap-only updates in pg_stat_user_tables of the coordinator; the updates happen on the shards"
    ),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"] != "project.citus_backend":
        return
    for item in items:
        name = getattr(item, "originalname", item.name)
        reason = GAPS.get(name) or GAPS_BY_FILE.get(item.nodeid.split("::", 1)[0])
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"on Citus: {reason}"))
