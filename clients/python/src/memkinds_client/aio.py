"""The async client: the methods of `MemoryClient` (client.py), awaited."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Literal, Unpack, cast

import anyio
import httpx

from memkinds_client import models as m
from memkinds_client import requests as r
from memkinds_client._base import ClientBase
from memkinds_client.client import next_cursor
from memkinds_client.operations import Call, body, call, json_lines, procedure_run, scope_fields


class AsyncMemoryClient(ClientBase):
    """`async with AsyncMemoryClient(url, api_key) as memory: await memory.search("...")`."""

    def __init__(
        self, base_url: str, api_key: str, *, transport: httpx.AsyncBaseTransport | None = None, **kw: Any
    ):
        super().__init__(base_url, api_key, **kw)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=self._headers, timeout=self._timeout, transport=transport
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, c: Call) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.request(c.method, c.path, params=c.params, **self._body(c))
            except httpx.TransportError as exc:
                if not self._retry_on_exception(c, exc, attempt):
                    raise self._failure(exc) from exc
                await anyio.sleep(self._delay(attempt, None))
            else:
                if not self._retry_on_response(response, attempt):
                    return self._result(response)
                await anyio.sleep(self._delay(attempt, response))
            attempt += 1

    # --- operations (same order and signatures as client.MemoryClient) -----------------------
    async def health(self) -> m.Health:
        return cast(m.Health, await self._send(call("health")))

    async def readiness(self) -> m.Readiness:
        return cast(m.Readiness, await self._send(call("readiness")))

    async def store(
        self, memories: Sequence[r.MemoryInput], **options: Unpack[r.StoreOptions]
    ) -> list[m.StoreOutcome]:
        return cast(
            list[m.StoreOutcome], await self._send(call("store", params=options, json=list(memories)))
        )

    async def list_memories(
        self, *, cursor: str | None = None, page_size: int | None = None, **filters: Unpack[r.ListFilters]
    ) -> m.MemoryPage:
        params = {**filters, "cursor": cursor, "page_size": page_size}
        return cast(m.MemoryPage, await self._send(call("list_memories", params=params)))

    async def iter_memories(
        self, *, page_size: int | None = None, **filters: Unpack[r.ListFilters]
    ) -> AsyncIterator[m.Memory]:
        cursor: str | None = None
        while True:
            page = await self.list_memories(cursor=cursor, page_size=page_size, **filters)
            for memory in page["results"]:
                yield memory
            cursor = next_cursor(page)
            if cursor is None:
                return

    async def get_memory(self, memory_id: int) -> m.Memory:
        return cast(m.Memory, await self._send(call("get_memory", path={"memory_id": memory_id})))

    async def update_memory(self, memory_id: int, **changes: Unpack[r.MemoryChanges]) -> m.Memory:
        return cast(
            m.Memory, await self._send(call("update_memory", path={"memory_id": memory_id}, json=changes))
        )

    async def delete_memory(self, memory_id: int, *, purge: bool | None = None) -> None:
        await self._send(call("delete_memory", path={"memory_id": memory_id}, params={"purge": purge}))

    async def feedback(self, memory_id: int, signal: Literal["helpful", "harmful"]) -> m.Memory:
        c = call("feedback", path={"memory_id": memory_id}, json={"signal": signal})
        return cast(m.Memory, await self._send(c))

    async def lineage(self, memory_id: int) -> m.Lineage:
        return cast(m.Lineage, await self._send(call("lineage", path={"memory_id": memory_id})))

    async def undo_change(self, change_id: int) -> m.ChangeUndo:
        return cast(m.ChangeUndo, await self._send(call("undo_change", path={"change_id": change_id})))

    async def search(
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
            await self._send(
                call(
                    "search",
                    params={"consistency": consistency},
                    json=body({"query": query, **scope}, options),
                )
            ),
        )

    async def context(
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
            await self._send(call("context", params={"consistency": consistency}, json=body(scope, options))),
        )

    async def turn_context(
        self, query: str, *, consistency: r.Consistency | None = None, **options: Unpack[r.TurnContextOptions]
    ) -> m.TurnContext:
        return cast(
            m.TurnContext,
            await self._send(
                call(
                    "turn_context", params={"consistency": consistency}, json=body({"query": query}, options)
                )
            ),
        )

    async def record_interaction(
        self, session_id: str, user_message: str | None = None, **options: Unpack[r.InteractionOptions]
    ) -> m.Interaction:
        json = body({"session_id": session_id}, {"user_message": user_message, **options})
        return cast(m.Interaction, await self._send(call("record_interaction", json=json)))

    async def record_interactions(self, interactions: Sequence[r.InteractionInput]) -> m.InteractionBatch:
        c = call("record_interactions", json={"interactions": list(interactions)})
        return cast(m.InteractionBatch, await self._send(c))

    async def append_messages(
        self, session_id: str, messages: Sequence[r.SessionMessage], **options: Unpack[r.AppendOptions]
    ) -> m.SessionAppend:
        json = body({"messages": list(messages)}, options)
        return cast(
            m.SessionAppend,
            await self._send(call("append_messages", path={"session_id": session_id}, json=json)),
        )

    async def get_session(self, session_id: str, *, limit: int | None = None) -> m.SessionDetail:
        c = call("get_session", path={"session_id": session_id}, params={"limit": limit})
        return cast(m.SessionDetail, await self._send(c))

    async def delete_session(self, session_id: str, *, memories: bool | None = None) -> m.Deleted:
        c = call("delete_session", path={"session_id": session_id}, params={"memories": memories})
        return cast(m.Deleted, await self._send(c))

    async def record_procedure(
        self,
        query: str,
        tool_sequence: Sequence[str],
        execution_time_ms: float,
        success_score: float,
        *,
        user_id: str | None = None,
    ) -> m.Procedure:
        c = procedure_run(query, tool_sequence, execution_time_ms, success_score, user_id)
        return cast(m.Procedure, await self._send(c))

    async def suggest_procedure(
        self, query: str, **options: Unpack[r.SuggestOptions]
    ) -> m.ProcedureSuggestion:
        c = call("suggest_procedure", json=body({"query": query}, options))
        return cast(m.ProcedureSuggestion, await self._send(c))

    async def forget_user(self, user_id: str, **options: Unpack[r.ForgetOptions]) -> m.UserDeleted:
        return cast(
            m.UserDeleted, await self._send(call("forget_user", path={"user_id": user_id}, params=options))
        )

    async def stats(self, **filters: Unpack[r.StatsFilters]) -> m.Stats:
        return cast(m.Stats, await self._send(call("stats", params=filters)))

    async def embedding_stats(
        self, *, model: str | None = None, consistency: r.Consistency | None = None
    ) -> m.EmbeddingStats:
        return cast(
            m.EmbeddingStats,
            await self._send(call("embedding_stats", params={"model": model, "consistency": consistency})),
        )

    # agent profiles: per-agent overrides of the store and search defaults
    async def list_agent_profiles(
        self, *, cursor: str | None = None, page_size: int | None = None
    ) -> m.AgentProfilePage:
        c = call("list_agent_profiles", params={"cursor": cursor, "page_size": page_size})
        return cast(m.AgentProfilePage, await self._send(c))

    async def create_agent_profile(
        self, agent_id: str, *, name: str | None = None, config: Mapping[str, Any] | None = None
    ) -> m.AgentProfile:
        c = call("create_agent_profile", json=body({"agent_id": agent_id}, {"name": name, "config": config}))
        return cast(m.AgentProfile, await self._send(c))

    async def get_agent_profile(self, agent_id: str) -> m.AgentProfile:
        return cast(m.AgentProfile, await self._send(call("get_agent_profile", path={"agent_id": agent_id})))

    async def update_agent_profile(
        self, agent_id: str, *, name: str | None = None, config: Mapping[str, Any] | None = None
    ) -> m.AgentProfile:
        c = call(
            "update_agent_profile",
            path={"agent_id": agent_id},
            json=body({}, {"name": name, "config": config}),
        )
        return cast(m.AgentProfile, await self._send(c))

    async def delete_agent_profile(self, agent_id: str) -> None:
        await self._send(call("delete_agent_profile", path={"agent_id": agent_id}))

    # a whole tenant: every kind as JSONL records (the export is read whole here; the endpoint streams)
    async def export_tenant(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], await self._send(call("export_tenant")))

    async def import_tenant(
        self, records: bytes | Iterable[Mapping[str, Any]], *, apply: bool | None = None
    ) -> m.ImportReport:
        c = call("import_tenant", params={"apply": apply}, content=json_lines(records))
        return cast(m.ImportReport, await self._send(c))
