# ruff: noqa: RUF001  (Greek and Cyrillic letters in the facts are meant)
"""The offline judge on what real memory streams hand it: different facts about one person, facts in
other scripts, and pairs that differ in one name or number. Real local model, committed calibration."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_app.embeddings import embed_texts
from memory_app.judge import JudgeItem, get_judge
from memory_app.judge.calibration.params import clear_calibration_cache
from memory_app.judge.policy import decide
from memory_app.models import Memory
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store
from tests.factories import TenantFactory


@pytest.fixture(scope="module")
def judge():
    clear_calibration_cache()
    yield get_judge("offline")
    clear_calibration_cache()


def _decide(judge, old: str, new: str):
    old_vector, new_vector = embed_texts([old, new], tenant=None)
    judgements = judge.judge(JudgeItem(new, new_vector), [JudgeItem(old, old_vector)])
    return decide(judgements, review_below=judge.calibration.review_below)


# Pairs a fitted model merged on a LoCoMo observation stream with confidence 0.85-0.998.
DIFFERENT_FACTS_ABOUT_ONE_PERSON = [
    (
        "Evan got a symbol that represents strength and resilience",
        "Evan struggles to find his keys frequently",
    ),
    (
        "When Maria was younger, her family had money problems",
        "Maria shares a special beach memory from a vacation in Florida",
    ),
    (
        "Evan got into watercolor painting because a friend introduced him to it",
        "Evan mentions getting married to his work friends after a minor accident",
    ),
    ("Fred now lives in Hamburg", "Fred plays the guitar"),
    ("Gina likes to sit by the window when flying", "Gina is afraid of heights"),
]


@pytest.mark.parametrize(("old", "new"), DIFFERENT_FACTS_ABOUT_ONE_PERSON)
def test_a_different_fact_about_the_same_person_is_stored_as_distinct(judge, old, new):
    decision = _decide(judge, old, new)
    assert decision.action == "store", decision.judgement


def test_a_restatement_of_the_same_fact_is_still_merged_or_reviewed(judge):
    decision = _decide(judge, "Tom is allergic to peanuts", "Tom has a peanut allergy")
    assert decision.action in ("merge", "review")
    assert decision.judgement.relation == "duplicate"


# Four distinct facts about one person in each script (lives in a city, keeps a cat, likes coffee,
# runs every morning).
FACTS_BY_SCRIPT = {
    "Korean": [
        "민수는 서울에 산다",
        "민수는 고양이를 키운다",
        "민수는 커피를 좋아한다",
        "민수는 매일 아침 달리기를 한다",
    ],
    "Hebrew": ["דנה גרה בתל אביב", "דנה מגדלת חתול", "דנה אוהבת קפה", "דנה רצה כל בוקר"],
    "Thai": ["สมชายอาศัยอยู่ที่กรุงเทพ", "สมชายเลี้ยงแมว", "สมชายชอบกาแฟ", "สมชายวิ่งทุกเช้า"],
    "Amharic": ["አበበ በአዲስ አበባ ይኖራል", "አበበ ድመት አለው", "አበበ ቡና ይወዳል", "አበበ በየቀኑ ጠዋት ይሮጣል"],
    "Chinese": ["小明住在北京", "小明养了一只猫", "小明喜欢喝咖啡", "小明每天早上跑步"],
    "Japanese": [
        "健太は東京に住んでいる",
        "健太は猫を飼っている",
        "健太はコーヒーが好きだ",
        "健太は毎朝走っている",
    ],
    "Arabic": ["يعيش أحمد في القاهرة", "أحمد يربي قطة", "أحمد يحب القهوة", "أحمد يركض كل صباح"],
    "Cyrillic": ["Иван живёт в Москве", "У Ивана есть кошка", "Иван любит кофе", "Иван бегает каждое утро"],
    "Greek": [
        "Η Μαρία μένει στην Αθήνα",
        "Η Μαρία έχει μια γάτα",
        "Η Μαρία αγαπά τον καφέ",
        "Η Μαρία τρέχει κάθε πρωί",
    ],
    "Devanagari": [
        "राहुल दिल्ली में रहता है",
        "राहुल के पास एक बिल्ली है",
        "राहुल को कॉफी पसंद है",
        "राहुल हर सुबह दौड़ता है",
    ],
}


@pytest.mark.parametrize("script", sorted(FACTS_BY_SCRIPT))
def test_facts_in_a_script_the_judge_does_not_read_are_distinct_not_reviewed(judge, script):
    facts = FACTS_BY_SCRIPT[script]
    vectors = embed_texts(facts, tenant=None)
    items = [JudgeItem(text, vector) for text, vector in zip(facts, vectors, strict=True)]
    for index, new in enumerate(items):
        judgements = judge.judge(new, items[:index] + items[index + 1 :])
        assert all(j.relation == "distinct" for j in judgements), judgements
        assert decide(judgements, review_below=judge.calibration.review_below).action == "store"


@pytest.mark.django_db
@pytest.mark.parametrize("script", sorted(FACTS_BY_SCRIPT))
def test_four_distinct_facts_in_one_script_stay_four_active_memories(script):
    tenant = TenantFactory()
    outcomes = [
        memory_store(tenant=tenant, items=[MemoryInput(text=text, user_id="u1")])[0]
        for text in FACTS_BY_SCRIPT[script]
    ]
    assert [o.outcome for o in outcomes] == ["created"] * 4
    assert Memory.objects.filter(tenant=tenant, status="active").count() == 4


def test_a_translation_is_not_merged_with_its_english_original(judge):
    decision = _decide(judge, "Minsu lives in Seoul", "민수는 서울에 산다")
    assert decision.action == "store"


def test_a_sentence_in_another_latin_script_language_is_distinct(judge):
    decision = _decide(judge, "Er wohnt jetzt seit Jahren dort", "Er wohnt seit Jahren dort")
    assert decision.action == "store"
    reason = decision_reason(judge, "Er wohnt jetzt seit Jahren dort", "Er wohnt seit Jahren dort")
    assert "language" in reason


def decision_reason(judge, old: str, new: str) -> str:
    old_vector, new_vector = embed_texts([old, new], tenant=None)
    return judge.judge(JudgeItem(new, new_vector), [JudgeItem(old, old_vector)])[0].reason


NAMES = ["Anna", "Fred", "Priya", "Kenji", "Omar", "Lucia", "Tom", "Aiko", "Jon", "Gina"]
FRAMES = [
    "{name} lives in {city}",
    "{name} has {n} cats",
    "{name} runs {n} km every morning",
    "{name}'s daughter started school in {city}",
    "{name} works as a nurse in {city}",
    "{name} paid {n} dollars for the concert tickets",
]
CITIES = ["Hamburg", "Lisbon", "Osaka", "Nairobi", "Toronto", "Lima"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    frame=st.sampled_from(FRAMES),
    names=st.lists(st.sampled_from(NAMES), min_size=2, max_size=2, unique=True),
    numbers=st.lists(st.integers(min_value=2, max_value=500), min_size=2, max_size=2, unique=True),
    city=st.sampled_from(CITIES),
    change=st.sampled_from(["name", "number"]),
)
def test_a_pair_differing_only_in_a_name_or_a_number_is_never_merged(
    judge, frame, names, numbers, city, change
):
    old = frame.format(name=names[0], n=numbers[0], city=city)
    if change == "number" and "{n}" in frame:
        new = frame.format(name=names[0], n=numbers[1], city=city)
    else:
        new = frame.format(name=names[1], n=numbers[0], city=city)
    decision = _decide(judge, old, new)
    assert decision.action != "merge", (old, new, decision.judgement)
