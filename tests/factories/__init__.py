"""factory_boy factories for the models tests touch most."""

from __future__ import annotations

import factory
import numpy as np

from memory_app.models import ConversationSession, Memory, Procedure, Tenant
from memory_app.text import normalized_hash, pattern_hash


def unit_vector(seed: int, dim: int = 384) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant

    name = factory.Sequence(lambda n: f"Tenant {n}")
    slug = factory.Sequence(lambda n: f"tenant-{n}")


class MemoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Memory

    tenant = factory.SubFactory(TenantFactory)
    kind = "episodic"
    user_id = "user-1"
    namespace = "default"
    text = factory.Sequence(lambda n: f"Memory number {n} about something")
    text_hash = factory.LazyAttribute(lambda o: normalized_hash(o.text))
    embedding = factory.Sequence(lambda n: unit_vector(n))
    embedding_model = "all-MiniLM-L6-v2"


class ProcedureFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Procedure

    tenant = factory.SubFactory(TenantFactory)
    user_id = "user-1"
    pattern = factory.Sequence(lambda n: f"pattern {n}")
    pattern_hash = factory.LazyAttribute(lambda o: pattern_hash(o.pattern))
    tool_sequence = factory.LazyFunction(lambda: ["search", "summarize"])


class SessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ConversationSession

    tenant = factory.SubFactory(TenantFactory)
    session_id = factory.Sequence(lambda n: f"session-{n}")
    user_id = "user-1"
