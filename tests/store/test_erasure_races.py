"""Erasure against concurrent writes to the same scope, with real threads on real connections.

Each race asserts: no 5xx, no 409 for a store, and an end state that adds up (no message without its
session, no review member or lineage row pointing at a purged memory, a session's token count equal to
what it holds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from memory_app.embeddings.tokens import count_tokens
from memory_app.judge.base import JudgeItem, Judgement
from memory_app.models import ClusterMember, ConversationSession, Memory, MemoryChangeSource, SessionMessage
from memory_app.models.memory import MemoryStatus
from memory_app.services.api_keys import api_key_issue
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store
from tests.factories import TenantFactory, unit_vector
from tests.factories.store import at_distance

pytestmark = pytest.mark.django_db(transaction=True)


def _client(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


def _race(calls: list[Callable[[APIClient], Any]], raw_key: str) -> list[Any]:
    """Run every call in its own thread (own client, own connection) from one barrier."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [RuntimeError("not run")] * len(calls)

    def run(index: int) -> None:
        client = _client(raw_key)
        try:
            barrier.wait()
            results[index] = calls[index](client)
        except BaseException as exc:  # surfaced in the main thread below
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _append(n: int, session_id: str = "s1") -> Callable[[APIClient], Any]:
    return lambda client: client.post(
        f"/api/v1/sessions/{session_id}/messages",
        {"role": "user", "content": f"message number {n} about the weekend plans", "user_id": "u1"},
        format="json",
    )


def _assert_sessions_add_up(tenant) -> None:  # type: ignore[no-untyped-def]
    for session in ConversationSession.objects.filter(tenant=tenant):
        held = sum(SessionMessage.objects.filter(session=session).values_list("token_count", flat=True))
        assert session.token_count == held + count_tokens(session.summary)
        positions = list(SessionMessage.objects.filter(session=session).values_list("position", flat=True))
        assert len(positions) == len(set(positions))


def _assert_no_dangling_review_or_lineage(tenant) -> None:  # type: ignore[no-untyped-def]
    ids = set(Memory.objects.filter(tenant=tenant).values_list("pk", flat=True))
    assert (
        set(ClusterMember.objects.filter(cluster__tenant=tenant).values_list("memory_id", flat=True)) <= ids
    )
    assert (
        set(MemoryChangeSource.objects.filter(change__tenant=tenant).values_list("memory_id", flat=True))
        <= ids
    )


@pytest.mark.parametrize(
    "delete",
    [
        lambda client: client.delete("/api/v1/sessions/s1"),
        lambda client: client.delete("/api/v1/users/u1/memories?short_term=true"),
    ],
    ids=["session_delete", "user_erase"],
)
def test_eight_appends_racing_an_erasure_never_fail_and_leave_consistent_sessions(delete) -> None:  # type: ignore[no-untyped-def]
    tenant = TenantFactory()
    raw_key = api_key_issue(tenant=tenant, name="race").raw_key
    for n in range(3):
        assert _append(100 + n)(_client(raw_key)).status_code == 201
    connection.close()
    responses = _race([*[_append(n) for n in range(8)], delete], raw_key)
    appends, erase = responses[:8], responses[8]
    assert all(r.status_code == 201 for r in appends), [r.json() for r in appends]
    assert erase.status_code in (200, 204), erase.content
    # The erasure removed the session as it was when it ran: the three old messages are gone, and every
    # message left came after it (a new session under the same id).
    contents = list(SessionMessage.objects.filter(session__tenant=tenant).values_list("content", flat=True))
    assert not any("number 10" in c for c in contents)
    _assert_sessions_add_up(tenant)


def _store(text: str, user_id: str = "u1") -> Callable[[APIClient], Any]:
    return lambda client: client.post("/api/v1/memories", {"text": text, "user_id": user_id}, format="json")


def test_five_stores_racing_a_user_erase_never_fail_and_leave_no_dangling_rows() -> None:
    tenant = TenantFactory()
    raw_key = api_key_issue(tenant=tenant, name="race").raw_key
    client = _client(raw_key)
    for text in ("User's dog is called Rex", "User has a dog named Rex", "User likes hiking in the Alps"):
        assert (
            client.post("/api/v1/memories", {"text": text, "user_id": "u1"}, format="json").status_code == 201
        )
    connection.close()
    stores = [
        _store("User's dog Rex is a beagle"),
        _store("The user's dog is named Rex"),
        _store("User enjoys hiking in the Alps"),
        _store("User likes hiking in the Swiss Alps"),
        _store("User's dog is called Rex and is three"),
    ]
    erase = lambda client: client.delete("/api/v1/users/u1/memories?episodic=true&semantic=true")  # noqa: E731
    responses = _race([*stores, erase], raw_key)
    for response in responses[:5]:
        assert response.status_code in (200, 201), response.content
    assert responses[5].status_code in (200, 204), responses[5].content
    _assert_no_dangling_review_or_lineage(tenant)
    # Every memory left was stored after the erase: it is one of the racing stores' own rows.
    stored = {r.json()["memory_id"] for r in responses[:5]}
    assert set(Memory.objects.filter(tenant=tenant).values_list("pk", flat=True)) <= stored | set(
        Memory.objects.filter(tenant=tenant, superseded_by__in=stored).values_list("pk", flat=True)
    )


def test_a_store_racing_the_delete_of_its_candidate_is_never_409() -> None:
    tenant = TenantFactory()
    raw_key = api_key_issue(tenant=tenant, name="race").raw_key
    for round_ in range(3):
        client = _client(raw_key)
        first = client.post(
            "/api/v1/memories",
            {"text": f"User's bike is red, round {round_}", "user_id": "u1"},
            format="json",
        )
        candidate = first.json()["memory_id"]
        connection.close()
        store = _store(f"The user's bike is red, round {round_}")
        delete = lambda c, pk=candidate: c.delete(f"/api/v1/memories/{pk}")  # noqa: E731
        stored, deleted = _race([store, delete], raw_key)
        assert stored.status_code in (200, 201), stored.content
        assert deleted.status_code in (200, 204), deleted.content
        _assert_no_dangling_review_or_lineage(tenant)


class _GoneMeanwhileJudge:
    """Calls every candidate a duplicate (or an update), but first has another connection remove the
    candidate without the scope lock, as a writer outside the store path could."""

    name = "offline"

    def __init__(self, relation: str, remove: Callable[[int], None]) -> None:
        self.relation = relation
        self.remove = remove

    def judge(self, new: JudgeItem, candidates: list[JudgeItem]) -> list[Judgement]:
        for candidate in candidates:
            assert candidate.memory_id is not None
            worker = threading.Thread(target=self._remove, args=(candidate.memory_id,))
            worker.start()
            worker.join(timeout=30)
        return [Judgement(self.relation, 0.999, judge="offline") for _ in candidates]

    def _remove(self, memory_id: int) -> None:
        try:
            self.remove(memory_id)
        finally:
            connection.close()


def _soft_delete(memory_id: int) -> None:
    Memory.objects.filter(pk=memory_id).update(status=MemoryStatus.DELETED)


def _hard_delete(memory_id: int) -> None:
    Memory.objects.filter(pk=memory_id).update(superseded_by=None)
    Memory.objects.filter(pk=memory_id).delete()


NEW_TEXT = "The user's car is a blue Volvo"


@pytest.mark.parametrize("relation", ["duplicate", "update", "related"])
@pytest.mark.parametrize("remove", [_soft_delete, _hard_delete], ids=["deleted", "purged"])
def test_a_store_whose_candidate_is_removed_meanwhile_falls_back_to_created(relation, remove) -> None:  # type: ignore[no-untyped-def]
    tenant = TenantFactory()
    base = unit_vector(7)
    [old] = memory_store(
        tenant=tenant, items=[MemoryInput(text="User's car is a blue Volvo", user_id="u1", embedding=base)]
    )
    started = time.monotonic()
    [out] = memory_store(
        tenant=tenant,
        items=[
            MemoryInput(
                text="The user's car is a blue Volvo", user_id="u1", embedding=at_distance(base, 0.05, 8)
            )
        ],
        judge=_GoneMeanwhileJudge(relation, remove),  # type: ignore[arg-type]
    )
    assert time.monotonic() - started < 30
    assert out.outcome == "created"
    new = Memory.objects.get(pk=out.memory_id)
    assert new.status == MemoryStatus.ACTIVE and new.text == NEW_TEXT
    assert not Memory.objects.filter(pk=old.memory_id, status=MemoryStatus.ACTIVE).exists()
    _assert_no_dangling_review_or_lineage(tenant)
