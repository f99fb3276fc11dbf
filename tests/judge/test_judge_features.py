"""Pure feature functions of the offline judge: strings in, facts out, no database."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory_app.judge.merge import most_informative
from memory_app.judge.signals import features as judge_features
from memory_app.judge.signals import text_norm as tn
from memory_app.judge.signals.alignment import content_spans
from memory_app.judge.signals.features import (
    cosine_distance,
    lexical_counterparts,
    pair_facts,
    polarity_flip,
    same_word,
    same_word_in,
    short_form,
    spelling_variant,
)


def test_numbers_read_digits_words_and_thousands_separators():
    assert tn.numbers("User's monthly rent is $1,800") == {1800.0}
    assert tn.numbers("Their cat is twelve") == {12.0}
    assert tn.numbers("eighteen hundred dollars") == {1800.0}


def test_twelve_hour_and_twenty_four_hour_clocks_compare_equal():
    assert tn.numbers("pickup at 3:30 pm") == tn.numbers("pickup at 15:30")
    assert tn.numbers("dinner at 7pm") == tn.numbers("dinner at 19:00")


def test_stemming_folds_plurals_and_verb_forms():
    assert tn.content_words("User likes evenings") == tn.content_words("user liked the evening")


def test_changed_number_is_a_conflict_but_a_restated_one_is_not():
    assert pair_facts("User's target BMI is 23", "User's target BMI is 24", 0.04).number_conflict
    assert not pair_facts("User's cat is 12 years old", "Their cat is twelve", 0.28).number_conflict


def test_negation_flips_polarity_and_double_negation_does_not():
    assert polarity_flip("User loves horror movies", "User can't stand horror movies")
    assert polarity_flip("User is allergic to latex", "User is not allergic to latex")
    assert not polarity_flip("User doesn't like cilantro", "The user dislikes coriander leaves")
    assert polarity_flip("User prefers morning runs", "User prefers evening runs")


def test_another_person_in_the_subject_is_flagged():
    facts = pair_facts("User goes to yoga every Tuesday", "User's wife goes to yoga every Tuesday", 0.1)
    assert facts.person_change
    restated = pair_facts("User's parents live in Porto", "Their mum and dad live in Porto", 0.2)
    assert not restated.person_change


def test_containment_marks_a_refinement():
    facts = pair_facts("User plays chess online", "User plays chess online and is rated about 1500", 0.14)
    assert facts.new_contains_old
    assert not pair_facts("User plays chess", "User plays the cello", 0.5).new_contains_old


def test_slot_swap_is_one_word_exchanged_in_the_same_frame():
    assert pair_facts("User lives in Toronto and works", "User lives in Vancouver and works", 0.2).slot_swap
    assert not pair_facts("User is afraid of flying", "They have a fear of air travel", 0.39).slot_swap


def test_cosine_distance_is_unknown_without_both_vectors():
    v = np.array([1.0, 0.0], dtype=np.float32)
    assert cosine_distance(v, None) is None
    assert cosine_distance(v, v) == pytest.approx(0.0)
    assert cosine_distance(v, np.array([0.0, 1.0])) == pytest.approx(1.0)


def test_most_informative_keeps_the_most_informative_member_verbatim():
    short = "User plays chess online"
    rich = "User plays chess online and is rated about 1500"
    assert most_informative([short, rich]) == rich
    assert most_informative([rich, short]) == rich
    with pytest.raises(ValueError):
        most_informative(["", "  "])


def test_the_same_number_in_another_unit_is_another_quantity():
    assert pair_facts("User's cat is 12 years old", "User's cat weighs 12 pounds", 0.3).unit_conflict
    assert not pair_facts("User sleeps 7 hours", "They get about 7 hours of sleep", 0.2).unit_conflict


def test_a_past_event_is_not_a_future_goal():
    assert pair_facts("User wants to lose 5 kg before summer", "User lost 5 kg last summer", 0.2).time_shift


def test_another_month_or_weekday_is_a_changed_date():
    assert pair_facts("Yoga is on Tuesdays", "Yoga moved to Thursdays", 0.15).calendar_swap
    assert pair_facts("The wedding is on 14 September", "The party is on 14 August", 0.3).calendar_swap


def test_different_code_identifiers_are_different_calls():
    facts = pair_facts("Confirm before calling schedule_meeting", "Confirm before calling set_reminder", 0.2)
    assert facts.identifiers_differ


def test_one_exchanged_word_is_a_single_swap_unless_it_is_the_same_root():
    assert pair_facts(
        "User's espresso grinder is broken", "User's espresso machine is broken", 0.1
    ).single_swap
    assert not pair_facts("User is allergic to shellfish", "User has a shellfish allergy", 0.1).single_swap


def test_prefix_negation_and_retraction_flip_polarity():
    assert polarity_flip("User prefers fiction", "User prefers nonfiction")
    assert polarity_flip("User is allergic to latex", "A doctor ruled out the user's supposed latex allergy")


def test_the_same_words_in_another_order_are_flagged():
    assert pair_facts("User prefers tabs over spaces", "User prefers spaces over tabs", 0.01).order_changed
    assert not pair_facts("User likes tea", "User likes tea!", 0.0).order_changed


def test_the_same_names_in_another_order_are_flagged():
    assert pair_facts("Aiko moved from Osaka to Kyoto", "Aiko moved from Kyoto to Osaka", 0.02).order_changed


def test_a_phrase_exchanged_inside_a_shared_frame_is_a_frame_swap():
    facts = pair_facts(
        "Omar's dog is scared of thunderstorms", "Omar's dog is scared of the vacuum cleaner", 0.3
    )
    assert facts.frame_swap
    assert facts.middle_old == ("thunderstorm",)


def test_a_rewritten_frame_is_not_a_frame_swap():
    assert not pair_facts("User is afraid of flying", "They have a fear of air travel", 0.39).frame_swap
    # Two forms of one word in the exchanged phrase are a restatement, not another thing.
    assert not pair_facts("User is allergic to cats", "User has an allergy to cats", 0.1).frame_swap


def test_a_name_on_each_side_that_the_other_never_restates_is_foreign():
    assert tn.foreign_names("User deploys on Heroku", "User deploys on Fly.io")
    assert tn.foreign_names("User's main language is TypeScript", "User's main language is Go")


def test_abbreviations_and_prefixes_of_a_name_are_not_foreign():
    assert not tn.foreign_names("User's team uses PostgreSQL 15", "Postgres v15 is on the user's team")
    assert not tn.foreign_names("User writes TypeScript at work", "At their job they mostly write TS")
    assert not tn.foreign_names(
        "User is preparing for the AWS exam", "They study for an Amazon Web Services exam"
    )


def test_roman_numerals_iso_dates_fractions_and_percent_signs_read_as_numbers():
    assert tn.numbers("Omar is a type II diabetic") == tn.numbers("Omar has type 2 diabetes")
    assert tn.numbers("expires 2025-08-31") == tn.numbers("ends on August 31, 2025")
    assert "august" in tn.content_words("expires 2025-08-31")
    assert tn.numbers("A fifth of their pay") == tn.numbers("20% of their salary") == frozenset({20.0})
    # Lower-case "ii" is not a numeral, and "number one" is an idiom, not a count.
    assert tn.numbers("part ii") == frozenset()
    assert tn.numbers("Thai is their number one cuisine") == frozenset()


def test_bare_tokens_drop_only_articles_and_the_word_user():
    assert tn.bare_tokens("User prefers morning workouts") == tn.bare_tokens(
        "The user prefers morning workouts."
    )
    assert tn.bare_tokens("He likes jazz") != tn.bare_tokens("She likes jazz")
    assert tn.bare_tokens("User likes jazz") != tn.bare_tokens("User doesn't like jazz")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"fiction"}, {"nonfiction"}, True),
        ({"nonfiction"}, {"fiction"}, True),
        ({"likes", "dislike"}, {"like", "tea"}, True),
        ({"able"}, {"unable"}, True),
        ({"fo"}, {"info"}, False),  # a stem under four letters is no word of its own
        ({"running"}, {"walking"}, False),
        (set(), {"unable"}, False),
    ],
)
def test_a_word_and_its_negating_prefix_form_are_found_on_either_side(a, b, expected):
    assert tn.morphological_negation(frozenset(a), frozenset(b)) is expected


def test_a_dropped_doubled_or_exchanged_letter_is_a_spelling_variant_but_another_letter_is_not():
    assert spelling_variant("alergic", "allergic")
    assert spelling_variant("shelfish", "shellfish")
    assert spelling_variant("framwork", "framework")
    assert spelling_variant("recieve", "receive")
    assert not spelling_variant("bottle", "battle")  # a substituted letter makes another word
    assert not spelling_variant("lives", "loves")  # too short to tell a slip from another word


def test_short_forms_keep_the_first_letter_and_the_letters_in_order():
    assert short_form("feb", "february")
    assert short_form("vit", "vitamin")
    assert short_form("nvim", "neovim")
    assert short_form("deps", "dependencies")
    assert not short_form("mv", "move")  # shorter than three letters
    assert not short_form("bat", "cabinet")
    assert not short_form("dentis", "dentist")  # one letter short is a slip, not a short form
    assert not short_form("vim", "vitamin")  # a subsequence that neither starts nor ends the same


def test_misspelt_and_abbreviated_words_count_as_restated_in_the_lexical_alignment():
    plain = pair_facts("User is alergic to shelfish", "The user has a shellfish allergy", 0.64)
    assert plain.restatement.unmatched < plain.alignment.unmatched
    acronym = pair_facts("User's target BMI is 23", "The user is aiming for a body mass index of 23", 0.31)
    assert acronym.restatement.unmatched < acronym.alignment.unmatched
    # "body", "mass" and "index" are spelled out by "BMI": none of them is left unmatched for it.
    restated, spelled = lexical_counterparts("User's target BMI is 23", "aiming for a body mass index of 23")
    assert len(restated) == 1 and len(spelled) == 3


def test_a_long_form_counts_as_restated_when_the_other_side_writes_it_short():
    # Restating is mutual: "nvim" restates "Neovim" and "Neovim" restates "nvim".
    def restated_words(text: str, other: str) -> list[str]:
        spans = content_spans(text)
        return [text[spans[i][1] : spans[i][2]] for i in sorted(lexical_counterparts(text, other)[0])]

    assert restated_words("User edits code in Neovim", "User's code editor is nvim") == ["Neovim"]
    assert restated_words("User's code editor is nvim", "User edits code in Neovim") == ["nvim"]
    facts = pair_facts("User's team runs PostgreSQL", "The team runs Postgres", 0.2)
    assert facts.restatement.unmatched == 0
    # A word that merely starts the same way is no short form of it.
    assert lexical_counterparts("User repairs cars", "User has a career")[0] == set()


def test_lexical_matching_does_not_restate_another_fact():
    facts = pair_facts("Fred plays the guitar", "Fred now lives in Hamburg", 0.6)
    assert facts.restatement.unmatched == facts.alignment.unmatched >= 3


def test_an_abbreviated_word_is_not_another_word_exchanged_in_the_frame():
    assert not pair_facts(
        "User takes vitamin D supplements daily", "User takes vit D supplements daily", 0.1
    ).single_swap
    assert pair_facts(
        "User takes vitamin D supplements daily", "User takes iron supplements daily", 0.1
    ).single_swap


def test_nearly_the_same_words_in_another_order_are_read_as_exchanged_roles():
    swapped = pair_facts(
        "The old bridge replaced the wooden ferry across the river near the small village",
        "The wooden bridge replaced the old ferry across the river by the village",
        0.1,
    )
    assert swapped.order_changed and swapped.only_old  # not the same word set, yet the roles moved
    rewritten = pair_facts(
        "User adopted a rescue greyhound in 2022", "In 2022 they took in a greyhound from a rescue", 0.19
    )
    assert not rewritten.order_changed  # too few shared words for their order to be the roles


RESTATED_WORDS = [
    "alergic",
    "allergic",
    "shelfish",
    "shellfish",
    "feb",
    "february",
    "nvim",
    "neovim",
    "vit",
    "vitamin",
    "deps",
    "dependencies",
    "framwork",
    "framework",
    "lives",
    "loves",
    "art",
    "artist",
    "bottle",
    "battle",
    "user",
    "users",
    "x",
    "ab",
    "straße",
    "strasse",
]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(RESTATED_WORDS), st.lists(st.sampled_from(RESTATED_WORDS), max_size=8))
def test_the_words_asked_for_a_restatement_are_all_that_can_restate_a_word(word, others):
    other = " ".join(["Then", *others])
    written = judge_features._written_text(other)
    # Either way round: a slip or short form of a word there, or a word there written short.
    every_word = any(
        judge_features._restates(word, w) or judge_features._restates(w, word) for w in written.folded
    )
    assert judge_features._restated_in(word, written) == every_word


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(RESTATED_WORDS), st.sampled_from(RESTATED_WORDS))
@example("neovim", "nvim")
@example("dependencies", "deps")
def test_restating_a_word_is_mutual(word, other):
    # A slip or a short form restates in both directions: "nvim" restates "neovim" and back.
    forward = judge_features._restated_in(word, judge_features._written_text(f"Then {other}"))
    backward = judge_features._restated_in(other, judge_features._written_text(f"Then {word}"))
    assert forward == backward


def _near_spellings(word: str) -> list[str]:
    """`word` with each one-letter slip: a letter left out, doubled, substituted, or two neighbours
    exchanged, plus longer words it could abbreviate."""
    out = {word, word + "ing", word[0] + "x" + word[1:] + "s"}
    for i in range(len(word)):
        out.add(word[:i] + word[i + 1 :])
        out.add(word[:i] + word[i] + word[i:])
        out.add(word[:i] + "b" + word[i + 1 :])
        if i + 1 < len(word):
            out.add(word[:i] + word[i + 1] + word[i] + word[i + 2 :])
    return sorted(w for w in out if w)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="abcde", min_size=1, max_size=10), st.data())
def test_the_set_lookups_find_a_restating_word_exactly_when_a_word_pair_check_does(word, data):
    candidates = _near_spellings(word) + _near_spellings(word + "a")
    others = data.draw(st.lists(st.sampled_from(candidates), max_size=6))
    other = " ".join(["Then", *others])
    written = judge_features._written_text(other)
    every_word = any(
        judge_features._restates(word, w) or judge_features._restates(w, word) for w in written.folded
    )
    assert judge_features._restated_in(word, written) == every_word


_WORDS = st.lists(
    st.text(alphabet="abcABC", min_size=1, max_size=4).map(lambda w: w + "x"), min_size=0, max_size=12
)


@settings(max_examples=200, deadline=None)
@given(words=_WORDS, size=st.integers(min_value=2, max_value=5), data=st.data())
def test_the_runs_of_an_acronym_are_every_run_of_words_with_its_initials(words, size, data):
    text = " ".join(words)
    written = judge_features._written_text(text)
    letters = data.draw(st.text(alphabet="abc", min_size=size, max_size=size))
    expected = [
        first
        for first in range(len(words) - size + 1)
        if "".join(w[0].casefold() for w in words[first : first + size]) == letters
    ]
    assert written.runs(letters) == expected


_WORDS = st.text(alphabet="abcdefghilmnorstuv", min_size=1, max_size=9)


@given(word=_WORDS, others=st.frozensets(_WORDS, max_size=8))
@example(word="silver", others=frozenset({"silver", "silevr"}))
@example(word="garden", others=frozenset({"garden", "gardens"}))
@example(word="lalergic", others=frozenset({"allergic"}))
@example(word="lalergic", others=frozenset({"lalergic", "allergic"}))
def test_same_word_in_answers_as_same_word_against_each_word(word: str, others: frozenset[str]) -> None:
    assert same_word_in(word, others) == any(same_word(word, other) for other in others)


def test_same_word_in_finds_a_slip_that_changes_the_first_letter() -> None:
    assert same_word_in("lalergic", frozenset({"allergic"})) is same_word("lalergic", "allergic")
    assert same_word_in("allergic", frozenset({"alergic", "tomato"}))
    assert not same_word_in("battle", frozenset({"bottle"}))


def test_same_word_in_finds_every_listed_synonym() -> None:
    for word, synonyms in tn.SYNONYMS.items():
        for other in synonyms:
            assert same_word_in(word, frozenset({other, "zzz"})) == same_word(word, other)
