"""The LLM judge against OpenAI-compatible responses saved under tests/data/llm_judge (the bodies a
hosted model and two local servers send), stubbed at the HTTP boundary with respx."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
import respx

from memory_app.judge import JudgeItem
from memory_app.judge.llm import LLMJudge
from memory_app.models import Memory, MemoryChange
from memory_app.overrides import StoreOverrides
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store
from tests.factories import MemoryFactory, TenantFactory, unit_vector
from tests.factories.store import at_distance
from tests.factories.stream import FACTS, locomo_file, stream_report

DATA = Path(__file__).parents[1] / "data" / "llm_judge"
URL = "http://llm.test/v1/chat/completions"


def recorded(name: str, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json=json.loads((DATA / name).read_text()))


@pytest.fixture
def llm_settings(settings):
    settings.OPENAI_BASE_URL = "http://llm.test/v1"
    settings.OPENAI_API_KEY = ""  # a local server: no key
    settings.LLM_MODEL = "test-model"
    settings.DEDUP_LLM_TIMEOUT_SECONDS = 2.0
    return settings


@pytest.fixture
def openai_api():
    with respx.mock(assert_all_called=False) as router:
        yield router


def test_one_call_judges_every_candidate(llm_settings, openai_api):
    route = openai_api.post(URL).mock(return_value=recorded("update_and_distinct.json"))
    judge = LLMJudge()
    judgements = judge.judge(
        JudgeItem(text="User's target BMI is 24"),
        [JudgeItem(text="User's target BMI is 23"), JudgeItem(text="User likes jazz")],
    )
    assert route.call_count == 1
    assert route.calls[0].request.headers["authorization"] == "Bearer unused"
    assert [(j.relation, j.confidence, j.judge) for j in judgements] == [
        ("update", 0.93, "llm"),
        ("distinct", 0.99, "llm"),
    ]
    assert (judge.calls, judge.fallbacks) == (1, 0)


def test_a_merged_text_that_keeps_every_number_and_name_is_used(llm_settings, openai_api):
    openai_api.post(URL).mock(return_value=recorded("duplicate_with_merged_text.json"))
    [judgement] = LLMJudge().judge(
        JudgeItem(text="Maya cycles to the office year-round"),
        [JudgeItem(text="Oslo-based architect Maya, aged 34, bikes to work in every season")],
    )
    assert (judgement.relation, judgement.confidence) == ("duplicate", 0.91)
    assert judgement.merged_text == "Maya, a 34-year-old architect in Oslo, bikes to work in every season."


def test_a_merged_text_that_drops_a_name_makes_the_pair_distinct(llm_settings, openai_api):
    openai_api.post(URL).mock(return_value=recorded("merged_text_drops_a_name.json"))
    [judgement] = LLMJudge().judge(
        JudgeItem(text="Gina lost her job at Door Dash"), [JudgeItem(text="Gina lost her job in January")]
    )
    assert (judgement.relation, judgement.merged_text, judgement.judge) == ("distinct", None, "llm")
    assert "January" in judgement.reason


def test_a_fenced_answer_from_a_local_model_is_read(llm_settings, openai_api):
    openai_api.post(URL).mock(return_value=recorded("fenced_local_model.json"))
    [judgement] = LLMJudge().judge(
        JudgeItem(text="User has a dog called Rex, a black labrador"), [JudgeItem(text="User has a dog")]
    )
    assert (judgement.relation, judgement.merged_text) == (
        "refine",
        "User has a dog called Rex, a black labrador",
    )


def test_a_server_without_json_schema_is_asked_for_a_json_object(llm_settings, openai_api):
    route = openai_api.post(URL).mock(
        side_effect=[recorded("json_schema_not_supported.json", 400), recorded("json_object_answer.json")]
    )
    [judgement] = LLMJudge().judge(
        JudgeItem(text="Bob plays the cello"), [JudgeItem(text="Bob lives in Lisbon")]
    )
    assert [json.loads(c.request.content)["response_format"]["type"] for c in route.calls] == [
        "json_schema",
        "json_object",
    ]
    assert (judgement.relation, judgement.judge) == ("distinct", "llm")


def test_an_answer_in_another_schema_falls_back_to_the_offline_judge(llm_settings, openai_api):
    openai_api.post(URL).mock(return_value=recorded("wrong_field_names.json"))
    judge = LLMJudge()
    [judgement] = judge.judge(JudgeItem(text="User likes tea"), [JudgeItem(text="User enjoys tea")])
    assert judgement.judge == "offline"
    assert (judge.calls, judge.fallbacks) == (1, 1)


@pytest.mark.django_db
def test_the_store_path_merges_with_the_llms_text_and_records_the_llm_as_actor(llm_settings, openai_api):
    openai_api.post(URL).mock(return_value=recorded("duplicate_with_merged_text.json"))
    tenant = TenantFactory()
    base = unit_vector(40)
    old = MemoryFactory(
        tenant=tenant,
        user_id="u1",
        text="Oslo-based architect Maya, aged 34, bikes to work in every season",
        embedding=at_distance(base, 0.1, 41),
    )
    [out] = memory_store(
        tenant=tenant,
        items=[MemoryInput(text="Maya cycles to the office year-round", user_id="u1", embedding=base)],
        options=StoreOverrides(judge="llm", candidate_radius=0.5),
    )
    assert out.outcome == "merged_into" and out.related_ids == (old.pk,)
    assert Memory.objects.get(pk=out.memory_id).text.startswith("Maya, a 34-year-old architect in Oslo")
    assert MemoryChange.objects.get(pk=out.change_id).actor_type == "llm"


def _all_distinct(request: httpx.Request) -> httpx.Response:
    """An OpenAI-compatible server that calls every candidate distinct (as many entries as asked)."""
    prompt = json.loads(request.content)["messages"][1]["content"]
    count = len(re.findall(r"^\[\d+\] ", prompt, flags=re.MULTILINE))
    body = json.loads((DATA / "update_and_distinct.json").read_text())
    answer = [
        {"index": i, "relation": "distinct", "confidence": 0.97, "merged_text": None} for i in range(count)
    ]
    body["choices"][0]["message"]["content"] = json.dumps({"judgements": answer})
    return httpx.Response(200, json=body)


@pytest.mark.django_db
def test_the_stream_evaluation_runs_with_the_llm_judge(llm_settings, openai_api, tmp_path):
    openai_api.post(URL).mock(side_effect=_all_distinct)
    report = stream_report(locomo_file(tmp_path / "locomo.json"), "--conversations", "0-1", "--judge", "llm")
    assert report["judge"] == "llm" and report["llm_fallbacks"] == 0 and report["llm_calls"] > 0
    # Every new fact is distinct, so only the two word-for-word repeats are not created.
    assert report["outcomes"] == {
        "created": FACTS - 2,
        "duplicate_of": 2,
        "merged_into": 0,
        "superseded": 0,
        "queued_for_review": 0,
    }
