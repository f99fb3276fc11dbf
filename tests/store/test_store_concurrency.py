"""Two stores of the same fact in one scope at the same moment end as one memory (two real connections)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from memory_app.judge.base import JudgeItem, Judgement
from memory_app.models import Memory
from memory_app.overrides import StoreOverrides
from memory_app.services.store.types import MemoryInput, StoreOutcome
from memory_app.services.store.write import memory_store
from tests.factories import TenantFactory, unit_vector
from tests.factories.store import at_distance

pytestmark = pytest.mark.django_db(transaction=True)


class SlowDogJudge:
    """Calls a memory about Rex a duplicate of another about Rex, anything else distinct, and takes its
    time, so that without the scope lock both stores would judge before either had written."""

    name = "offline"

    def judge(self, new: JudgeItem, candidates: list[JudgeItem]) -> list[Judgement]:
        time.sleep(0.3)
        return [
            Judgement("duplicate", 0.999)
            if "Rex" in c.text and "Rex" in new.text
            else Judgement("distinct", 0.99)
            for c in candidates
        ]


def _race(tenant, items: list[MemoryInput], **kw) -> list[StoreOutcome]:  # type: ignore[no-untyped-def]
    barrier = threading.Barrier(len(items))
    results: list[StoreOutcome | BaseException] = [RuntimeError("not run")] * len(items)

    def run(index: int) -> None:
        try:
            barrier.wait()
            [results[index]] = memory_store(tenant=tenant, items=[items[index]], **kw)
        except BaseException as exc:  # surfaced in the main thread below
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(items))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


def test_two_identical_concurrent_stores_end_as_one_memory():
    tenant = TenantFactory()
    vector = unit_vector(1)
    item = MemoryInput(text="User's dog is called Rex", user_id="u1", embedding=vector)
    outcomes = _race(tenant, [item, item])
    assert sorted(o.outcome for o in outcomes) == ["created", "duplicate_of"]
    assert len({o.memory_id for o in outcomes}) == 1
    assert Memory.objects.filter(tenant=tenant, status="active").count() == 1


def test_two_concurrent_paraphrases_end_as_one_merged_memory():
    tenant = TenantFactory()
    base = unit_vector(2)
    memory_store(
        tenant=tenant,
        items=[MemoryInput(text="User's cat is Tom", user_id="u1", embedding=at_distance(base, 0.3, 3))],
    )
    items = [
        MemoryInput(text="User's dog is called Rex", user_id="u1", embedding=base),
        MemoryInput(text="The user has a dog named Rex", user_id="u1", embedding=at_distance(base, 0.1, 4)),
    ]
    outcomes = _race(tenant, items, options=StoreOverrides(candidate_radius=0.6), judge=SlowDogJudge())
    assert sorted(o.outcome for o in outcomes) == ["created", "merged_into"]
    active = list(Memory.objects.filter(tenant=tenant, status="active").values_list("text", flat=True))
    assert len(active) == 2 and "User's cat is Tom" in active
