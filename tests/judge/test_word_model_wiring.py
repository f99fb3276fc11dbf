"""The judge imports no embeddings: apps.py hands it the local model (word_model_use) and hands the
local model's passes to the judge's encoder (forward_pass_listen)."""

from __future__ import annotations

import pytest

from memory_app.embeddings import local
from memory_app.judge.signals import alignment


def test_the_app_hands_the_judge_the_local_model_and_the_local_passes_to_the_encoder() -> None:
    assert alignment.word_model() is local.local_word_model()
    assert local._forward_pass_listener is alignment.offer_forward_pass


def test_without_a_word_model_the_judge_says_who_names_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alignment, "_word_model", None)
    with pytest.raises(RuntimeError, match="word_model_use"):
        alignment.word_model()


def test_the_encoder_runs_the_model_it_was_handed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = local.local_word_model()

    class Counting:
        tokenizer = real.tokenizer

        def hidden_states(self, batch):  # type: ignore[no-untyped-def]
            calls.append(len(batch["input_ids"]))
            return real.hidden_states(batch)

    monkeypatch.setattr(alignment, "_word_model", Counting)
    tokens = alignment.TokenEncoder().tokens(["Fred plays the guitar", "Gina is afraid of heights"])
    assert calls == [2]
    assert tokens[0].stems and tokens[1].stems
