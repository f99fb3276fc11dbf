"""`validated_input` reuses one serializer per thread and class: each call must read exactly what a
new serializer reads, whatever the calls before it were."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from rest_framework import serializers

from memory_app.api.strict import validated_input
from memory_app.api.views.search import MemorySearchApi

Search = MemorySearchApi.MemorySearchInputSerializer


def _fresh(data: dict[str, Any]) -> dict[str, Any]:
    serializer = Search(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _errors(data: dict[str, Any]) -> Any:
    with pytest.raises(serializers.ValidationError) as caught:
        validated_input(Search, data)
    return caught.value.detail


VALID = [
    {"query": "what does the user eat?", "user_id": "u1"},
    {"query": "trips", "limit": 3, "mode": "vector", "filters": {"user_id": "u2", "topics_any": ["travel"]}},
    {"query": "anything", "all_users": True, "deduplicate": False},
]
INVALID = [
    {"query": "no scope"},
    {"query": "x", "user_id": "u1", "limit": 0},
    {"query": "x", "user_id": "u1", "surprise": 1},
]


def test_each_call_reads_what_a_new_serializer_reads_in_any_order():
    for data in [*VALID, *reversed(VALID), VALID[1], VALID[0]]:
        assert validated_input(Search, data) == _fresh(data)


def test_an_invalid_body_after_a_valid_one_reports_only_its_own_errors():
    for bad in INVALID:
        validated_input(Search, VALID[1])
        fresh = Search(data=bad)
        assert not fresh.is_valid()
        assert _errors(bad) == fresh.errors


def test_a_valid_body_after_an_invalid_one_validates():
    for bad in INVALID:
        _errors(bad)
        assert validated_input(Search, VALID[0]) == _fresh(VALID[0])


def test_threads_validate_side_by_side_without_seeing_each_others_input():
    results: dict[int, list[bool]] = {}
    barrier = threading.Barrier(4)

    def run(index: int) -> None:
        data = VALID[index % len(VALID)]
        barrier.wait()
        results[index] = [validated_input(Search, data) == _fresh(data) for _ in range(50)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(all(outcome) for outcome in results.values()) and len(results) == 4


def test_a_store_batch_read_through_one_bound_serializer_gives_each_item_its_own_fields_and_errors():
    from memory_app.api.store_serializers import MemoryStoreInputSerializer
    from memory_app.api.views.memories import parse_store_items
    from memory_app.errors import ApplicationError

    batch = [
        {"text": "User likes tea", "user_id": "u1", "topics": ["drinks"]},
        {"text": "", "user_id": "u1"},
        {"text": "Paris is in France", "kind": "semantic", "confidence": 0.5},
        {"text": "x", "user_id": "u1", "confidence": 7},
    ]
    with pytest.raises(ApplicationError) as caught:
        parse_store_items(batch)
    assert set(caught.value.fields) == {"items[1].text", "items[3].confidence"}

    items, many = parse_store_items([batch[0], batch[2]])
    fresh = []
    for raw in (batch[0], batch[2]):
        serializer = MemoryStoreInputSerializer(data=raw)
        assert serializer.is_valid()
        fresh.append(serializer.validated_data)
    assert many and [(i.text, i.topics, i.kind, i.confidence) for i in items] == [
        (f["text"], tuple(f.get("topics", ())), f["kind"], f.get("confidence")) for f in fresh
    ]
