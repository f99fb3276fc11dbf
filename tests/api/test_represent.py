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


def test_a_memory_is_represented_as_drfs_generic_walk_represents_it() -> None:
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from rest_framework import serializers

    tenant = TenantFactory()
    old = MemoryFactory(tenant=tenant, text="User lives in Oslo")
    new = MemoryFactory(
        tenant=tenant,
        text="User moved to Bergen 🏔️ in 2024",
        topics=["home", "moves"],
        entities=["Bergen"],
        metadata={"nested": {"a": [1, 2.5, None, True]}, "said_at": "2024-05-01"},
        # Another zone and microseconds: shown in the current zone, UTC, as "...Z".
        event_date=datetime(2024, 5, 1, 12, 30, 15, 250, tzinfo=ZoneInfo("Europe/Lisbon")),
        expires_at=datetime(2030, 1, 1, tzinfo=UTC),
        confidence=0.25,
        pinned=True,
    )
    old.superseded_by = new
    old.status = "superseded"
    old.save()
    new.last_accessed_at = datetime(2025, 1, 1, 8, 0)  # naive: the field's own conversion
    memory_supersedes_attach(tenant=tenant, memories=[old, new])
    serializer = MemoryOutputSerializer()
    for memory in (old, new):
        generic = serializers.ModelSerializer.to_representation(serializer, memory)
        assert json.dumps(serializer.to_representation(memory), default=str) == json.dumps(
            generic, default=str
        )


def test_a_search_hit_and_a_context_fact_are_represented_as_drfs_generic_walk_represents_them() -> None:
    from rest_framework import serializers

    from memory_app.api.views.context import ContextFactSerializer
    from memory_app.api.views.search import SearchHitSerializer
    from memory_app.selectors.context.injection import ContextFact
    from memory_app.selectors.search.query import SearchHit

    tenant = TenantFactory()
    memory = MemoryFactory(tenant=tenant, text="User's sister lives in Lisbon 🇵🇹")
    memory_supersedes_attach(tenant=tenant, memories=[memory])
    hits = [
        SearchHit(memory=memory, score=0.71, text=memory.text, member_ids=[memory.pk, 7], cluster=2),
        SearchHit(
            memory=memory,
            score=1,
            text="shown",
            member_ids=[],
            vector_score=0.5,
            lexical_score=3,
            relevance=0.4,
        ),
    ]
    serializer = SearchHitSerializer()
    for hit in hits:
        generic = serializers.Serializer.to_representation(serializer, hit)
        assert json.dumps(serializer.to_representation(hit), default=str) == json.dumps(generic, default=str)
    facts = [
        ContextFact(memory=memory, text=memory.text, score=0.5, similarity=None, member_ids=[memory.pk]),
        ContextFact(memory=memory, text="t", score=1, similarity=0.25, member_ids=[]),
    ]
    fact_serializer = ContextFactSerializer()
    for fact in facts:
        generic = serializers.Serializer.to_representation(fact_serializer, fact)
        assert json.dumps(fact_serializer.to_representation(fact), default=str) == json.dumps(
            generic, default=str
        )
