"""Output serializers shared across requests (api/serializers.represent): the same body as a new
serializer's `.data`, with the fields built once per process."""

from __future__ import annotations

import json
import threading

import pytest

from memory_app.api.serializers import MemoryOutputSerializer, represent
from memory_app.api.store_serializers import StoreOutcomeSerializer
from memory_app.selectors.memories import memory_supersedes_attach
from tests.factories import MemoryFactory, TenantFactory

pytestmark = pytest.mark.django_db


def _outcome(memory) -> dict:  # type: ignore[no-untyped-def]
    return {
        "outcome": "created",
        "memory_id": memory.pk,
        "related_ids": [],
        "memory": memory,
        "warnings": [],
        "change_id": None,
        "cluster_id": None,
        "relation": None,
        "confidence": None,
        "embedding_pending": False,
    }


def test_represent_gives_what_a_new_serializer_gives_for_every_memory() -> None:
    tenant = TenantFactory()
    memories = [
        MemoryFactory(tenant=tenant, text="Caroline moved to Sweden in 2021", metadata={"said_at": "x"}),
        MemoryFactory(tenant=tenant, text="balance -200 EUR 🥜", topics=["money"], entities=["Ana"]),
    ]
    memory_supersedes_attach(tenant=tenant, memories=memories)
    for memory in memories:
        expected = json.dumps(StoreOutcomeSerializer(_outcome(memory)).data, default=str)
        assert json.dumps(represent(StoreOutcomeSerializer, _outcome(memory)), default=str) == expected
        assert represent(MemoryOutputSerializer, memory) == MemoryOutputSerializer(memory).data


def test_threads_share_one_serializer_and_each_gets_its_own_body() -> None:
    tenant = TenantFactory()
    memories = [MemoryFactory(tenant=tenant, text=f"fact number {i}") for i in range(8)]
    memory_supersedes_attach(tenant=tenant, memories=memories)
    bodies: dict[int, dict] = {}

    def serialise(memory) -> None:  # type: ignore[no-untyped-def]
        for _ in range(50):
            bodies[memory.pk] = represent(MemoryOutputSerializer, memory)

    threads = [threading.Thread(target=serialise, args=(m,)) for m in memories]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {pk: body["text"] for pk, body in bodies.items()} == {m.pk: m.text for m in memories}
