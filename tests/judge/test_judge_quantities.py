"""Amounts read the way a person reads them: one notation for the vetoes, never one value for two."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_app.judge.calibration.params import load_calibration
from memory_app.judge.merge import lost_facts
from memory_app.judge.offline import judge_pair, vetoed
from memory_app.judge.policy import decide
from memory_app.judge.signals import quantities as q
from memory_app.judge.signals.features import pair_facts

# Ways to write one amount of each unit: symbol, code, name, abbreviation, attached or spaced.
NOTATIONS = {
    "USD": ("${n}", "$ {n}", "{n} dollars", "{n} USD", "USD {n}", "{n} US dollars"),
    "EUR": ("€{n}", "{n}€", "{n} euros", "{n} EUR", "EUR {n}"),
    "GBP": ("£{n}", "{n} GBP", "{n} British pounds"),
    "kilometer": ("{n} km", "{n}km", "{n} kilometres", "{n} kilometers", "{n}-km"),
    "mile": ("{n} miles", "{n} mi"),
    "hour": ("{n} hours", "{n}h", "{n} hrs", "{n} hr", "~{n}h"),
    "minute": ("{n} minutes", "{n} min", "{n} mins"),
    "degree_Celsius": ("{n}°C", "{n} °C", "{n} degrees Celsius", "{n}℃"),
    "degree_Fahrenheit": ("{n}°F", "{n} degrees Fahrenheit"),
    "kilogram": ("{n} kg", "{n} kilograms", "{n}kg"),
    "percent": ("{n}%", "{n} percent", "{n} %"),
}


def _written(value: int, notation: str) -> str:
    digits = f"{value:,}" if value >= 1000 and "," not in notation else str(value)
    return notation.format(n=digits)


def _numbers(text: str) -> frozenset[float]:
    from memory_app.judge.signals import text_norm as tn

    return tn.numbers(q.canonical(text))


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("User's monthly rent is $1,800", "They pay eighteen hundred dollars in rent each month"),
        ("Water boils at 100°C at sea level", "water boils at 100 degrees Celsius"),
        ("User runs 5 km on Sundays", "User runs five kilometres on Sundays"),
        ("User sleeps about 7 hours a night", "They typically get ~7h of sleep nightly"),
        ("The flat costs €250,000", "The flat costs 250000 euros"),
        ("It was -3°C this morning", "It was \u22123 °C this morning"),
        ("The grant is $5 million", "The grant is 5,000,000 USD"),
        ("A 14-day trial", "a 14 day trial"),
        ("twenty-five euros", "25 EUR"),
    ],
)
def test_the_same_amount_in_another_notation_reads_the_same(one, other):
    assert q.quantities(one) == q.quantities(other)
    assert not q.differ(one, other, _numbers(one), _numbers(other))


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("User's monthly rent is $1,800", "User's monthly rent is $1,900"),
        ("User runs 5 km on Sundays", "User runs 5 miles on Sundays"),
        ("It was -3°C this morning", "It was 3°C this morning"),
        ("It was \u20133°C this morning", "It was 3°C this morning"),
        ("The ticket costs 100 USD", "The ticket costs 100 EUR"),
        ("The ticket costs $100", "The ticket costs 100"),
        ("Normal body temperature is 37°C", "Normal body temperature is 37°F"),
        ("User saves 20% of their salary", "User saves 20 of their salary"),
        ("User lifts 5 pounds", "User lifts £5"),
        ("User lifts 5 lbs", "User lifts 5 kg"),
    ],
)
def test_any_different_value_sign_unit_or_currency_is_still_vetoed(one, other):
    assert vetoed(pair_facts(one, other, 0.05))
    assert vetoed(pair_facts(other, one, 0.05))


def test_a_unit_left_unsaid_is_not_taken_for_another_unit():
    # "Their cat is twelve" leaves "years" unsaid; that is not a different amount.
    old, new = "User's cat is 12 years old", "Their cat is twelve"
    assert not q.differ(old, new, _numbers(old), _numbers(new))
    coffee = ("User drinks two cups of coffee every morning", "Each morning they have 2 coffees")
    assert not pair_facts(*coffee, 0.1).amounts_differ


def test_ordinary_words_after_a_number_are_not_units():
    plain = (
        "User has 2 cats",
        "Pickup is at 3pm",
        "They ran a 5k",
        "Maria ran a 5K charity run",
        "It was 100 F outside",
        "the 2 are friends",
        "1 in 4 people",
    )
    for text in plain:
        assert q.quantities(text) == frozenset(), text
        assert q.canonical(text) == text


def test_a_word_that_names_a_currency_and_a_weight_is_neither():
    assert q.quantities("5 pounds") == frozenset()
    assert q.quantities("£5") == {q.Quantity(5.0, "GBP")}
    assert q.quantities("5 lbs") == {q.Quantity(5.0, "pound")}


def test_a_merge_keeps_an_amount_in_any_notation_and_never_drops_one():
    rent = "They pay eighteen hundred dollars in rent each month"
    assert lost_facts(rent, "User's monthly rent is $1,800") == []
    assert lost_facts("Water boils at 100°C", "water boils at 100 degrees Celsius") == []
    assert lost_facts("The ticket costs 100 EUR", "The ticket costs $100")
    assert lost_facts("User runs 5 miles", "User runs 5 km")


def test_a_restated_amount_merges_end_to_end_and_a_changed_one_never_does():
    cal = load_calibration()
    same = judge_pair("User's monthly rent is $1,800", "User's monthly rent is 1800 dollars", 0.08, cal)
    assert decide([same], review_below=cal.review_below).action == "merge"
    changed = judge_pair("User's monthly rent is $1,800", "User's monthly rent is 1900 dollars", 0.08, cal)
    assert decide([changed], review_below=cal.review_below).action != "merge"


@settings(max_examples=200, deadline=None)
@given(
    unit=st.sampled_from(sorted(NOTATIONS)),
    value=st.integers(min_value=1, max_value=2_000_000),
    data=st.data(),
)
def test_any_two_notations_of_one_amount_are_not_vetoed(unit, value, data):
    one = _written(value, data.draw(st.sampled_from(NOTATIONS[unit])))
    other = _written(value, data.draw(st.sampled_from(NOTATIONS[unit])))
    old, new = f"The budget line is {one} for now", f"The budget line is {other} for now"
    assert q.quantities(old) == q.quantities(new) == {q.Quantity(float(value), unit)}
    assert not vetoed(pair_facts(old, new, 0.05))


@settings(max_examples=300, deadline=None)
@given(
    units=st.tuples(st.sampled_from(sorted(NOTATIONS)), st.sampled_from(sorted(NOTATIONS))),
    values=st.tuples(st.integers(1, 2_000_000), st.integers(1, 2_000_000)),
    signs=st.tuples(st.booleans(), st.booleans()),
    data=st.data(),
)
def test_amounts_that_differ_in_value_sign_unit_or_currency_are_always_vetoed(units, values, signs, data):
    if units[0] == units[1] and values[0] == values[1] and signs[0] == signs[1]:
        return
    texts = []
    for unit, value, negative in zip(units, values, signs, strict=True):
        written = _written(value, data.draw(st.sampled_from(NOTATIONS[unit])))
        texts.append(f"The budget line is {'-' if negative else ''}{written} for now")
    assert vetoed(pair_facts(texts[0], texts[1], 0.05)), texts
    assert vetoed(pair_facts(texts[1], texts[0], 0.05)), texts
