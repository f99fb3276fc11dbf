"""Pure parts of the judge's reach (what it can read) and of the word alignment, without a model."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memory_app.judge.signals import reach
from memory_app.judge.signals.alignment import MATCHED, TextTokens, align, content_spans, coverage


def test_letters_of_any_other_script_are_outside_what_the_judge_reads():
    for text in ["민수는 서울에 산다", "דנה גרה בתל אביב", "สมชายชอบกาแฟ", "小明住在北京", "Иван любит кофе"]:
        assert reach.foreign_script(text), text
    assert not reach.foreign_script("Zoë moved to São Paulo in 2021 — café crème!")


def test_a_latin_script_sentence_without_any_english_function_word_is_another_language():
    assert reach.not_english("Er wohnt jetzt seit Jahren dort")
    assert not reach.not_english("Fred now lives in Hamburg")
    assert not reach.not_english("Prefers dark mode")  # too short to tell


def test_a_short_english_fact_without_function_words_is_still_english():
    # Many stored facts have no article or preposition; their words are in the model's vocabulary.
    assert not reach.not_english("Aiko collects vintage film cameras")
    assert not reach.not_english("One tablespoon equals three teaspoons")
    assert not reach.not_english("Priya eats no animal products whatsoever")
    assert reach.not_english("Juan vive ahora cerca playa")


def test_outside_names_the_reason_and_reads_ordinary_english():
    assert reach.outside("Fred plays the guitar", "Fred now lives in Hamburg") == ""
    assert "script" in reach.outside("Fred plays the guitar", "Фред играет на гитаре")
    long_text = " ".join(["the word"] * 50)
    assert "longer" in reach.outside("Fred plays the guitar", long_text, max_words=30)
    assert reach.outside("Fred plays the guitar", long_text, max_words=0) == ""


def test_symbols_keep_signs_currency_and_emoji_but_not_punctuation_or_word_hyphens():
    assert reach.symbols("balance -200 EUR") != reach.symbols("balance 200 EUR")
    assert reach.symbols("C#") != reach.symbols("C++")
    assert reach.symbols("€500") != reach.symbols("$500")
    assert reach.symbols("🥜") != reach.symbols("🦐")
    assert reach.symbols("A+") != reach.symbols("A-")
    assert reach.symbols("User's dairy-free diet.") == reach.symbols("User's dairy-free diet")


def test_surface_folds_case_spacing_and_a_final_stop_only():
    assert reach.surface("User lives in Lisbon.") == reach.surface("user  lives in lisbon")
    assert reach.surface("balance -200 EUR") != reach.surface("balance 200 EUR")
    assert reach.surface("A+") != reach.surface("A-")


@given(st.text(min_size=1, max_size=30), st.sampled_from(["-", "+", "#", "$", "€", "%", "🥜", "1", "x"]))
def test_inserting_a_sign_digit_or_letter_changes_the_surface(text, extra):
    assert reach.surface(text + " " + extra) != reach.surface(text)


def _tokens(stems: list[str], vectors: list[list[float]], names: list[bool] | None = None) -> TextTokens:
    array = np.asarray(vectors, dtype=np.float32)
    array /= np.linalg.norm(array, axis=1, keepdims=True)
    return TextTokens(tuple(stems), tuple(names or [False] * len(stems)), array)


def test_coverage_counts_the_same_stem_as_restated_and_an_unrelated_word_as_not():
    old = _tokens(["evan", "key"], [[1, 0, 0], [0, 1, 0]], [False, False])
    new = _tokens(["evan", "symbol"], [[1, 0, 0], [0, 0, 1]])
    assert coverage(old, new).tolist() == [1.0, 0.0]
    result = align(old, new)
    assert result.unmatched == 2 and result.worst == 0.0


def test_a_name_counts_only_when_the_same_name_is_on_the_other_side():
    # "Tim" and "John" point the same way as token vectors; as names they are different people.
    old = _tokens(["support", "tim"], [[1, 0], [0, 1]], [False, True])
    new = _tokens(["support", "john"], [[1, 0], [0, 1]], [False, True])
    assert coverage(old, new).tolist() == [1.0, 0.0]


def test_words_close_in_meaning_count_as_counterparts():
    old = _tokens(["gratitude"], [[1.0, 0.1]])
    new = _tokens(["thank"], [[1.0, 0.2]])
    assert coverage(old, new)[0] > MATCHED
    assert align(old, new).unmatched == 0


def test_content_spans_leave_out_stop_words_numbers_and_mark_names_after_the_first_word():
    spans = content_spans("Evan told Sam he runs 5 km every morning")
    assert [s[0] for s in spans] == ["evan", "told", "sam", "run", "kilometer", "morn"]
    assert [s[3] for s in spans] == [False, False, True, False, False, False]


def test_a_pronoun_fused_with_an_auxiliary_is_no_content_word_but_a_negated_auxiliary_is():
    # "They're" is "they are": two function words the other side need not restate. "aren't" carries
    # the negation, which is content (and its head is no stop word).
    text = "They're sure we'd come, I'm told, but you'll see they aren't late"
    words = [text[start:end] for _, start, end, _ in content_spans(text)]
    assert words == ["sure", "come", "told", "see", "aren't", "late"]
    # A typographic apostrophe too.
    assert [s[0] for s in content_spans("They\u2019re studying")] == ["study"]
