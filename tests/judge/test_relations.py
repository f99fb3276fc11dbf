"""The relation rules read as a person would: another item, occasion or subject, a change of state,
and the hard differences a reviewer must see (pure functions, no database)."""

from __future__ import annotations

import pytest

from memory_app.judge.signals.relations import (
    antonym_and_swap,
    difference,
    exchanged_phrase,
    item_codes,
    moved_phrase,
    other_item,
    other_occasion,
    other_subject,
    predicate_roles,
    state_change,
    time_anchors,
)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Flight LH400 leaves Frankfurt at 10:05.", "Flight LH402 leaves Frankfurt at 13:20."),
        ("Order #1042 was shipped on May 3.", "Order #1043 was shipped on May 5."),
        ("Policy 6: refunds need a receipt.", "Policy 7: refunds need a receipt."),
        ("Invoice 2201 is due on Friday.", "Invoice 2202 is due on Friday."),
        ("Room 12 is booked for the workshop.", "Room 14 is booked for the retreat."),
        ("Version 2.1 added dark mode.", "Version 2.2 added offline sync."),
    ],
)
def test_a_number_that_names_an_item_makes_another_item(old: str, new: str) -> None:
    assert other_item(old, new).startswith("names another item")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("BMI goal 23", "BMI goal 24"),
        ("I ran 5 km on Monday.", "I ran 10 km on Monday."),
        ("My son is 7 years old.", "My son is 8 years old."),
        ("My rent is $1,200 a month.", "My rent is $1,350 a month."),
    ],
)
def test_a_number_that_measures_is_no_item_name(old: str, new: str) -> None:
    assert other_item(old, new) == ""


def test_item_codes_keep_the_head_noun_of_each_code() -> None:
    assert sorted(item_codes("Gate B12 opens at noon and bus 42 is late.").values()) == ["42", "B12"]


def test_two_past_happenings_at_different_times_are_two_occasions() -> None:
    assert other_occasion("I ran 5 km on Monday.", "I ran 10 km on Wednesday.")
    assert other_occasion("We visited Rome in 2019.", "We visited Rome again in 2023.")
    assert other_occasion("Tina swam 20 laps yesterday.", "Tina swam 30 laps last week.")


def test_a_schedule_or_a_stated_change_is_no_other_occasion() -> None:
    assert other_occasion("The class is on Tuesdays.", "The class is on Thursdays.") == ""
    assert other_occasion("Tom's birthday is on March 3.", "Tom's birthday is on March 5.") == ""
    assert other_occasion("The launch was on May 3.", "The launch was moved to May 10.") == ""
    assert time_anchors("I swim every Monday.") == frozenset()


def test_the_same_statement_about_someone_else_is_another_subject() -> None:
    assert other_subject("Alice is allergic to peanuts.", "Bob is allergic to peanuts.")
    assert other_subject("The kitchen light is broken.", "The bathroom light is broken.")
    assert other_subject("My son Leo is 7 years old.", "My daughter Mia is 4 years old.")


def test_a_reworded_verb_or_a_pronoun_is_no_other_subject() -> None:
    assert other_subject("I like tea.", "I love tea.") == ""
    assert other_subject("User likes tea.", "The user likes tea.") == ""
    assert other_subject("Caroline went hiking.", "She went hiking.") == ""


@pytest.mark.parametrize(
    ("old", "new", "sure"),
    [
        ("I live in Berlin.", "I moved to Munich last month.", True),
        ("I work at Google.", "I left Google and now work at Apple.", True),
        ("Anna is single.", "Anna got married in June.", True),
        ("The team meeting is on Tuesdays at 3 pm.", "The team meeting moved to Thursdays at 3 pm.", True),
        ("Omar lives in Manchester", "Omar has relocated to Glasgow", True),
        ("My favorite music genre is jazz", "My favorite music genre is now lo-fi", False),
    ],
)
def test_a_change_word_with_a_shared_attribute_is_a_change_of_state(old: str, new: str, sure: bool) -> None:
    change = state_change(old, new)
    assert change is not None and change.sure is sure


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Melanie likes painting.", "Melanie started a new pottery class."),
        ("I live in Berlin.", "Sam moved to Munich."),
        ("I live in Berlin.", "I live in Berlin now and love it there with my dog and two cats."),
    ],
)
def test_a_new_activity_another_person_or_no_change_word_is_no_change_of_state(old: str, new: str) -> None:
    change = state_change(old, new)
    assert change is None or not change.sure


def test_an_antonym_exchanged_with_another_word_is_another_fact() -> None:
    assert antonym_and_swap("I take vitamin D every morning.", "I take magnesium every evening.")
    assert antonym_and_swap("I take vitamin D every morning.", "I take vitamin D every evening.") == ""


def test_a_phrase_moved_to_the_front_is_the_same_sentence() -> None:
    assert moved_phrase("I prefer aisle seats on flights.", "On flights I prefer an aisle seat.")
    assert not moved_phrase("User prefers tabs over spaces", "User prefers spaces over tabs")


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("I ❤️ cats", "I 😡 cats", "signs or symbols"),
        ("-5", "5", "signs or symbols"),
        ("The meeting is at 3", "The meeting is at 4", "numbers"),
        ("Alice likes tea", "Bob likes tea", "names"),
        ("I like tea", "I do not like tea", "negation"),
    ],
)
def test_a_hard_difference_is_named(old: str, new: str, kind: str) -> None:
    assert difference(old, new).startswith(kind)


def test_paraphrases_have_no_hard_difference() -> None:
    assert difference("The user is vegetarian.", "The user follows a vegetarian diet.") == ""


def test_a_capitalised_series_name_is_an_item_even_before_a_verb() -> None:
    assert other_item("Bus 42 goes to the airport.", "Bus 45 goes to the stadium.")
    assert other_item("I bake 3 cakes on Sundays.", "I bake 4 cakes on Sundays.") == ""
    assert other_item("Route 66 is 10 km long.", "Route 66 is 12 km long.") == ""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I keep my passport in the desk drawer.", "I keep my spare keys in the desk drawer."),
        ("Omar drinks green tea every afternoon.", "Omar drinks black coffee every morning."),
        ("User is afraid of flying", "User is afraid of heights"),
    ],
)
def test_a_phrase_put_in_the_place_of_another_is_an_exchange(old: str, new: str) -> None:
    assert exchanged_phrase(old, new).startswith("a phrase exchanged")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User lives in Toronto", "User lives in Vancouver"),
        ("User's favorite cuisine is thai food", "User's favorite cuisine is ethiopian food"),
        ("Gina supports Jon through setbacks.", "Gina expresses full support for Jon."),
        ("My usual bedtime is 11 pm", "My usual sleep time is 11 pm"),
    ],
)
def test_a_named_value_a_one_value_attribute_or_a_rewording_is_no_exchange(old: str, new: str) -> None:
    assert exchanged_phrase(old, new) == ""


def test_a_role_after_is_a_describes_the_subject_not_another_person() -> None:
    assert {"math", "teacher"} <= predicate_roles("Sofia is a math teacher at Lincoln High.")
    assert "friend" in predicate_roles("Tom is a friend of Bob.")
    assert "bob" not in predicate_roles("Tom is a friend of Bob.")
