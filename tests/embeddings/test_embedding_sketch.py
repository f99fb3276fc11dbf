"""The surface sketch that guards near-duplicate reuse (pure function, no database)."""

from __future__ import annotations

import numpy as np
import pytest

from memory_app.embeddings.cache.sketch import SKETCH_DIMENSIONS, surface_sketch


def cosine(a: str, b: str) -> float:
    return float(surface_sketch(a) @ surface_sketch(b))


def test_the_sketch_is_a_unit_vector_that_ignores_case_and_punctuation():
    v = surface_sketch("Hello, World!")
    assert v.shape == (SKETCH_DIMENSIONS,) and abs(np.linalg.norm(v) - 1) < 1e-6
    assert cosine("Hello, World!", "hello world") == 1.0


def test_a_small_edit_keeps_the_sketch_close_but_moving_words_does_not():
    base = "I'm planning to visit my grandmother in Lisbon next summer with the whole family."
    assert cosine(base, base.replace("summer", "sumer")) >= 0.95  # a typo
    assert cosine(base, base.replace("Lisbon next", "Lisbon, next")) == pytest.approx(1.0)  # punctuation
    moved = "My grandmother in Lisbon I'm planning to visit next summer with the whole family."
    assert cosine(base, moved) < 0.9
    # The same words, two of them swapped across the sentence: what MiniLM cannot tell apart.
    a = "The northern shore was marshy but the southern end of the island had trees."
    b = "The southern shore was marshy but the northern end of the island had trees."
    assert cosine(a, b) < 0.95


def test_an_empty_text_has_a_sketch_too():
    assert np.linalg.norm(surface_sketch("")) == 1.0
