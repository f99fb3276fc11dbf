"""The sync client. `AsyncMemoryClient` (aio.py) has the same methods with the same signatures."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, Unpack, cast
from urllib.parse import parse_qs, urlsplit

import httpx

from memkinds_client import models as m
from memkinds_client import requests as r
from memkinds_client._base import ClientBase
from memkinds_client.operations import Call, body, call, json_lines, procedure_run, scope_fields


def next_cursor(page: m.MemoryPage) -> str | None:
    """The cursor of the page after `page` (None on the last page)."""
    if not page["next"]:
        return None
    return parse_qs(urlsplit(page["next"]).query).get("cursor", [None])[0]


class MemoryClient(ClientBase):
    """`with MemoryClient("http://127.0.0.1:8000", api_key) as memory: memory.search("...")`.
    Every failure raises `MemoryApiError` (code, message, fields)."""

    def __init__(
        self, base_url: str, api_key: str, *, transport: httpx.BaseTransport | None = None, **kw: Any
    ):
        super().__init__(base_url, api_key, **kw)
        self._http = httpx.Client(
            base_url=self.base_url, headers=self._headers, timeout=self._timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, c: Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(c.method, c.path, params=c.params, **self._body(c))
            except httpx.TransportError as exc:
                if not self._retry_on_exception(c, exc, attempt):
                    raise self._failure(exc) from exc
                time.sleep(self._delay(attempt, None))
            else:
                if not self._retry_on_response(response, attempt):
                    return self._result(response)
                time.sleep(self._delay(attempt, response))
            attempt += 1

    # --- operations (same order and signatures as aio.AsyncMemoryClient) -----------------------
    def health(self) -> m.Health:
        return cast(m.Health, self._send(call("health")))

    def readiness(self) -> m.Readiness:
        return cast(m.Readiness, self._send(call("readiness")))

    def store(
        self, memories: Sequence[r.MemoryInput], **options: Unpack[r.StoreOptions]
    ) -> list[m.StoreOutcome]:
        return cast(list[m.StoreOutcome], self._send(call("store", params=options, json=list(memories))))

    def list_memories(
        self, *, cursor: str | None = None, page_size: int | None = None, **filters: Unpack[r.ListFilters]
    ) -> m.MemoryPage:
        params = {**filters, "cursor": cursor, "page_size": page_size}
        return cast(m.MemoryPage, self._send(call("list_memories", params=params)))

    def iter_memories(
        self, *, page_size: int | None = None, **filters: Unpack[r.ListFilters]
    ) -> Iterator[m.Memory]:
        cursor: str | None = None
        while True:
            page = self.list_memories(cursor=cursor, page_size=page_size, **filters)
            yield from page["results"]
            cursor = next_cursor(page)
            if cursor is None:
                return

    def get_memory(self, memory_id: int) -> m.Memory:
        return cast(m.Memory, self._send(call("get_memory", path={"memory_id": memory_id})))

    def update_memory(self, memory_id: int, **changes: Unpack[r.MemoryChanges]) -> m.Memory:
        return cast(m.Memory, self._send(call("update_memory", path={"memory_id": memory_id}, json=changes)))

    def delete_memory(self, memory_id: int, *, purge: bool | None = None) -> None:
        self._send(call("delete_memory", path={"memory_id": memory_id}, params={"purge": purge}))

    def feedback(self, memory_id: int, signal: Literal["helpful", "harmful"]) -> m.Memory:
        c = call("feedback", path={"memory_id": memory_id}, json={"signal": signal})
        return cast(m.Memory, self._send(c))

    def lineage(self, memory_id: int) -> m.Lineage:
        return cast(m.Lineage, self._send(call("lineage", path={"memory_id": memory_id})))

    def undo_change(self, change_id: int) -> m.ChangeUndo:
        return cast(m.ChangeUndo, self._send(call("undo_change", path={"change_id": change_id})))

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        consistency: r.Consistency | None = None,
        **options: Unpack[r.SearchOptions],
    ) -> m.SearchResult:
        """`user_id`, `agent_id`, `session_id`: whose memories, sent at the top level (the API also
        takes them in `filters`)."""
        scope = scope_fields(user_id, agent_id, session_id)
        return cast(
            m.SearchResult,
            self._send(
                call(
                    "search",
                    params={"consistency": consistency},
                    json=body({"query": query, **scope}, options),
                )
            ),
        )

    def context(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        consistency: r.Consistency | None = None,
        **options: Unpack[r.ContextOptions],
    ) -> m.Context:
        """`user_id`, `agent_id`, `session_id` as for `search`."""
        scope = scope_fields(user_id, agent_id, session_id)
        return cast(
            m.Context,
            self._send(call("context", params={"consistency": consistency}, json=body(scope, options))),
        )

    def turn_context(
        self, query: str, *, consistency: r.Consistency | None = None, **options: Unpack[r.TurnContextOptions]
    ) -> m.TurnContext:
        return cast(
            m.TurnContext,
            self._send(
                call(
                    "turn_context", params={"consistency": consistency}, json=body({"query": query}, options)
                )
            ),
        )

    def record_interaction(
        self, session_id: str, user_message: str | None = None, **options: Unpack[r.InteractionOptions]
    ) -> m.Interaction:
        json = body({"session_id": session_id}, {"user_message": user_message, **options})
        return cast(m.Interaction, self._send(call("record_interaction", json=json)))

    def record_interactions(self, interactions: Sequence[r.InteractionInput]) -> m.InteractionBatch:
        c = call("record_interactions", json={"interactions": list(interactions)})
        return cast(m.InteractionBatch, self._send(c))

    def append_messages(
        self, session_id: str, messages: Sequence[r.SessionMessage], **options: Unpack[r.AppendOptions]
    ) -> m.SessionAppend:
        json = body({"messages": list(messages)}, options)
        return cast(
            m.SessionAppend, self._send(call("append_messages", path={"session_id": session_id}, json=json))
        )

    def get_session(self, session_id: str, *, limit: int | None = None) -> m.SessionDetail:
        c = call("get_session", path={"session_id": session_id}, params={"limit": limit})
        return cast(m.SessionDetail, self._send(c))

    def delete_session(self, session_id: str, *, memories: bool | None = None) -> m.Deleted:
        c = call("delete_session", path={"session_id": session_id}, params={"memories": memories})
        return cast(m.Deleted, self._send(c))

    def record_procedure(
        self,
        query: str,
        tool_sequence: Sequence[str],
        execution_time_ms: float,
        success_score: float,
        *,
        user_id: str | None = None,
    ) -> m.Procedure:
        c = procedure_run(query, tool_sequence, execution_time_ms, success_score, user_id)
        return cast(m.Procedure, self._send(c))

    def suggest_procedure(self, query: str, **options: Unpack[r.SuggestOptions]) -> m.ProcedureSuggestion:
        c = call("suggest_procedure", json=body({"query": query}, options))
        return cast(m.ProcedureSuggestion, self._send(c))

    def forget_user(self, user_id: str, **options: Unpack[r.ForgetOptions]) -> m.UserDeleted:
        return cast(m.UserDeleted, self._send(call("forget_user", path={"user_id": user_id}, params=options)))

    def stats(self, **filters: Unpack[r.StatsFilters]) -> m.Stats:
        return cast(m.Stats, self._send(call("stats", params=filters)))

    def embedding_stats(
        self, *, model: str | None = None, consistency: r.Consistency | None = None
    ) -> m.EmbeddingStats:
        return cast(
            m.EmbeddingStats,
            self._send(call("embedding_stats", params={"model": model, "consistency": consistency})),
        )

    # agent profiles: per-agent overrides of the store and search defaults
    def list_agent_profiles(
        self, *, cursor: str | None = None, page_size: int | None = None
    ) -> m.AgentProfilePage:
        c = call("list_agent_profiles", params={"cursor": cursor, "page_size": page_size})
        return cast(m.AgentProfilePage, self._send(c))

    def create_agent_profile(
        self, agent_id: str, *, name: str | None = None, config: Mapping[str, Any] | None = None
    ) -> m.AgentProfile:
        c = call("create_agent_profile", json=body({"agent_id": agent_id}, {"name": name, "config": config}))
        return cast(m.AgentProfile, self._send(c))

    def get_agent_profile(self, agent_id: str) -> m.AgentProfile:
        return cast(m.AgentProfile, self._send(call("get_agent_profile", path={"agent_id": agent_id})))

    def update_agent_profile(
        self, agent_id: str, *, name: str | None = None, config: Mapping[str, Any] | None = None
    ) -> m.AgentProfile:
        c = call(
            "update_agent_profile",
            path={"agent_id": agent_id},
            json=body({}, {"name": name, "config": config}),
        )
        return cast(m.AgentProfile, self._send(c))

    def delete_agent_profile(self, agent_id: str) -> None:
        self._send(call("delete_agent_profile", path={"agent_id": agent_id}))

    # a whole tenant: every kind as JSONL records (the export is read whole here; the endpoint streams)
    def export_tenant(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], self._send(call("export_tenant")))

    def import_tenant(
        self, records: bytes | Iterable[Mapping[str, Any]], *, apply: bool | None = None
    ) -> m.ImportReport:
        c = call("import_tenant", params={"apply": apply}, content=json_lines(records))
        return cast(m.ImportReport, self._send(c))
