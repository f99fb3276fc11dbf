"""Lossless identity: texts that differ in a digit, sign, symbol, emoji or letter are never one
text, neither for the store's hash tier nor for the embedding cache's reuse tiers."""

from __future__ import annotations

import importlib

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_app.embeddings import embed_texts
from memory_app.models import EmbeddingCacheEntry, Memory
from memory_app.overrides import StoreOverrides
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store
from memory_app.text import exact_text, identity_skeleton, normalize_text, normalized_hash, query_pattern
from tests.factories import MemoryFactory, TenantFactory

# The pairs of the report: each was answered `duplicate_of` and the second text was lost.
REPORTED_PAIRS = [
    ("balance 200 EUR", "balance -200 EUR"),
    ("A+", "A-"),
    ("C#", "C++"),
    ("€500", "$500"),
    ("🥜", "🦐"),
    ("User's blood type is A+", "User's blood type is A-"),
    ("Favourite language: C#", "Favourite language: C++"),
    ("Budget is €500", "Budget is $500"),
    ("Allergic to 🥜", "Allergic to 🦐"),
    ("Room is 20 m²", "Room is 20 m2"),
    ("x > 3", "x < 3"),
    ("Temperature 5°C", "Temperature -5°C"),
]
# What may be folded: case, compatibility forms, whitespace, quote styles, trailing punctuation.
SAME_TEXT_PAIRS = [
    ("User likes jazz.", "user likes JAZZ"),
    ("User  likes\tjazz", "User likes jazz"),
    ("He said “hi”", 'He said "hi"'),
    ("It\u2019s raining", "It's raining"),
    ("\uff46\uff55\uff4c\uff4c width", "full width"),  # full-width letters
    ("Done!", "Done"),
    ("終わりました。", "終わりました"),
]

# Characters whose change must always make another text (letters of any script, digits of any
# script, signs, currency, math and other symbols including emoji).
PROTECTED = st.one_of(
    st.characters(categories=["Lu", "Ll", "Lt", "Lm", "Lo"]),
    st.characters(categories=["Nd"]),
    st.characters(categories=["Sc", "Sm", "So", "Sk"]),
    st.sampled_from(list("+-#%&*/=<>@^~|")),
)
CONTEXT = st.text(
    alphabet=st.one_of(st.characters(categories=["L", "Nd"]), st.sampled_from(list(" .,;:!?'\"-"))),
    max_size=30,
)


def _differing(a: str, b: str) -> bool:
    """Two characters that are not one character up to case or compatibility form."""
    return normalize_text(a) != normalize_text(b)


@pytest.mark.parametrize(("first", "second"), REPORTED_PAIRS)
def test_reported_pairs_have_different_identities(first, second):
    assert normalized_hash(first) != normalized_hash(second)
    assert identity_skeleton(first) != identity_skeleton(second)


@pytest.mark.parametrize(("first", "second"), SAME_TEXT_PAIRS)
def test_meaning_preserving_variants_share_the_normalised_identity(first, second):
    assert normalize_text(first) == normalize_text(second)


def test_the_exact_tier_is_nfc_and_trimmed_only():
    assert exact_text("  Cafe\u0301 ") == "Café"
    assert exact_text("Café") != exact_text("café")


def test_a_question_is_not_the_statement():
    assert normalize_text("User likes cats?") != normalize_text("User likes cats.")


def test_procedure_patterns_keep_their_coarse_rule():
    assert query_pattern("Weekly summary?") == query_pattern("weekly  summary") == "weekly summary"


@settings(max_examples=400, deadline=None)
@given(prefix=CONTEXT, suffix=CONTEXT, a=PROTECTED, b=PROTECTED)
def test_texts_differing_in_one_protected_character_never_share_a_normalised_identity(prefix, suffix, a, b):
    if not _differing(a, b):
        return
    first, second = prefix + a + suffix, prefix + b + suffix
    assert normalized_hash(first) != normalized_hash(second), (first, second)
    assert identity_skeleton(first) != identity_skeleton(second), (first, second)


# --- through the write path --------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("deduplicate", [True, False])
@pytest.mark.parametrize(("first", "second"), REPORTED_PAIRS[:5])
def test_a_reported_pair_is_stored_as_two_memories(first, second, deduplicate):
    tenant = TenantFactory()
    options = StoreOverrides(deduplicate=deduplicate)
    memory_store(tenant=tenant, items=[MemoryInput(text=first, user_id="u1")], options=options)
    [two] = memory_store(tenant=tenant, items=[MemoryInput(text=second, user_id="u1")], options=options)
    assert two.outcome != "duplicate_of"
    if not deduplicate:
        assert two.outcome == "created"
        assert set(Memory.objects.filter(tenant=tenant).values_list("text", flat=True)) == {first, second}


@pytest.mark.parametrize(("first", "second"), REPORTED_PAIRS[:5])
def test_the_api_stores_both_texts_of_a_reported_pair(tenant_a, first, second):
    url = "/api/v1/memories?deduplicate=false"
    assert tenant_a.client.post(url, {"text": first, "user_id": "u1"}, format="json").status_code == 201
    response = tenant_a.client.post(url, {"text": second, "user_id": "u1"}, format="json")
    assert response.status_code == 201 and response.json()["outcome"] == "created"


@pytest.mark.django_db
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(prefix=CONTEXT, a=PROTECTED, b=PROTECTED, deduplicate=st.booleans())
def test_stores_differing_in_one_protected_character_are_never_duplicate_of(prefix, a, b, deduplicate):
    first, second = f"{prefix} {a} note", f"{prefix} {b} note"
    if not _differing(a, b) or not first.strip():
        return
    tenant = TenantFactory()
    options = StoreOverrides(deduplicate=deduplicate)
    memory_store(tenant=tenant, items=[MemoryInput(text=first, user_id="u")], options=options)
    [out] = memory_store(tenant=tenant, items=[MemoryInput(text=second, user_id="u")], options=options)
    assert out.outcome != "duplicate_of"
    if not deduplicate:
        assert out.outcome == "created"


# --- through the embedding cache ---------------------------------------------------------------
@pytest.mark.django_db
@override_settings(EMBEDDING_NEAR_DUP="on")
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(prefix=CONTEXT, a=PROTECTED, b=PROTECTED)
def test_texts_differing_in_one_protected_character_never_share_a_cache_entry(prefix, a, b):
    first, second = f"{prefix} {a} was noted in the diary today", f"{prefix} {b} was noted in the diary today"
    if not _differing(a, b):
        return
    tenant = TenantFactory()
    embed_texts([first], tenant=tenant)
    embed_texts([second], tenant=tenant)
    # A reuse (normalised or near tier) would create no second row.
    assert EmbeddingCacheEntry.objects.filter(tenant=tenant).count() == 2


@pytest.mark.django_db
@override_settings(EMBEDDING_NEAR_DUP="on")
@pytest.mark.parametrize(("first", "second"), REPORTED_PAIRS)
def test_reported_pairs_never_share_a_cache_entry_even_in_one_call(first, second):
    tenant = TenantFactory()
    embed_texts([first, second], tenant=tenant)
    assert EmbeddingCacheEntry.objects.filter(tenant=tenant).count() == 2


# --- the migration that recomputes stored hashes ------------------------------------------------
@pytest.mark.django_db
def test_the_migration_recomputes_old_hashes_without_tripping_the_unique_constraint():
    from django.apps import apps
    from django.db import connection

    migration = importlib.import_module("memory_app.migrations.0008_text_hash_lossless")
    tenant = TenantFactory()
    old = lambda text: normalized_hash(query_pattern(text))  # noqa: E731 (the old rule's digest)
    rows = [
        MemoryFactory(tenant=tenant, user_id="u", text="balance 200 EUR", text_hash=old("balance 200 EUR")),
        MemoryFactory(tenant=tenant, user_id="v", text="balance -200 EUR", text_hash=old("balance -200 EUR")),
        MemoryFactory(tenant=tenant, user_id="u", text="C++ expert", text_hash=old("C++ expert")),
        MemoryFactory(
            tenant=tenant, user_id="u", text="C expert", status="superseded", text_hash=old("C expert")
        ),
    ]

    class Editor:
        pass

    editor = Editor()
    editor.connection = connection  # type: ignore[attr-defined]
    migration.recompute(apps, editor)
    for row in rows:
        row.refresh_from_db()
        assert row.text_hash == normalized_hash(row.text)
    migration.recompute(apps, editor)  # resumable: a second run changes nothing
