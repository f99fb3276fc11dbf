"""The OpenAI-compatible chat model and the OpenAI credentials the embedding provider shares."""

from __future__ import annotations

from dataclasses import dataclass

from memory_app.conf.declare import knob
from project.env import number, text

# Both the LLM's client and the remote embedding provider's.
OPENAI_KEY_SETTING = text(
    "OPENAI_API_KEY",
    "",
    "required with `EMBEDDING_PROVIDER=openai` or an LLM (the LLM judge needs none when "
    "`OPENAI_BASE_URL` points to a local server)",
)
OPENAI_URL_SETTING = text(
    "OPENAI_BASE_URL", "", "any OpenAI-compatible server", default_doc="empty (api.openai.com)"
)


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """The OpenAI-compatible chat model used by the LLM judge, extraction and session summaries."""

    model: str = knob(
        text(
            "LLM_MODEL",
            "",
            "chat model for the LLM judge, extraction and summaries",
            default_doc="empty (no LLM)",
        )
    )
    api_key: str = knob(OPENAI_KEY_SETTING)
    base_url: str = knob(OPENAI_URL_SETTING)
    timeout_seconds: float = knob(
        number("OPENAI_TIMEOUT_SECONDS", 30.0, 1.0, 600.0, "per request (LLM calls)")
    )

    @property
    def configured(self) -> bool:
        """A model and a key: the features that need an LLM are offered."""
        return bool(self.model and self.api_key)
