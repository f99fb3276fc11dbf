from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memory_app.extraction.conversation import ChatMessage, drafts_offline
from memory_app.extraction.dates import resolve_event_date, season_start
from memory_app.extraction.smalltalk import is_small_talk

MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "day", "expression"),
    [
        ("I went to a support group yesterday.", "2023-05-07", "yesterday"),
        ("We went camping last Saturday.", "2023-05-06", "last Saturday"),
        ("I'm moving to Paris next month!", "2023-06-08", "next month"),
        ("I painted that two weeks ago.", "2023-04-24", "two weeks ago"),
        ("I love painting.", "2023-05-08", ""),  # no date named: the message's own day
        ("We may go now.", "2023-05-08", ""),  # "We" and "may" are words here, not dates
        ("Yeah, last weekend I had a picnic.", "2023-05-06", "last weekend"),  # its Saturday
        ("I'm hiking with some buddies this weekend.", "2023-05-13", "this weekend"),
        ("Tomorrow's opening will be so much fun.", "2023-05-09", "Tomorrow"),
        ("Hey John, this week's been really busy.", "2023-05-08", "this week"),
        ("I read it recently.", "2023-05-08", ""),  # names no day: the message's own day
        # a duration, not a date
        ("He was part of our family for 10 years and we miss him.", "2023-05-08", ""),
        ("I started surfing five years ago.", "2018-05-08", "five years ago"),
        # approximate counts and "the other day": about that long ago, as said
        ("I went to a pride parade a few weeks ago.", "2023-04-17", "a few weeks ago"),
        ("We met a couple of days ago.", "2023-05-06", "a couple of days ago"),
        ("Several years ago I quit smoking.", "2020-05-08", "Several years ago"),
        ("I saw a gorgeous sunset while hiking the other day.", "2023-05-05", "the other day"),
        ("In a couple of weeks we fly out.", "2023-05-22", "In a couple of weeks"),
        ("We had a few weeks of rain.", "2023-05-08", ""),  # a duration, not a date
        # dateparser alone reads only "yesterday" / "tomorrow" here: a day off
        ("We met the day before yesterday.", "2023-05-06", "the day before yesterday"),
        ("I'll see him the day after tomorrow.", "2023-05-10", "the day after tomorrow"),
        ("This past weekend I hiked.", "2023-05-06", "This past weekend"),
        # a season: its first day
        ("We had a blast on our camping trip last summer.", "2022-06-01", "last summer"),
        ("This summer we are going to Spain.", "2023-06-01", "This summer"),
        ("The last summer of college was the best.", "2023-05-08", ""),  # not a date
        ("My last fall from the horse hurt.", "2023-05-08", ""),
    ],
)
def test_relative_dates_resolve_against_the_message_time(text, day, expression):
    found = resolve_event_date(text, MONDAY)
    assert found is not None
    assert (found.when.date().isoformat(), found.expression) == (day, expression)


@pytest.mark.parametrize(
    ("which", "season", "said", "start"),
    [
        ("last", "summer", date(2023, 5, 8), date(2022, 6, 1)),  # before this year's summer
        ("last", "summer", date(2023, 10, 1), date(2023, 6, 1)),  # after it
        ("last", "summer", date(2023, 7, 4), date(2022, 6, 1)),  # during it: the one before
        ("this past", "winter", date(2023, 4, 2), date(2022, 12, 1)),
        ("this", "winter", date(2023, 1, 15), date(2022, 12, 1)),  # under way
        ("this", "winter", date(2023, 11, 20), date(2023, 12, 1)),
        ("next", "spring", date(2023, 5, 8), date(2024, 3, 1)),
        ("last", "autumn", date(2023, 5, 8), date(2022, 9, 1)),
    ],
)
def test_a_season_is_the_one_its_words_point_to_from_the_day_it_was_said(which, season, said, start):
    assert season_start(which, season, said) == start


def test_without_a_timestamp_there_is_no_event_date():
    assert resolve_event_date("yesterday", None) is None


@pytest.mark.parametrize(
    "text", ["Thanks!", "Wow, that's great", "Sounds good, talk to you soon!", "Haha yeah totally", ";)"]
)
def test_acknowledgements_are_small_talk(text):
    assert is_small_talk(text)


@pytest.mark.parametrize("text", ["Paris!", "Got a dog", "Thanks! I ran 5k today", "Wow, Mia turned seven"])
def test_anything_that_states_something_is_not_small_talk(text):
    assert not is_small_talk(text)


def test_the_assistant_is_context_and_first_and_second_person_go_to_the_right_person():
    messages = [
        ChatMessage("user", "I love jazz.", "Ana", MONDAY, "m1"),
        ChatMessage("user", "You're a great cook. I have two cats.", "Ben", MONDAY, "m2"),
        ChatMessage("assistant", "I love helping you both!", "", MONDAY, "m3"),
    ]
    drafts = drafts_offline(messages)
    facts = {(d.text, d.about, d.source_message_ids) for d in drafts if d.extracted_by == "rules"}
    assert facts == {
        ("Ana loves jazz", "Ana", ("m1",)),
        ("Ana is a great cook", "Ana", ("m2",)),
        ("Ben has two cats", "Ben", ("m2",)),
    }
    kept = [d.text for d in drafts if d.extracted_by == "message"]
    assert kept == ["Ana: I love jazz.", "Ben: You're a great cook. I have two cats."]
