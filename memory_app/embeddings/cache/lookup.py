"""The embedding cache in front of the provider: exact hash, normalised hash, near duplicate.

Private per tenant: every tier looks only at the calling tenant's rows, and the row keys are
HMACs under the tenant's key (keys.py). The tiers follow the lossless identity of memory_app/text.py:
the normalised tier folds only case, compatibility forms, whitespace, quote styles and trailing
punctuation; the near tier reuses only between texts of equal identity skeleton, so texts that
differ in a digit, sign, symbol, emoji or letter never share an embedding.

Everything here is per text but done in batch: one query per tier for a whole call, one provider
call for all the misses, one INSERT for the new rows. Identical texts within a call are looked up
once. Cache SQL runs in a savepoint when the caller is inside a transaction, so a broken cache
table or index costs one warning and a provider call, never the caller's write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from django.db import connection, transaction
from pgvector.django.vector import Vector

from memory_app.conf import embeddings_config
from memory_app.db import execute_all, fetch_all_prepared, insert_sql, set_local_sql
from memory_app.embeddings.breaker import provider_embed_begin
from memory_app.embeddings.cache.keys import CacheKeys
from memory_app.embeddings.cache.near import (
    index_state,
    near_dup_enabled,
    near_lookup,
    near_reuse,
    proxy_vectors,
)
from memory_app.embeddings.cache.sketch import surface_sketches
from memory_app.embeddings.cache.stats import CACHE_ERRORS, BatchCounts, stats_record
from memory_app.embeddings.providers import EmbeddingProvider
from memory_app.embeddings.tokens import count_tokens
from memory_app.models import EmbeddingCacheEntry, Memory
from memory_app.text import exact_text, normalized_hash

logger = logging.getLogger(__name__)
T = TypeVar("T")


class _CacheHealth:
    """One warning when the cache table starts failing, one info line when it recovers."""

    broken = False

    def failed(self, stage: str, exc: Exception) -> None:
        if not self.broken:
            logger.warning("embedding cache unavailable at %s (%s); embedding without it", stage, exc)
        self.broken = True

    def worked(self) -> None:
        if self.broken:
            logger.info("embedding cache available again")
        self.broken = False


health = _CacheHealth()


def _guarded(stage: str, work: Callable[[], T], *, own_transaction: bool = False) -> T | None:
    """Run cache SQL so that its failure can neither raise nor poison the caller's transaction."""
    try:
        if connection.in_atomic_block or own_transaction:
            with transaction.atomic():
                return work()
        return work()
    except CACHE_ERRORS as exc:
        health.failed(stage, exc)
        return None


@dataclass
class _Item:
    """One distinct text of the call (identical texts share an item)."""

    text: str
    chash: str
    positions: list[int]
    nhash: str = ""
    skeleton: str = ""
    vector: np.ndarray | None = None
    tier: str = ""
    tokens: int | None = None
    proxy: np.ndarray | None = None
    sketch: np.ndarray | None = None
    hit_entry: int | None = None
    leader: _Item | None = None  # another item of this call whose embedding this one reuses
    followers: list[_Item] = field(default_factory=list)


def cached_embed(texts: list[str], provider: EmbeddingProvider, *, tenant_id: int | None) -> np.ndarray:
    return cached_embed_begin(texts, provider, tenant_id=tenant_id).finish()


def cached_embed_begin(
    texts: list[str], provider: EmbeddingProvider, *, tenant_id: int | None, query: bool = False
) -> PendingEmbedding:
    """The cache tiers now, and the provider started for the misses (`provider_embed_begin`: the
    local model runs on its batcher's thread while the caller goes on). The rows come from the
    returned object's `vectors()`, and `finish()` writes the new cache rows and the statistics.

    `query`: the texts are a search's query, which waits for its vector. A local model's query is
    answered by its own pass and the cache is neither read nor written: a hit could save only the
    wait for a pass that costs no money, while the lookup, beside that pass, cost every search
    ~0.75 ms (its round trip and its Python contend with the pass for the GIL and the cores), and a
    cache row for it ~1.3 ms (bench/peer.py's queries). A remote provider's query is looked up and
    cached as any other text: a hit there saves a paid call."""
    model = provider.model
    keys = CacheKeys.of(tenant_id)
    items: dict[str, _Item] = {}
    for position, text in enumerate(texts):
        chash = keys.exact(text)
        item = items.get(chash)
        if item is None:
            items[chash] = _Item(text=text, chash=chash, positions=[position])
        else:
            item.positions.append(position)

    distinct = list(items.values())
    near = near_dup_enabled(provider_is_remote=provider.is_remote)
    own_pass = query and not near and not provider.is_remote
    wait: Callable[[], np.ndarray] | None
    if own_pass:
        todo = distinct
        wait = provider_embed_begin(provider, [item.text for item in todo], query=True)
    else:
        todo = _hash_tiers(keys, model, distinct)
        if near and todo:
            todo = _near_tier(keys, model, todo)
        wait = provider_embed_begin(provider, [item.text for item in todo]) if todo else None
    return PendingEmbedding(
        count=len(texts),
        provider=provider,
        keys=keys,
        items=items,
        todo=todo,
        near=near,
        wait=wait,
        cache_misses=not own_pass,
    )


@dataclass
class PendingEmbedding:
    """One embed call between its cache lookups and its provider's answer (`cached_embed_begin`)."""

    count: int
    provider: EmbeddingProvider
    keys: CacheKeys
    items: dict[str, _Item]
    todo: list[_Item]  # the misses, in the order the provider was given them
    near: bool
    wait: Callable[[], np.ndarray] | None
    cache_misses: bool = True  # False: a local query's (`cached_embed_begin`)
    _out: np.ndarray | None = None
    _finished: bool = False

    def vectors(self) -> np.ndarray:
        """The rows in input order, once the provider has answered (its error is raised here)."""
        if self._out is None:
            if self.wait is not None:
                for item, vector in zip(self.todo, self.wait(), strict=True):
                    item.vector, item.tier = vector, "miss"
            for item in self.items.values():
                if item.leader is not None:
                    item.vector = item.leader.vector
            out = np.empty((self.count, self.provider.dimensions), dtype=np.float32)
            for item in self.items.values():
                out[item.positions] = item.vector
            self._out = out
        return self._out

    def finish(self, *, held: Collection[str] = ()) -> np.ndarray:
        """`vectors()`, with the misses written to the cache and the call counted (once).

        `held`: texts the caller has stored as memories with these vectors. Their rows answer the
        hash tiers (`_hash_tiers`), so a miss among them gets no cache row: its vector is kept
        once, not twice (a cache row is about as large as the memory row). With the near tier on
        (a remote provider) every miss is written, since only a cache row carries the proxy vector
        that tier searches."""
        out = self.vectors()
        if self._finished:
            return out
        self._finished = True
        model = self.provider.model
        kept = set() if self.near else {exact_text(text) for text in held}
        for item in self.todo:
            # Counted here, not in vectors(): only the cache row and the statistics need it, and a
            # search waits for vectors() (~0.2 ms a text).
            item.tokens = count_tokens(item.text, model)
        misses = [item for item in self.todo if exact_text(item.text) not in kept]
        if misses and self.cache_misses:
            _cache_misses(self.provider, misses, keys=self.keys, with_proxy=self.near)
        todo_texts = [i.text for i in self.todo]
        counts = BatchCounts(provider_calls=self.provider.requests_for(todo_texts) if self.todo else 0)
        hit_ids: list[int] = []
        for item in self.items.values():
            _count(counts, item, model)
            if item.hit_entry is not None:
                hit_ids.append(item.hit_entry)
        stats_record(model=model, counts=counts, hit_entry_ids=hit_ids, tenant_id=self.keys.tenant_id)
        logger.debug(
            "embed batch model=%s texts=%d exact=%d normalized=%d near=%d misses=%d",
            model,
            self.count,
            counts.exact_hits,
            counts.normalized_hits,
            counts.near_hits,
            counts.misses,
        )
        return out


def _count(counts: BatchCounts, item: _Item, model: str) -> None:
    tokens = item.tokens if item.tokens is not None else count_tokens(item.text, model)
    repeats = len(item.positions) - 1  # later copies in the same call cost nothing
    counts.exact_hits += repeats
    counts.tokens_avoided += repeats * tokens
    if item.tier == "miss":
        counts.misses += 1
        counts.tokens_embedded += tokens
        return
    counts.tokens_avoided += tokens
    if item.tier == "exact":
        counts.exact_hits += 1
    elif item.tier == "normalized":
        counts.normalized_hits += 1
    else:
        counts.near_hits += 1


def _tenant_sql(keys: CacheKeys) -> tuple[str, list[int]]:
    """The tenant condition as the unique index's leading column can serve it (`=` or IS NULL)."""
    if keys.tenant_id is None:
        return "tenant_id IS NULL", []
    return "tenant_id = %s", [keys.tenant_id]


def _hash_tiers(keys: CacheKeys, model: str, todo: list[_Item]) -> list[_Item]:
    """The exact tier, then the normalised one for the texts it missed, then the tenant's active
    memories of the same normalised text, read in one statement (every embed call of a store,
    search and /context/all makes it: one round trip, not three). A text with an exact row ignores
    the normalised rows of its hash that come with it.

    The memory rows stand in for the cache rows the store path no longer writes (`finish(held=)`):
    a stored text's vector is kept once, in its memory, which answers for it as an exact hit when
    the texts are equal and as a normalised one otherwise (memory.text_hash is the SHA-256 of the
    same normal form the normalised tier folds to)."""
    table = EmbeddingCacheEntry._meta.db_table
    by_hash = {item.chash: item for item in todo}
    groups: dict[str, list[_Item]] = {}
    plain: dict[str, str] = {}  # memory.text_hash (plain SHA-256) -> the group's keyed hash
    for item in todo:
        item.nhash = keys.normalized(item.text)
        groups.setdefault(item.nhash, []).append(item)
        plain[normalized_hash(item.text)] = item.nhash
    tenant_sql, tenant_args = _tenant_sql(keys)

    def lookup() -> list[tuple[int, int, str, list[float], int | None, str | None]]:
        # Raw SQL and real[] (parsed by psycopg in C, twice as fast as vector text): the hot path,
        # on the unique index embcache_tenant_hash_unique, then embcache_tenant_norm_idx, then
        # memory_active_text_unique (its leading columns are tenant_id, text_hash).
        sql = (
            f"(SELECT 0, id, content_hash, embedding::real[], token_count, NULL FROM {table} "
            f"WHERE {tenant_sql} AND model = %s AND content_hash = ANY(%s)) "
            "UNION ALL "
            f"(SELECT DISTINCT ON (normalized_hash) 1, id, normalized_hash, embedding::real[], "
            f"token_count, NULL FROM {table} WHERE {tenant_sql} AND model = %s "
            "AND normalized_hash = ANY(%s) ORDER BY normalized_hash, id)"
        )
        params: list[object] = [*tenant_args, model, list(by_hash), *tenant_args, model, list(groups)]
        if keys.tenant_id is not None:  # tenant-less tools store no memories
            sql += (
                " UNION ALL "
                f"(SELECT DISTINCT ON (text_hash, text) 2, id, text_hash, embedding::real[], NULL, text "
                f"FROM {Memory._meta.db_table} WHERE tenant_id = %s AND text_hash = ANY(%s) "
                "AND status = 'active' AND embedding_model = %s AND embedding IS NOT NULL "
                "ORDER BY text_hash, text, id)"
            )
            params += [keys.tenant_id, list(plain), model]
        # Prepared: the same statement on every embed call, planned once per connection (planning
        # was ~0.3 of its ~0.4 ms in PostgreSQL).
        return fetch_all_prepared(sql, params)

    rows = _guarded("lookup", lookup)
    if rows is None:
        return todo
    health.worked()
    normalized: dict[str, tuple[int, list[float]]] = {}  # keyed hash -> the oldest cache row
    stored: dict[str, list[tuple[str, list[float]]]] = {}  # keyed hash -> (text, vector) of memories
    for source, entry_id, key, embedding, tokens, text in rows:
        if source == 0:
            item = by_hash[key]
            item.vector, item.tier, item.tokens, item.hit_entry = _vec(embedding), "exact", tokens, entry_id
        elif source == 1:
            normalized[key] = (entry_id, embedding)
        else:
            stored.setdefault(plain[key], []).append((exact_text(text or ""), embedding))
    for nhash, group in groups.items():
        for item in group:
            if not item.tier:
                _from_tiers(item, normalized.get(nhash), stored.get(nhash, []))
    remaining = []
    for group in groups.values():
        group = [item for item in group if not item.tier]
        if not group:
            continue
        leader, *rest = group
        remaining.append(leader)
        for item in rest:  # normalised-equal texts of this call: embed the first, reuse it
            item.tier, item.leader = "normalized", leader
    return remaining


def _from_tiers(
    item: _Item, normalized: tuple[int, list[float]] | None, stored: list[tuple[str, list[float]]]
) -> None:
    """An item's vector from what the lookup found for its normal form, as the cache rows of every
    stored text would have given it: a memory of the very text (its exact row), else the oldest
    cache row of the normal form, else a memory of it."""
    exact = exact_text(item.text)
    same = next((vector for text, vector in stored if text == exact), None)
    if same is not None:
        item.vector, item.tier = _vec(same), "exact"
    elif normalized is not None:
        item.vector, item.tier, item.hit_entry = _vec(normalized[1]), "normalized", normalized[0]
    elif stored:
        item.vector, item.tier = _vec(stored[0][1]), "normalized"


def _near_tier(keys: CacheKeys, model: str, todo: list[_Item]) -> list[_Item]:
    texts = [item.text for item in todo]
    for item, proxy, sketch in zip(todo, proxy_vectors(texts), surface_sketches(texts), strict=True):
        item.proxy, item.sketch = proxy, sketch
        item.skeleton = keys.skeleton(item.text)
    matches = None
    if not health.broken and index_state.check():
        proxies = np.stack([item.proxy for item in todo])  # type: ignore[misc]
        nested = connection.in_atomic_block
        matches = _guarded(
            "near-duplicate lookup",
            lambda: near_lookup(model=model, proxies=proxies, restore=nested, tenant_id=keys.tenant_id),
            own_transaction=True,
        )
        if matches is None:
            index_state.set(False, "lookup failed")
    remaining: list[_Item] = []
    for i, item in enumerate(todo):
        logger.debug("semantic dedup check model=%s hash=%s", model, item.chash[:16])
        match = matches[i] if matches else None
        surface = _surface(item, match.sketch) if match is not None else 0.0
        same_identity = match is not None and match.skeleton_hash == item.skeleton
        if same_identity and near_reuse(proxy_score=match.score, surface_score=surface):  # type: ignore[union-attr]
            item.vector, item.tier, item.hit_entry = match.embedding, "near", match.entry_id  # type: ignore[union-attr]
            _log_hit(model, match.score, surface, item.chash, match.content_hash)  # type: ignore[union-attr]
            continue
        leader = _batch_leader(model, item, remaining)
        if leader is not None:
            item.tier, item.leader = "near", leader
            continue
        logger.info(
            "semantic dedup miss model=%s score=%s surface=%.4f threshold=%.3f hash=%s",
            model,
            f"{match.score:.4f}" if match is not None else "none",
            surface,
            embeddings_config().near_dup_threshold,
            item.chash[:16],
        )
        remaining.append(item)
    return remaining


def _surface(item: _Item, other: np.ndarray | None) -> float:
    return float(item.sketch @ other) if other is not None and item.sketch is not None else 0.0


def _log_hit(model: str, score: float, surface: float, chash: str, reused: str) -> None:
    logger.info(
        "semantic dedup hit model=%s score=%.4f surface=%.4f threshold=%.3f hash=%s reused=%s",
        model,
        score,
        surface,
        embeddings_config().near_dup_threshold,
        chash[:16],
        reused[:16],
    )


def _batch_leader(model: str, item: _Item, leaders: list[_Item]) -> _Item | None:
    """A near-identical text earlier in this same call, whose embedding this one can share."""
    if not leaders:
        return None
    scores = np.stack([leader.proxy for leader in leaders]) @ item.proxy  # type: ignore[misc]
    for best in np.argsort(-scores)[:3]:
        leader = leaders[int(best)]
        if leader.skeleton != item.skeleton:
            continue
        surface = _surface(item, leader.sketch)
        if near_reuse(proxy_score=float(scores[best]), surface_score=surface):
            _log_hit(model, float(scores[best]), surface, item.chash, leader.chash)
            return leader
    return None


def _cache_misses(
    provider: EmbeddingProvider, todo: list[_Item], *, keys: CacheKeys, with_proxy: bool
) -> None:
    if health.broken or not embeddings_config().cache_enabled:
        return
    rows = [
        EmbeddingCacheEntry(
            tenant_id=keys.tenant_id,
            model=provider.model,
            dimensions=provider.dimensions,
            content_hash=item.chash,
            normalized_hash=item.nhash or keys.normalized(item.text),
            skeleton_hash=item.skeleton or keys.skeleton(item.text),
            embedding=item.vector,
            proxy_embedding=item.proxy if with_proxy else None,
            surface_sketch=item.sketch if with_proxy else None,
            token_count=item.tokens or 0,
        )
        for item in todo
    ]
    # A concurrent writer may have cached the same text a moment ago: theirs is as good as ours.
    _guarded("insert", lambda: _insert(rows))


def _insert(rows: list[EmbeddingCacheEntry]) -> None:
    if connection.in_atomic_block:  # the caller's transaction (a savepoint of it): its durability stays
        EmbeddingCacheEntry.objects.bulk_create(rows, ignore_conflicts=True)
        return
    # On its own the commit need not wait for the WAL flush: a row lost in a server crash is only a
    # cache miss, embedded again on the next call (a search paid ~3-7 ms for the flush). The setting
    # and the INSERT go as one implicit transaction in one round trip, not four (BEGIN, the setting,
    # the INSERT, COMMIT): every search with a new query writes one row.
    sql, params = insert_sql(EmbeddingCacheEntry, rows)
    execute_all([set_local_sql({"synchronous_commit": "off"}), (f"{sql} ON CONFLICT DO NOTHING", params)])


def _vec(value: object) -> np.ndarray:
    if isinstance(value, str):
        value = Vector._from_db(value)
    return np.asarray(value, dtype=np.float32)
