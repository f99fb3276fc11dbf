"""What extraction produces: candidate long-term memories from one exchange."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExtractedMemory:
    text: str  # third person: "User prefers morning workouts"
    kind: str = "episodic"  # episodic (about the user) or semantic (impersonal)
    event_type: str = "fact"  # preference | goal | fact | event
    topics: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    confidence: float = 0.6


@dataclass(frozen=True)
class ExtractionResult:
    memories: list[ExtractedMemory]
    method: str  # "llm" | "rules"
    warnings: list[str] = field(default_factory=list)
