from __future__ import annotations

from memory_app.admin.review.diffs import Segment, render_segments, word_diff


def test_word_diff_marks_only_the_words_that_differ():
    ref, other = word_diff(["User's target BMI is 23", "User's target BMI is 24"])
    assert ref == [Segment("User's target BMI is", False), Segment("23", True)]
    assert other == [Segment("User's target BMI is", False), Segment("24", True)]


def test_word_diff_ignores_case_and_trailing_punctuation():
    ref, other = word_diff(["The dog is called Rex.", "the dog is called rex"])
    assert not any(s.changed for s in ref + other)


def test_reference_marks_words_missing_from_any_other_member():
    ref, b, c = word_diff(
        ["espresso grinder is broken", "espresso grinder is broken", "espresso machine is broken"]
    )
    assert [s.text for s in ref if s.changed] == ["grinder"]
    assert not any(s.changed for s in b)
    assert [s.text for s in c if s.changed] == ["machine"]


def test_rendered_diff_escapes_html():
    html = render_segments(word_diff(["a <b>", "a <i>"])[1])
    assert html == 'a <mark class="diff">&lt;i&gt;</mark>'


def test_empty_input_gives_no_segments():
    assert word_diff([]) == []
    assert word_diff(["", "new words"]) == [[], [Segment("new words", True)]]
