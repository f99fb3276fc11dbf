"""The store, search and session overrides are declared once (memory_app/overrides.py); every
surface that takes them follows the declarations."""

from __future__ import annotations

from dataclasses import fields

import pytest

from memory_app.api.store_serializers import StoreOptionsSerializer
from memory_app.api.views.agent_profiles import CONFIG_HELP
from memory_app.api.views.search import MemorySearchApi
from memory_app.mcp.schemas import OPERATOR_KNOBS
from memory_app.models.agent_config import AgentProfileConfig
from memory_app.overrides import (
    SEARCH_KNOBS,
    SESSION_KNOBS,
    STORE_KNOBS,
    Knob,
    SearchOverrides,
    SessionOverrides,
    StoreOverrides,
)


@pytest.mark.parametrize(
    ("knobs", "typed"),
    [(STORE_KNOBS, StoreOverrides), (SEARCH_KNOBS, SearchOverrides), (SESSION_KNOBS, SessionOverrides)],
)
def test_each_typed_overrides_has_exactly_the_declared_knobs(knobs: tuple[Knob, ...], typed: type) -> None:
    assert [f.name for f in fields(typed)] == [k.name for k in knobs]


def test_the_request_serializers_take_exactly_the_knobs_open_to_a_request() -> None:
    search_fields = MemorySearchApi.MemorySearchInputSerializer().fields
    assert set(StoreOptionsSerializer().fields) == {k.name for k in STORE_KNOBS if k.per_request}
    assert {k.name for k in SEARCH_KNOBS if k.per_request} <= set(search_fields)
    assert not {k.name for k in SEARCH_KNOBS if not k.per_request} & set(search_fields)


def test_a_request_and_a_profile_refuse_the_same_out_of_bounds_value() -> None:
    search = MemorySearchApi.MemorySearchInputSerializer(data={"query": "q", "mmr_lambda": 1.5})
    assert not search.is_valid()
    assert "mmr_lambda" in search.errors
    assert AgentProfileConfig.errors({"search": {"mmr_lambda": 1.5}}) == [
        "search.mmr_lambda: must be between 0 and 1"
    ]


def test_every_knob_is_named_in_the_profile_help_and_kept_from_tool_calls() -> None:
    for knob in STORE_KNOBS + SEARCH_KNOBS + SESSION_KNOBS:
        assert f'"{knob.name}"' in CONFIG_HELP
        assert knob.name in OPERATOR_KNOBS


@pytest.mark.parametrize(
    ("knob", "value", "problem"),
    [
        (Knob("n", "int", "", 1, None), 0, "must be a whole number of at least 1"),
        (Knob("w", "int", "", 100, 10_000_000), 2.5, "must be a whole number from 100 to 10000000"),
        (Knob("x", "number", "", 0.0, 2.0), True, "must be a number"),
        (Knob("j", "choice", "", choices=("offline", "llm")), "gpt", "must be one of offline, llm"),
        (Knob("b", "bool", ""), "yes", "must be true or false"),
        (Knob("x", "number", "", 0.0, 2.0), 2.0, None),
    ],
)
def test_a_knob_names_what_is_wrong_with_a_value(knob: Knob, value: object, problem: str | None) -> None:
    assert knob.problem(value) == problem
