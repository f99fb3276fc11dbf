"""The hand-written client and the OpenAPI schema describe the same API: operations, every field of
every model, request options and which of them are required. Either side changing alone fails here."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest
from memkinds_client import OPERATIONS, MemoryClient
from memkinds_client import requests as r
from memkinds_client.models import COMPONENTS, Extraction

from tests.support.openapi_check import openapi_schema, operations


def component(name: str) -> dict[str, Any]:
    return openapi_schema()["components"]["schemas"][name]


def query_parameters(method: str, path: str) -> dict[str, dict[str, Any]]:
    operation = openapi_schema()["paths"][path][method.lower()]
    return {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "query"}


def test_the_client_has_exactly_the_schema_operations():
    assert set(OPERATIONS.values()) == operations(openapi_schema())
    assert set(OPERATIONS) <= {name for name in dir(MemoryClient) if not name.startswith("_")}


def _nullable(annotation: Any) -> bool:
    return type(None) in typing.get_args(annotation) or annotation is Any


@pytest.mark.parametrize("model", list(COMPONENTS), ids=lambda m: m.__name__)
def test_every_response_model_has_the_fields_of_its_component(model):
    schema = component(COMPONENTS[model])
    hints = typing.get_type_hints(model)
    assert set(hints) == set(schema["properties"]), COMPONENTS[model]
    for name, prop in schema["properties"].items():
        if prop.get("nullable"):
            assert _nullable(hints[name]), f"{model.__name__}.{name} may be null in the API"


REQUEST_COMPONENTS: dict[type, tuple[str, set[str]]] = {
    # model: (component, fields the client takes as named arguments instead)
    r.MemoryInput: ("MemoryStoreInputRequest", set()),
    r.MemoryChanges: ("PatchedMemoryUpdateInputRequest", set()),
    r.SearchFilters: ("SearchFilterRequest", set()),
    r.SearchOptions: ("MemorySearchInputRequest", {"query"}),
    r.ChatMessage: ("ContextMessageRequest", set()),
    r.ContextOptions: ("ContextInputRequest", set()),
    r.TurnContextOptions: ("ContextAllInputRequest", {"query"}),
    r.InteractionOptions: ("InteractionInputRequest", {"session_id", "user_message"}),
    r.InteractionInput: ("InteractionInputRequest", set()),
    r.ConversationMessage: ("ChatMessageRequest", set()),
    r.SessionMessage: ("MessageRequest", set()),
    r.AppendOptions: ("SessionAppendInputRequest", {"messages", "role", "content"}),
    r.SuggestOptions: ("ProcedureSuggestInputRequest", {"query"}),
}


# Taken as named arguments by search and context and sent at the top level of the body; the API
# accepts them there and in `filters` alike, so they are compared apart from the other fields.
TOP_LEVEL_SCOPE = {"user_id", "agent_id", "session_id"}
SCOPED_METHODS = {r.SearchOptions: "search", r.ContextOptions: "context"}


@pytest.mark.parametrize("model", list(REQUEST_COMPONENTS), ids=lambda m: m.__name__)
def test_every_request_model_has_the_fields_of_its_component_and_the_same_required_ones(model):
    name, named = REQUEST_COMPONENTS[model]
    schema = component(name)
    if model in SCOPED_METHODS:
        method = inspect.signature(getattr(MemoryClient, SCOPED_METHODS[model])).parameters
        assert set(method) >= TOP_LEVEL_SCOPE, name
        named = named | TOP_LEVEL_SCOPE
        assert set(typing.get_type_hints(model)) | named >= set(schema["properties"]), name
        assert set(typing.get_type_hints(model)) - TOP_LEVEL_SCOPE <= set(schema["properties"]), name
        return
    assert set(typing.get_type_hints(model)) | named == set(schema["properties"]), name
    assert model.__required_keys__ == set(schema.get("required", [])) - named, name


QUERY_MODELS: dict[type, tuple[str, str, set[str]]] = {
    r.StoreOptions: ("POST", "/api/v1/memories", set()),
    r.ListFilters: ("GET", "/api/v1/memories", {"cursor", "page_size"}),
    r.ForgetOptions: ("DELETE", "/api/v1/users/{user_id}/memories", set()),
    r.StatsFilters: ("GET", "/api/v1/stats", set()),
}


@pytest.mark.parametrize("model", list(QUERY_MODELS), ids=lambda m: m.__name__)
def test_every_option_model_has_the_query_parameters_of_its_operation(model):
    method, path, named = QUERY_MODELS[model]
    assert set(typing.get_type_hints(model)) | named == set(query_parameters(method, path))


NAMED_ARGUMENTS = {
    # client method: the body component or the query parameters its named arguments stand for
    "record_procedure": ("ProcedureRecordInputRequest", None),
    "feedback": ("FeedbackInputRequest", None),
    "record_interactions": ("InteractionBatchInputRequest", None),
    "get_session": (None, ("GET", "/api/v1/sessions/{session_id}")),
    "delete_session": (None, ("DELETE", "/api/v1/sessions/{session_id}")),
    "delete_memory": (None, ("DELETE", "/api/v1/memories/{memory_id}")),
    "list_agent_profiles": (None, ("GET", "/api/v1/agent-profiles")),
    "create_agent_profile": ("AgentProfileCreateInputRequest", None),
    "update_agent_profile": ("PatchedAgentProfileUpdateInputRequest", None),
    "export_tenant": (None, ("GET", "/api/v1/export")),
    "embedding_stats": (None, ("GET", "/api/v1/stats/embeddings")),
}


@pytest.mark.parametrize("method", list(NAMED_ARGUMENTS))
def test_methods_with_named_arguments_take_exactly_the_api_fields(method):
    body, query = NAMED_ARGUMENTS[method]
    path_template = OPERATIONS[method][1]
    params = {
        name
        for name, p in inspect.signature(getattr(MemoryClient, method)).parameters.items()
        if name != "self" and "{" + name + "}" not in path_template
    }
    expected = set(component(body)["properties"]) if body else set(query_parameters(*query))
    assert params == expected


def test_literal_choices_match_the_schema_enums():
    enums = {
        "KindEnum": typing.get_args(typing.get_type_hints(r.MemoryInput)["kind"]),
        "ModeEnum": typing.get_args(typing.get_type_hints(r.SearchOptions)["mode"]),
        "RoleEnum": typing.get_args(typing.get_type_hints(r.ChatMessage)["role"]),
        "ExtractionEnum": typing.get_args(Extraction),
        "OutcomeEnum": typing.get_args(typing.get_type_hints(COMPONENT_MODEL["StoreOutcome"])["outcome"]),
    }
    for name, values in enums.items():
        assert set(values) == set(component(name)["enum"]), name


COMPONENT_MODEL = {name: model for model, name in COMPONENTS.items()}
