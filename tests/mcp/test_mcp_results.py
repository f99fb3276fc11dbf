"""What an agent reads of a write through MCP: the compact outcome keeps the warnings."""

from __future__ import annotations

from memory_app.mcp.results import compact


def test_a_store_outcome_keeps_the_judge_fallback_warning_for_the_agent():
    outcome = {
        "outcome": "queued_for_review",
        "memory_id": 7,
        "related_ids": [3],
        "warnings": ["judge_fallback: no LLM is configured; the offline judge decided"],
        "memory": {"id": 7, "text": "User likes tea", "kind": "episodic", "created_at": "2026-11-26"},
    }
    assert compact([outcome])[0]["warnings"] == outcome["warnings"]
