"""The merge rule shared by the store path, compaction and load-time collapse: the kept text states
every number and name of each source."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_app.judge.facts import names
from memory_app.judge.merge import choose_merge_text, keeps_everything, loses_facts, lost_facts


def test_names_are_capitalised_words_that_do_not_open_a_sentence():
    assert names("Gina lost her job at Door Dash. Then Tom's dog ran.") == {"Door", "Dash", "Tom"}


@pytest.mark.parametrize(
    ("kept", "source"),
    [
        ("User likes their steak medium rare", "User likes steak medium-rare"),
        ("The user is aiming for a body mass index of 23", "User's target BMI is 23"),
        ("Gina lost her job at Door Dash during the month.", "Gina lost her job at Door Dash."),
        ("User has a dog called Rex, a black labrador", "User has a dog"),
        ("Their rental agreement expires 2025-08-31", "User's lease ends on August 31, 2025"),
        ("At sea level, water boils at 100 degrees Celsius", "Water boils at 100°C at sea level"),
    ],
)
def test_a_text_that_restates_every_value_and_name_keeps_every_value_and_name(kept, source):
    assert keeps_everything(kept, [kept, source], words=False)


@pytest.mark.parametrize(
    ("kept", "source", "lost"),
    [
        ("User runs 5 km on Mondays", "User runs 10 km on Mondays", ["10"]),
        ("User's dog is called Rex", "User's dog is called Bo", ["Bo"]),
        ("User's team uses Postgres 15", "User's team uses PostgreSQL 15", ["PostgreSQL"]),
        ("User has a dog", "User has a dog called Rex, born in 2019", ["2019", "Rex"]),
    ],
)
def test_a_text_that_drops_a_value_or_a_name_does_not(kept, source, lost):
    assert lost_facts(kept, source, words=False) == lost
    assert not keeps_everything(kept, [kept, source])


@pytest.mark.parametrize(
    ("kept", "source", "lost"),
    [
        (
            "The user likes wearing blue clothes.",
            "The user's favourite colour is blue.",
            ["color", "favorit"],
        ),
        ("User has a dog", "User has a dog called Rex, born in 2019", ["2019", "Rex", "born", "call"]),
        ("The user is aiming for a body mass index of 23", "User's target BMI is 23", ["target"]),
    ],
)
def test_a_kept_text_must_state_every_content_word_of_the_other(kept, source, lost):
    assert lost_facts(kept, source) == lost


@pytest.mark.parametrize(
    ("kept", "source"),
    [
        ("Priya works as a nurse at St. Mary's Hospital.", "Priya is a nurse at St. Mary's Hospital."),
        ("The user has a dog called Rex.", "The user's dog is named Rex."),
        ("User is alergic to shellfish", "User is allergic to shellfish"),
        ("User's favorite color is blue", "The user's favourite colour is blue"),
    ],
)
def test_a_word_is_stated_by_its_stem_its_spelling_or_a_listed_synonym(kept, source):
    assert lost_facts(kept, source) == []


def test_a_duplicate_whose_texts_each_drop_a_word_of_the_other_is_not_merged():
    old = "User runs Arch Linux on their laptop"
    new = "Their laptop's operating system is Arch"
    assert choose_merge_text(new=new, old=old, relation="duplicate") is None


def test_a_duplicate_where_each_text_drops_a_name_of_the_other_is_not_merged():
    old = "User moved to Berlin with Anna"
    new = "User and Maria moved to Berlin"
    assert choose_merge_text(new=new, old=old, relation="duplicate") is None


def test_a_refinement_keeps_only_the_refining_text():
    old = "User has a dog called Rex"
    new = "User has a dog"
    assert choose_merge_text(new=new, old=old, relation="refine") is None
    assert choose_merge_text(new=old, old=new, relation="refine") == old


# Pieces of texts with numbers, amounts, names and plain words, in every mix.
_PIECES = [
    "User paid $1,800",
    "eighteen hundred dollars",
    "for the trip to Paris",
    "Gina lost her job at Door Dash.",
    "on 3 May",
    "water boils at 100°C",
    "at 100 degrees Celsius",
    "User likes green tea",
    "the user likes tea",
    "BMI of 23",
    "body mass index",
    "Kalomi mentioned that",
]


@given(
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4),
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4),
    st.booleans(),
)
def test_loses_facts_says_whether_lost_facts_lists_anything(kept, source, words):
    kept_text, source_text = " ".join(kept), " ".join(source)
    expected = bool(lost_facts(kept_text, source_text, words=words))
    assert loses_facts(kept_text, source_text, words=words) is expected
