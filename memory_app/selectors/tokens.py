"""Stored content-word vectors (models.MemoryTokens) for the relation judge's word alignment.

The judge meets stored texts at three places: store-time candidates, load-time collapse of search
results and compaction. Each wraps its judging in `memory_tokens_source`, so the token encoder
reads the rows of the memories it is handed (one query for all the texts it lacks, and only when
it lacks any) instead of running the model again. A row that no longer fits its memory's text is
ignored and the encoder computes the vectors, exactly as it would without the table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from django.db.models import BinaryField, Exists, Func, OuterRef, QuerySet, Value

from memory_app.judge.alignment import TextTokens, stored_tokens, text_digest, tokens_from_bytes
from memory_app.models import Memory, MemoryTokens, Tenant
from memory_app.models.memory import MemoryStatus


def memory_tokens_load(*, tenant: Tenant, memories: Sequence[tuple[int, str]]) -> dict[str, TextTokens]:
    """The stored vectors of `memories` ((id, text) pairs) that still fit their text, by text.
    One query; the memories' own rows are not read."""
    texts = dict(memories)
    if not texts:
        return {}
    rows = MemoryTokens.objects.filter(tenant=tenant, memory_id__in=list(texts)).values_list(
        "memory_id", "text_digest", "words", "vectors"
    )
    found = {}
    for memory_id, digest, words, data in rows:
        text = texts[memory_id]
        if bytes(digest) != text_digest(text):
            continue  # the text changed since the row was written
        tokens = tokens_from_bytes(text, words, bytes(data))
        if tokens is not None:
            found[text] = tokens
    return found


@contextmanager
def memory_tokens_source(*, tenant: Tenant, memories: Sequence[tuple[int, str]]) -> Iterator[None]:
    """Within the block, the token encoder takes the vectors of these memories' texts from their
    stored rows (read lazily, in one query per encoder call that lacks any) before it runs the model."""
    ids: dict[str, int] = {}
    for memory_id, text in memories:
        ids.setdefault(text, memory_id)

    def load(texts: Sequence[str]) -> Mapping[str, TextTokens]:
        wanted = [(ids[text], text) for text in texts if text in ids]
        return memory_tokens_load(tenant=tenant, memories=wanted) if wanted else {}

    with stored_tokens(load):
        yield


def _missing(tenant: Tenant | None) -> QuerySet[Memory]:
    """Active memories without a row for their current text (none, or one of an older text)."""
    digest = Func(
        Func(OuterRef("text"), Value("UTF8"), function="convert_to", output_field=BinaryField()),
        function="sha256",
        output_field=BinaryField(),
    )
    fitting = MemoryTokens.objects.filter(memory=OuterRef("pk"), text_digest=digest)
    qs = Memory.objects.filter(status=MemoryStatus.ACTIVE)
    if tenant is not None:
        qs = qs.filter(tenant=tenant)
    return qs.exclude(Exists(fitting))


def memory_tokens_missing(*, tenant: Tenant | None, after: int, limit: int) -> list[tuple[int, int, str]]:
    """(id, tenant_id, text) of the next `limit` such memories after id `after`, in id order."""
    return list(
        _missing(tenant).filter(pk__gt=after).order_by("pk").values_list("pk", "tenant_id", "text")[:limit]
    )


def memory_tokens_missing_count(*, tenant: Tenant | None) -> int:
    return _missing(tenant).count()
