"""Where a memory keeps its text's fact reading (beside its token vectors, judge/facts.py), and a
search's collapse reading the kept ones rather than the texts. Real local model."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from memory_app.judge import facts
from memory_app.judge.facts import read_facts, reading_decode, reading_encode
from memory_app.judge.signals import quantities
from memory_app.judge.signals import text_norm as tn
from memory_app.models import Memory, MemoryTokens
from memory_app.overrides import StoreOverrides
from memory_app.retrieval.dedup import clear_verdict_cache
from memory_app.selectors.search.query import SearchFilters, SearchOptions, memory_search
from memory_app.services.store.edit import memory_update
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

# One sentence told of five people: near duplicates by distance that the fact check keeps apart.
PEOPLE = ("Kalomi", "Bepura", "Tenasi", "Morvel", "Quanta")
SENTENCE = "mentioned that a man is playing a flute by the river"


def _store(tenant, *texts: str) -> list[int]:  # type: ignore[no-untyped-def]
    outcomes = memory_store(
        tenant=tenant,
        items=[MemoryInput(text=text, user_id="u1") for text in texts],
        options=StoreOverrides(deduplicate=False),
    )
    return [outcome.memory_id for outcome in outcomes]


def _kept(pk: int) -> facts.FactReading | None:
    return reading_decode(Memory.objects.get(pk=pk).text, MemoryTokens.objects.get(pk=pk).fact_reading)


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the fact check reads from here on, by any of the rules a kept reading stands for."""
    read: list[str] = []

    def spied(module, name: str) -> None:  # type: ignore[no-untyped-def]
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda text: read.append(text) or real(text))

    for module, name in ((tn, "numbers"), (tn, "content_words"), (facts, "names"), (quantities, "spans")):
        spied(module, name)
    clear_verdict_cache()
    return read


def _search(tenant):  # type: ignore[no-untyped-def]
    clear_verdict_cache()
    return memory_search(
        tenant=tenant,
        query="who plays the flute by the river",
        filters=SearchFilters(user_id="u1"),
        limit=5,
        options=SearchOptions(deduplicate=True),
    )


def test_a_stored_memory_keeps_the_reading_of_its_text():
    text = "Caroline moved from Sweden 4 years ago and paid $1,800 for the flight."
    [pk] = _store(TenantFactory(), text)
    assert _kept(pk) == read_facts(text)


def test_a_text_corrected_in_place_is_never_read_by_the_reading_of_its_old_text():
    """Names are read from capitals: a correction of case alone changes the reading. The token row
    is rewritten only when the encoder holds the new text (here the cache gave its vector), so the
    old text's reading may stay beside it, and is then not taken for the new text."""
    tenant = TenantFactory()
    [pk] = _store(tenant, "user met anna in paris")
    memory_update(tenant=tenant, memory_id=pk, changes={"text": "user met Anna in Paris"})
    assert _kept(pk) in (None, read_facts("user met Anna in Paris"))
    assert read_facts("user met Anna in Paris").names == {"Anna", "Paris"}


def test_a_search_collapse_reads_the_kept_readings_not_the_texts(monkeypatch):
    tenant = TenantFactory()
    ids = _store(tenant, *(f"{name} {SENTENCE}." for name in PEOPLE))
    read = _spy(monkeypatch)
    hits = _search(tenant).hits
    assert sorted(m for hit in hits for m in hit.member_ids) == sorted(ids)
    assert all(len(hit.member_ids) == 1 for hit in hits)  # each names another person
    assert not {f"{name} {SENTENCE}." for name in PEOPLE} & set(read)


def test_a_row_without_a_kept_reading_is_read_again_and_decided_the_same(monkeypatch):
    tenant = TenantFactory()
    texts = [f"{name} {SENTENCE}." for name in PEOPLE]
    ids = _store(tenant, *texts)
    kept = [sorted(hit.member_ids) for hit in _search(tenant).hits]
    MemoryTokens.objects.filter(pk=ids[2]).update(fact_reading="")
    MemoryTokens.objects.filter(pk=ids[3]).update(fact_reading=reading_encode("another text"))
    read = _spy(monkeypatch)
    assert [sorted(hit.member_ids) for hit in _search(tenant).hits] == kept
    assert {texts[2], texts[3]} <= set(read)


def test_reindex_readings_keeps_the_readings_of_rows_written_without_one_and_only_those():
    tenant, other = TenantFactory(), TenantFactory()
    loaded = [*_store(tenant, "Anna runs 5 km", "Bob bakes bread"), *_store(other, "Carla sings")]
    [older] = _store(other, "Dan paints the fence")
    [current] = _store(tenant, "Eve reads at night")
    MemoryTokens.objects.filter(pk__in=loaded).update(fact_reading="")
    MemoryTokens.objects.filter(pk=older).update(fact_reading="0\tabc")
    before = MemoryTokens.objects.values_list("fact_reading", flat=True).get(pk=current)
    out = StringIO()
    call_command("reindex", "--readings", stdout=out)
    assert "4 token rows without a fact reading" in out.getvalue()
    assert MemoryTokens.objects.get(pk=loaded[0]).fact_reading == ""  # a dry run writes nothing
    call_command("reindex", "--readings", "--apply", stdout=out)
    for pk in (*loaded, older):
        assert _kept(pk) == read_facts(Memory.objects.get(pk=pk).text)
    assert MemoryTokens.objects.values_list("fact_reading", flat=True).get(pk=current) == before
    call_command("reindex", "--readings", stdout=out)
    assert "0 token rows without a fact reading" in out.getvalue().splitlines()[-2]
