"""Questions that carry a fact are kept in long-term memory; questions that only ask, and small talk,
state nothing (extraction/smalltalk.py). Pure functions: no database."""

from __future__ import annotations

import pytest

from memory_app.extraction.smalltalk import carries_fact, states_nothing


@pytest.mark.parametrize(
    "text",
    [
        "How was your trip to Paris last week?",
        "Did you finish the 10k you trained for?",
        "Is Max, your new puppy, settling in?",
        "Wow! What got you into running?",
        "Could it spark any ideas for your dance studio?",
        "Should I take my dog to the vet?",
        "Looks like you had fun - what happened there?",
        "Did you go hiking yesterday?",
        "What do you love about Seattle?",
    ],
)
def test_a_question_that_names_or_presupposes_something_is_kept(text):
    assert not states_nothing(text)


@pytest.mark.parametrize(
    "text",
    [
        "What should I cook tonight?",
        "How are you?",
        "How's your day going?",
        "What's your favorite movie?",
        "What are some of your favorites?",
        "Hey Gina, how's it going?",
        "How are you, Gina?",
        "Have you tried yoga?",
        "Were you surprised?",
        "Are you free next Friday?",
        "What have you been up to lately?",
        "Wow! What did you get?",
        "Thanks! Take care and talk to you soon.",
    ],
)
def test_a_question_that_only_asks_and_small_talk_state_nothing(text):
    assert states_nothing(text)


def test_a_name_that_only_addresses_the_listener_carries_no_fact():
    assert not carries_fact("Hey Joanna, what's been up?")
    assert carries_fact("Did Joanna call?")


def test_a_date_ahead_or_today_carries_no_fact_but_a_past_one_does():
    assert not carries_fact("What should we do next weekend?")
    assert not carries_fact("What should I cook tonight?")
    assert carries_fact("How was the concert last Saturday?")


def test_a_participle_after_an_inverted_be_or_have_belongs_to_the_question():
    assert not carries_fact("Have you finished it?")
    assert not carries_fact("Are you excited?")
    assert carries_fact("Is that the race you finished?")


def test_a_number_in_a_question_carries_a_fact():
    assert carries_fact("Is it still 3 km to the lake?")
