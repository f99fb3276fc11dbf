"""The LLM judge against a stubbed OpenAI-compatible HTTP API; every failure falls back to offline."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
import respx

from memory_app.judge import JudgeItem, get_judge
from memory_app.judge.llm import LLMJudge

URL = "http://llm.test/v1/chat/completions"


@pytest.fixture
def llm_settings(settings):
    settings.OPENAI_BASE_URL = "http://llm.test/v1"
    settings.OPENAI_API_KEY = "sk-test"
    settings.LLM_MODEL = "test-model"
    settings.DEDUP_LLM_TIMEOUT_SECONDS = 2.0
    return settings


@pytest.fixture
def openai_api():
    """The stubbed OpenAI-compatible HTTP API (respx; conftest lets it see the SDK's httpx2 transport)."""
    with respx.mock(assert_all_called=False) as router:
        yield router


def _completion(content: str) -> dict:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
        ],
    }


BAD_ENTRY = {"index": 0, "relation": "same", "confidence": 2, "merged_text": None}
NEW = JudgeItem(text="User's target BMI is 24")
CANDIDATES = [JudgeItem(text="User's target BMI is 23"), JudgeItem(text="User likes jazz")]


def test_llm_judges_all_candidates_in_one_call_with_a_json_schema(llm_settings, openai_api):
    answer = {
        "judgements": [
            {"index": 1, "relation": "distinct", "confidence": 0.99, "merged_text": None},
            {"index": 0, "relation": "update", "confidence": 0.93, "merged_text": None},
        ]
    }
    route = openai_api.post(URL).mock(return_value=httpx.Response(200, json=_completion(json.dumps(answer))))
    judgements = get_judge("llm").judge(NEW, CANDIDATES)
    assert route.call_count == 1
    body = json.loads(route.calls[0].request.content)
    assert body["model"] == "test-model"
    assert body["response_format"]["type"] == "json_schema"
    assert "[0] User's target BMI is 23" in body["messages"][1]["content"]
    assert [(j.relation, j.confidence, j.judge) for j in judgements] == [
        ("update", 0.93, "llm"),
        ("distinct", 0.99, "llm"),
    ]


def test_llm_merged_text_is_kept_for_a_duplicate(llm_settings, openai_api):
    answer = {
        "judgements": [
            {"index": 0, "relation": "duplicate", "confidence": 0.9, "merged_text": " User's BMI goal is 23 "}
        ]
    }
    openai_api.post(URL).mock(return_value=httpx.Response(200, json=_completion(json.dumps(answer))))
    (judgement,) = LLMJudge().judge(JudgeItem(text="User aims for a BMI of 23"), CANDIDATES[:1])
    assert judgement.merged_text == "User's BMI goal is 23"


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(500, json={"error": {"message": "boom"}}),
        httpx.Response(200, json=_completion("not json at all")),
        httpx.Response(200, json=_completion(json.dumps({"judgements": []}))),
        httpx.Response(200, json=_completion(json.dumps({"judgements": [BAD_ENTRY, BAD_ENTRY]}))),
    ],
    ids=["http-500", "bad-json", "wrong-count", "bad-values"],
)
def test_any_llm_failure_falls_back_to_the_offline_judge(llm_settings, openai_api, response, caplog):
    openai_api.post(URL).mock(return_value=response)
    with caplog.at_level(logging.WARNING, logger="memory_app.judge.llm"):
        judgements = LLMJudge().judge(NEW, CANDIDATES)
    assert [j.judge for j in judgements] == ["offline", "offline"]
    assert judgements[0].relation == "update"
    assert "LLM judge failed" in caplog.text


def test_a_timeout_falls_back_to_the_offline_judge(llm_settings, openai_api, caplog):
    openai_api.post(URL).mock(side_effect=httpx.ReadTimeout)
    with caplog.at_level(logging.WARNING, logger="memory_app.judge.llm"):
        judgements = LLMJudge().judge(NEW, CANDIDATES)
    assert [j.judge for j in judgements] == ["offline", "offline"]
    assert "ReadTimeout" in caplog.text or "APITimeoutError" in caplog.text


def test_without_a_configured_model_the_offline_judge_answers(settings, caplog):
    settings.LLM_MODEL = ""
    with caplog.at_level(logging.WARNING, logger="memory_app.judge.llm"):
        judgements = LLMJudge().judge(NEW, CANDIDATES)
    assert judgements[0].judge == "offline"
    assert "unset" in caplog.text


def test_an_unknown_judge_name_is_refused():
    with pytest.raises(ValueError, match="unknown judge"):
        get_judge("oracle")
