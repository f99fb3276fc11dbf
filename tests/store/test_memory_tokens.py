"""Stored content-word vectors (models.MemoryTokens): written where texts are stored, read where the
judge meets stored texts, never trusted for a text they were not computed from. Real local model."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from memory_app.judge.calibration.params import load_calibration
from memory_app.judge.offline import judge_pair, needs_alignment
from memory_app.judge.signals import alignment
from memory_app.judge.signals.features import pair_facts
from memory_app.models import Memory, MemoryTokens
from memory_app.overrides import StoreOverrides
from memory_app.retrieval.dedup import clear_verdict_cache
from memory_app.selectors.compaction import ScopeKey
from memory_app.selectors.search.query import SearchFilters, SearchOptions, memory_search
from memory_app.selectors.store.tokens import (
    memory_tokens_load,
    memory_tokens_missing_count,
    memory_tokens_source,
    memory_tokens_stale,
)
from memory_app.services.maintenance.compaction import judge_tools, scope_compact
from memory_app.services.rows.tokens import memory_tokens_fill
from memory_app.services.store.edit import memory_update
from memory_app.services.store.forget import memories_purge
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store
from tests.factories import MemoryFactory, TenantFactory

pytestmark = pytest.mark.django_db

# A paraphrase the judge can only tell by reading the word alignment (checked below), and merges.
OLD = "Caroline is thinking about adopting a child"
NEW = "Caroline is thinking about adopting a kid"
PAIRS = [
    (OLD, NEW),
    ("Jon lost his job as a banker", "Jon was laid off from his banking job"),
    ("Melanie loves painting sunsets by the lake", "Melanie enjoys painting sunsets at the lake"),
    ("User likes their steak medium-rare", "User likes steak medium rare"),
]


@pytest.fixture
def encoder(monkeypatch: pytest.MonkeyPatch) -> alignment.TokenEncoder:
    """A cold token encoder, as in a worker that never saw these texts."""
    fresh = alignment.TokenEncoder()
    monkeypatch.setattr(alignment, "_encoder", fresh)
    clear_verdict_cache()
    pair_facts.cache_clear()  # a pair's facts keep the alignment they read
    return fresh


def _store(tenant, *texts: str, deduplicate: bool = True) -> list:
    return memory_store(
        tenant=tenant,
        items=[MemoryInput(text=text, user_id="u1") for text in texts],
        options=StoreOverrides(deduplicate=deduplicate),
    )


def _distance(a: str, b: str) -> float:
    from memory_app.embeddings.local import local_embed

    va, vb = local_embed([a, b])
    return float(1.0 - va @ vb)


def test_stored_vectors_round_trip_exactly_as_the_encoder_holds_them(encoder):
    tenant = TenantFactory()
    (outcome,) = _store(tenant, OLD)
    held = encoder.known([OLD])[OLD]
    loaded = memory_tokens_load(tenant=tenant, memories=[(outcome.memory_id, OLD)])[OLD]
    assert loaded.stems == held.stems and loaded.names == held.names
    assert loaded.vectors.dtype == np.float32
    assert np.array_equal(loaded.vectors, held.vectors)
    row = MemoryTokens.objects.get(memory_id=outcome.memory_id)
    assert row.tenant_id == tenant.pk and row.words == len(alignment.spelled(OLD)[0])


def test_freshly_computed_vectors_are_already_the_stored_int8_numbers(encoder):
    (tokens,) = encoder.tokens([NEW])
    assert np.array_equal(tokens.vectors, alignment.dequantised(*alignment.quantised(tokens.vectors)))
    data = alignment.tokens_bytes(tokens)
    assert len(data) == len(tokens.stems) * alignment.WORD_BYTES
    loaded = alignment.tokens_from_bytes(NEW, len(tokens.stems), data)
    assert loaded is not None and loaded.stems == tokens.stems
    assert np.array_equal(loaded.vectors, tokens.vectors)


def test_quantising_the_stored_numbers_again_gives_the_same_bytes():
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((40, alignment.TOKEN_DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[5] = 0.0  # a word without word pieces keeps a zero vector
    stored = alignment.dequantised(*alignment.quantised(vectors))
    again = alignment.dequantised(*alignment.quantised(stored))
    assert np.array_equal(stored, again)
    assert np.abs(stored - vectors).max() < 2e-3


def test_a_row_of_the_older_float16_form_is_ignored_and_found_stale(encoder):
    tenant = TenantFactory()
    memory = MemoryFactory(tenant=tenant, text=NEW)
    (tokens,) = encoder.tokens([NEW])
    words = len(tokens.stems)
    MemoryTokens.objects.create(
        memory=memory,
        tenant=tenant,
        text_digest=alignment.text_digest(NEW),
        words=words,
        vectors=tokens.vectors.astype(np.float16).tobytes(),
    )
    assert memory_tokens_load(tenant=tenant, memories=[(memory.pk, NEW)]) == {}
    assert list(memory_tokens_stale(tenant=tenant, batch_size=10)) == [[(memory.pk, tenant.pk, NEW)]]


def test_a_row_of_a_text_edited_since_is_ignored_and_the_vectors_are_computed(encoder):
    tenant = TenantFactory()
    (outcome,) = _store(tenant, OLD)
    Memory.objects.filter(pk=outcome.memory_id).update(text=NEW)  # a writer that skipped the service
    assert memory_tokens_load(tenant=tenant, memories=[(outcome.memory_id, NEW)]) == {}
    with memory_tokens_source(tenant=tenant, memories=[(outcome.memory_id, NEW)]):
        encoder.tokens([NEW])
    assert encoder.encoded == 1 and encoder.loaded == 0


def test_a_row_whose_word_count_disagrees_with_the_text_is_ignored():
    tenant = TenantFactory()
    memory = MemoryFactory(tenant=tenant, text=OLD)
    words = len(alignment.spelled(OLD)[0])
    MemoryTokens.objects.create(
        memory=memory,
        tenant=tenant,
        text_digest=alignment.text_digest(OLD),
        words=words + 1,
        vectors=np.zeros((words + 1, alignment.TOKEN_DIMENSIONS), dtype=np.float16).tobytes(),
    )
    assert memory_tokens_load(tenant=tenant, memories=[(memory.pk, OLD)]) == {}


def test_the_judge_gives_the_same_verdicts_with_stored_and_fresh_vectors(encoder, monkeypatch):
    cal = load_calibration("all-MiniLM-L6-v2")
    tenant = TenantFactory()
    texts = list(dict.fromkeys(t for pair in PAIRS for t in pair))
    outcomes = _store(tenant, *texts, deduplicate=False)
    ids = {text: outcome.memory_id for text, outcome in zip(texts, outcomes, strict=True)}
    distances = [_distance(a, b) for a, b in PAIRS]
    monkeypatch.setattr(alignment, "_encoder", alignment.TokenEncoder())
    fresh = [judge_pair(a, b, d, cal) for (a, b), d in zip(PAIRS, distances, strict=True)]
    stored_encoder = alignment.TokenEncoder()
    monkeypatch.setattr(alignment, "_encoder", stored_encoder)
    pair_facts.cache_clear()
    with memory_tokens_source(tenant=tenant, memories=[(i, t) for t, i in ids.items()]):
        stored = [judge_pair(a, b, d, cal) for (a, b), d in zip(PAIRS, distances, strict=True)]
    assert stored_encoder.encoded == 0 and stored_encoder.loaded > 0
    assert [j.relation for j in stored] == [j.relation for j in fresh]
    # Stored vectors come from the forward pass that embedded the texts (another batch and padding
    # than the judge's own), so a confidence may differ in the last float digits, never a verdict.
    assert [j.confidence for j in stored] == pytest.approx([j.confidence for j in fresh], abs=1e-6)


def test_store_time_candidates_with_stored_rows_never_run_the_token_model(encoder, monkeypatch):
    cal = load_calibration("all-MiniLM-L6-v2")
    assert needs_alignment(OLD, NEW, _distance(OLD, NEW), cal)
    tenant = TenantFactory()
    _store(tenant, OLD)
    cold = alignment.TokenEncoder()  # the old text was stored by another worker
    monkeypatch.setattr(alignment, "_encoder", cold)
    (outcome,) = _store(tenant, NEW)
    assert outcome.outcome == "merged_into"
    assert cold.encoded == 0 and cold.loaded == 1
    result = Memory.objects.get(pk=outcome.memory_id)
    # The merge's result row has its own vectors, written with the merge.
    assert memory_tokens_load(tenant=tenant, memories=[(result.pk, result.text)])


def test_search_collapse_reads_stored_rows_instead_of_running_the_token_model(encoder, monkeypatch):
    tenant = TenantFactory()
    old, new = _store(tenant, OLD, NEW, deduplicate=False)
    cold = alignment.TokenEncoder()
    monkeypatch.setattr(alignment, "_encoder", cold)
    pair_facts.cache_clear()
    result = memory_search(
        tenant=tenant,
        query="Is Caroline going to adopt a child?",
        filters=SearchFilters(user_id="u1"),
        options=SearchOptions(deduplicate=True),
    )
    assert sorted(i for hit in result.hits for i in hit.member_ids) == sorted([old.memory_id, new.memory_id])
    assert len(result.hits) == 1  # collapsed: the judge read the alignment
    assert cold.encoded == 0 and cold.loaded == 2


def test_compaction_reads_stored_rows_instead_of_running_the_token_model(encoder, monkeypatch):
    tenant = TenantFactory()
    _store(tenant, OLD, NEW, deduplicate=False)
    cold = alignment.TokenEncoder()
    monkeypatch.setattr(alignment, "_encoder", cold)
    pair_facts.cache_clear()
    scope = ScopeKey(tenant_id=tenant.pk, user_id="u1", namespace="default", kind="episodic")
    report = scope_compact(tenant=tenant, scope=scope, tools=judge_tools(judge_name="offline"))
    assert report.merged == 2  # both members, into one result row
    assert cold.encoded == 0 and cold.loaded == 2
    (result,) = Memory.objects.filter(tenant=tenant, status="active")
    assert memory_tokens_load(tenant=tenant, memories=[(result.pk, result.text)])


def test_a_tenant_without_access_never_reads_another_tenants_rows(encoder):
    owner, stranger = TenantFactory(), TenantFactory()
    (outcome,) = _store(owner, OLD)
    assert memory_tokens_load(tenant=stranger, memories=[(outcome.memory_id, OLD)]) == {}
    assert memory_tokens_load(tenant=owner, memories=[(outcome.memory_id, OLD)])


def test_an_edited_text_gets_the_vectors_of_its_new_version(encoder):
    tenant = TenantFactory()
    (outcome,) = _store(tenant, OLD)
    edited = memory_update(tenant=tenant, memory_id=outcome.memory_id, changes={"text": NEW})
    assert memory_tokens_load(tenant=tenant, memories=[(edited.pk, NEW)])


def test_deleting_a_memory_deletes_its_row():
    tenant = TenantFactory()
    (outcome,) = _store(tenant, OLD)
    assert MemoryTokens.objects.filter(memory_id=outcome.memory_id).exists()
    memories_purge(tenant=tenant, memory_ids=[outcome.memory_id])
    assert not MemoryTokens.objects.filter(memory_id=outcome.memory_id).exists()


def test_the_backfill_computes_the_missing_rows_and_nothing_twice(encoder):
    tenant, other = TenantFactory(), TenantFactory()
    memory = MemoryFactory(tenant=tenant, text=OLD)  # written without the service: no row
    MemoryFactory(tenant=other, text=NEW)
    assert memory_tokens_missing_count(tenant=tenant) == 1
    assert memory_tokens_fill(tenant=tenant) == 1
    assert memory_tokens_missing_count(tenant=tenant) == 0
    assert memory_tokens_missing_count(tenant=other) == 1
    assert memory_tokens_fill(tenant=tenant) == 0
    fresh = alignment.TokenEncoder()._encode([OLD])[OLD]
    loaded = memory_tokens_load(tenant=tenant, memories=[(memory.pk, OLD)])[OLD]
    assert np.array_equal(loaded.vectors, fresh.vectors)


# "they're" was a content word until the judge's word rules dropped pronoun contractions.
CONTRACTED = "Caroline says they're adopting a child next spring"


def _row(memory: Memory, *, words: int, fill: float) -> MemoryTokens:
    """A row of the memory's current text (the digest fits) with `words` vectors of one value."""
    return MemoryTokens.objects.create(
        memory=memory,
        tenant_id=memory.tenant_id,
        text_digest=alignment.text_digest(memory.text),
        words=words,
        vectors=alignment.tokens_bytes(
            alignment.TextTokens(("word",) * words, (False,) * words, np.full((words, 384), fill))
        ),
    )


def _reindex_tokens(tenant, *args: str) -> str:
    out = StringIO()
    call_command("reindex", "--tokens", "--tenant", tenant.slug, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_reindex_tokens_reports_and_refreshes_a_row_counted_by_older_word_rules_and_leaves_fitting_rows_alone(
    encoder, monkeypatch
):
    with monkeypatch.context() as older_rules:
        older_rules.setattr(alignment, "_function_contraction", lambda word: False)
        old_words = len(alignment.content_spans.__wrapped__(CONTRACTED))  # not the remembered spans
    assert old_words == len(alignment.spelled(CONTRACTED)[0]) + 1
    tenant = TenantFactory()
    stale = _row(MemoryFactory(tenant=tenant, text=CONTRACTED), words=old_words, fill=0.5)
    fitting = _row(MemoryFactory(tenant=tenant, text=OLD), words=len(alignment.spelled(OLD)[0]), fill=0.25)
    assert memory_tokens_load(tenant=tenant, memories=[(stale.memory_id, CONTRACTED)]) == {}

    out = _reindex_tokens(tenant)
    assert "0 active memories without stored token vectors" in out
    assert "1 whose stored word count" in out
    assert "dry run" in out
    stale.refresh_from_db()
    assert stale.words == old_words  # the dry run wrote nothing

    assert "stored token vectors of 1 memories" in _reindex_tokens(tenant, "--apply")
    loaded = memory_tokens_load(tenant=tenant, memories=[(stale.memory_id, CONTRACTED)])[CONTRACTED]
    fresh = alignment.TokenEncoder()._encode([CONTRACTED])[CONTRACTED]
    assert loaded.stems == fresh.stems and np.array_equal(loaded.vectors, fresh.vectors)
    untouched = MemoryTokens.objects.get(memory_id=fitting.memory_id)
    assert bytes(untouched.vectors) == bytes(fitting.vectors)  # its made-up vectors are still there
    assert encoder.encoded == 1  # only the stale text went through the model
    assert "0 whose stored word count" in _reindex_tokens(tenant)


def test_the_stale_row_scan_reads_page_after_page_and_skips_rows_of_an_older_text():
    tenant = TenantFactory()

    def stale_row(text: str, **fields) -> MemoryTokens:
        memory = MemoryFactory(tenant=tenant, text=text, **fields)
        return _row(memory, words=len(alignment.spelled(text)[0]) + 1, fill=0.5)

    first = stale_row(CONTRACTED)
    _row(MemoryFactory(tenant=tenant, text=OLD), words=len(alignment.spelled(OLD)[0]), fill=0.5)
    edited = stale_row(NEW)
    Memory.objects.filter(pk=edited.memory_id).update(text=OLD + " again")  # memory_tokens_missing's
    last = stale_row("Melanie says we're moving to Boston")
    stale_row("Jon says I'm opening a dance studio", status="superseded")
    batches = list(memory_tokens_stale(tenant=tenant, batch_size=1, chunk=1))
    assert batches == [
        [(first.memory_id, tenant.pk, CONTRACTED)],
        [(last.memory_id, tenant.pk, "Melanie says we're moving to Boston")],
    ]
    assert list(memory_tokens_stale(tenant=TenantFactory(), batch_size=1)) == []


def test_a_reindex_keeps_the_token_vectors_its_embedding_pass_computed(encoder):
    from memory_app.embeddings.local import local_embed
    from memory_app.services.maintenance.reindex import reindex_build

    tenant = TenantFactory()
    memory = MemoryFactory(tenant=tenant, text=NEW, embedding_model="old-model")
    reindex_build(tenant=tenant, model="all-MiniLM-L6-v2", embed=local_embed)
    assert encoder.encoded == 0
    assert memory_tokens_load(tenant=tenant, memories=[(memory.pk, NEW)])


def test_an_imported_memory_without_known_vectors_gets_no_row_and_the_judge_computes_it(encoder):
    tenant = TenantFactory()
    memory = MemoryFactory(tenant=tenant, text=OLD)  # as an import writes it: vectors from the file
    assert not MemoryTokens.objects.filter(memory=memory).exists()
    with memory_tokens_source(tenant=tenant, memories=[(memory.pk, OLD)]):
        encoder.tokens([OLD])
    assert encoder.encoded == 1
