"""Tests that cannot pass on a Citus cluster yet, each with the reason (`bin/test --citus` skips
them; docs/SCALING.md "What does not run on Citus yet"). A pytest plugin loaded by
tests/conftest.py; on a single server it changes nothing.

Keyed by test function name (every parametrisation), or by file for a whole file.

On Citus the tests that reach no database are also left out (deselected, counted in pytest's
summary): pytest-django blocks their database access, so they run the same code on any database,
and the single-node leg of the gate has run them. `CITUS_ALL_TESTS=1` keeps them.
"""

from __future__ import annotations

import os

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

HEAP_ONLY_COUNT = (
    "counts heap-only updates in pg_stat_user_tables of the coordinator; the updates happen on the shards"
)
REINDEX_SIDE_TABLE = (
    "the reindex side table (reindexvector) is a reference table: Citus refuses to write it in a "
    "statement or transaction that also reads or alters the distributed memory table"
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
    "test_a_row_of_the_older_float16_form_is_ignored_and_found_stale": JOIN_BY_ID,
    # The operator's cluster review in a browser: the pages of test_admin_review.py.
    "test_operator_merges_a_cluster_then_undoes_it": JOIN_BY_ID,
    "test_operator_keeps_look_alikes_apart": JOIN_BY_ID,
    "test_operator_splits_a_cluster_into_two_merges": JOIN_BY_ID,
    "test_a_new_operator_clears_twenty_planted_clusters_from_the_pages_alone": JOIN_BY_ID,
    # A model of another width: the resize and the switch write the reindex side table.
    "test_reindex_with_resize_makes_the_columns_the_models_width_and_search_finds_the_memories": (
        REINDEX_SIDE_TABLE
    ),
    "test_the_packaged_model_is_refused_while_the_columns_have_another_width": REINDEX_SIDE_TABLE,
    "test_an_export_of_the_old_width_is_refused_by_an_import_after_the_resize": REINDEX_SIDE_TABLE,
    "test_a_process_that_has_not_seen_the_resize_answers_503_once_then_follows": REINDEX_SIDE_TABLE,
    "test_a_run_stopped_after_the_resize_is_resumed_by_running_it_again": REINDEX_SIDE_TABLE,
    "test_a_store_before_the_switch_is_found_by_a_search_after_it_without_a_restart": REINDEX_SIDE_TABLE,
    "test_reindex_dry_run_changes_nothing_and_apply_switches_every_row_to_the_configured_model": (
        REFERENCE_UPDATE
    ),
    "test_reindex_re_embeds_procedure_patterns_of_another_model": REFERENCE_UPDATE,
    "test_the_planner_statistics_give_each_frequent_words_share_of_the_table": PLAN_ON_COORDINATOR,
    "test_rows_below_the_bound_are_not_read_when_the_rare_rows_reach_it": PLAN_ON_COORDINATOR,
    "test_iterative_scan_returns_k_rows_under_a_selective_filter": PLAN_ON_COORDINATOR,
    "test_hnsw_falls_back_to_exact_when_the_scan_stops_before_k_rows": PLAN_ON_COORDINATOR,
    "test_a_large_user_gets_a_partial_index_that_serves_only_its_scope": PARTIAL_INDEXES,
    "test_a_scope_that_shrank_loses_its_partial_index": PARTIAL_INDEXES,
    "test_the_search_indexes_command_reports_what_it_would_build": PARTIAL_INDEXES,
    "test_the_periodic_task_indexes_large_scopes_of_active_tenants_and_a_rerun_changes_nothing": (
        PARTIAL_INDEXES
    ),
    "test_counting_an_access_on_a_page_the_inserts_filled_is_a_heap_only_update": HEAP_ONLY_COUNT,
    "test_a_page_holds_six_rows_of_about_1_kb_and_keeps_room_for_one_new_version": HEAP_ONLY_COUNT,
}


# pytest-django's fixtures through which a test reaches the test database (django_db_setup: a
# server process started on it); a fixture that needs one of them lists it in the test's closure.
DATABASE_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "django_db_setup",
        "live_server",
    }
)


def reaches_the_database(item: pytest.Item) -> bool:
    return bool(item.get_closest_marker("django_db")) or bool(
        DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"] != "project.citus_backend":
        return
    if os.environ.get("CITUS_ALL_TESTS", "").lower() not in ("1", "true"):
        elsewhere = [item for item in items if not reaches_the_database(item)]
        if elsewhere:
            config.hook.pytest_deselected(items=elsewhere)
            items[:] = [item for item in items if reaches_the_database(item)]
    for item in items:
        name = getattr(item, "originalname", item.name)
        reason = GAPS.get(name) or GAPS_BY_FILE.get(item.nodeid.split("::", 1)[0])
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"on Citus: {reason}"))
