"""The trim plan of a session's token budget, without a database."""

from __future__ import annotations

from memory_app.retrieval.trim import plan_trim


def test_nothing_is_trimmed_while_the_session_fits_its_budget():
    plan = plan_trim([10, 20, 30], summary_tokens=5, budget=65, target=40, summary_reserve=5)
    assert plan.trim == 0


def test_past_the_budget_the_oldest_go_until_the_rest_fits_the_target():
    plan = plan_trim([30, 30, 30, 30], summary_tokens=0, budget=100, target=70, summary_reserve=0)
    assert plan.trim == 2  # 60 left <= 70
    assert plan.summary_budget == 40


def test_the_summary_reserve_counts_against_the_target():
    plan = plan_trim([30, 30, 30, 30], summary_tokens=0, budget=100, target=70, summary_reserve=20)
    assert plan.trim == 3  # 30 + 20 <= 70, while 60 + 20 was not


def test_the_newest_message_always_stays():
    plan = plan_trim([50, 99], summary_tokens=10, budget=100, target=60, summary_reserve=10)
    assert plan.trim == 1
    assert plan.summary_budget == 1
