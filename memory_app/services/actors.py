"""Who made a change: the system, an LLM judge, or a staff user."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_app.models.lineage import ActorType


@dataclass(frozen=True)
class Actor:
    type: str = ActorType.SYSTEM
    user: Any = None  # a django.contrib.auth user when type == "user"

    @classmethod
    def system(cls) -> Actor:
        return cls(ActorType.SYSTEM)

    @classmethod
    def llm(cls) -> Actor:
        return cls(ActorType.LLM)

    @classmethod
    def staff(cls, user: Any) -> Actor:
        return cls(ActorType.USER, user)

    @property
    def user_or_none(self) -> Any:
        return self.user if self.type == ActorType.USER else None
