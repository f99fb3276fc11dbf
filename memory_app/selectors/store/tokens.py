"""Stored content-word vectors (models.MemoryTokens) for the relation judge's word alignment.

The judge meets stored texts at three places: store-time candidates, load-time collapse of search
results and compaction. Each wraps its judging in `memory_tokens_source`, so the token encoder
reads the rows of the memories it is handed (one query for all the texts it lacks, and only when
it lacks any) instead of running the model again. A row that no longer fits its memory's text is
ignored and the encoder computes the vectors, exactly as it would without the table.

The backfill (`services/rows/tokens.memory_tokens_fill`) reads from here which memories lack a
fitting row: `memory_tokens_missing` (no row of the current text, found in SQL) and
`memory_tokens_stale` (a row of the current text whose word count the judge's current word rules
no longer give, found in Python from the text: only the rules know what a content word is; or
whose vectors are not of the current stored form's size).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from django.db.models import BinaryField, Exists, Func, IntegerField, OuterRef, QuerySet, Value

from memory_app.judge.signals.alignment import (
    WORD_BYTES,
    TextTokens,
    spelled,
    stored_tokens,
    text_digest,
    tokens_from_bytes,
)
from memory_app.models import Memory, MemoryTokens, Tenant
from memory_app.models.memory import MemoryStatus
from memory_app.selectors.store import id_batches


def memory_tokens_load(*, tenant: Tenant, memories: Sequence[tuple[int, str]]) -> dict[str, TextTokens]:
    """The stored vectors of `memories` ((id, text) pairs) that still fit their text, by text.
    One query; the memories' own rows are not read."""
    texts = dict(memories)
    if not texts:
        return {}
    rows = MemoryTokens.objects.filter(tenant=tenant, pk__any=list(texts)).values_list(
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


def memory_tokens_missing(*, tenant: Tenant | None, batch_size: int) -> Iterator[list[tuple[int, int, str]]]:
    """Batches of (id, tenant_id, text) of such memories, in id order (`id_batches`)."""
    return id_batches(_missing(tenant), ("pk", "tenant_id", "text"), batch_size=batch_size)


def memory_tokens_missing_count(*, tenant: Tenant | None) -> int:
    return _missing(tenant).count()


# Stored rows the word-count check reads per query (ids, text, digest and count: ~100 bytes a row).
SCAN_CHUNK = 2000


def memory_tokens_stale(
    *, tenant: Tenant | None, batch_size: int, chunk: int = SCAN_CHUNK
) -> Iterator[list[tuple[int, int, str]]]:
    """Batches of (id, tenant_id, text) of active memories whose row is of their current text but
    holds another number of content words than `spelled(text)` now gives (rows written before the
    judge's word rules changed) or vectors of another size than that count takes (rows of the
    float16 form written before the int8 one): every reader ignores them (`tokens_from_bytes`)
    until rewritten.

    The rows are read in memory id order, `chunk` per query (the primary key's order), with only
    the columns the check needs, never the vectors; the check runs in Python without the model. A
    batch is handed out as soon as `batch_size` are found, and the scan goes on after the last id
    read, so the rows the caller rewrites meanwhile are not read again. A row of an older text is
    `memory_tokens_missing`'s, not this one's."""
    rows = MemoryTokens.objects.filter(memory__status=MemoryStatus.ACTIVE)
    if tenant is not None:
        rows = rows.filter(tenant=tenant)
    rows = rows.annotate(size=Func("vectors", function="octet_length", output_field=IntegerField()))
    columns = ("memory_id", "tenant_id", "memory__text", "words", "text_digest", "size")
    after = 0
    found: list[tuple[int, int, str]] = []
    while True:
        page = list(rows.filter(memory_id__gt=after).order_by("memory_id").values_list(*columns)[:chunk])
        if not page:
            break
        for memory_id, tenant_id, text, words, digest, size in page:
            unfit = words != len(spelled(text)[0]) or size != words * WORD_BYTES
            if unfit and bytes(digest) == text_digest(text):
                found.append((memory_id, tenant_id, text))
                if len(found) == batch_size:
                    yield found
                    found = []
        after = page[-1][0]
    if found:
        yield found


def memory_tokens_stale_count(*, tenant: Tenant | None) -> int:
    """How many rows `memory_tokens_stale` would hand out: a full scan, no model run."""
    return sum(len(batch) for batch in memory_tokens_stale(tenant=tenant, batch_size=SCAN_CHUNK))
