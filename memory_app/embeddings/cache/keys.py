"""The embedding cache's keys: per-tenant HMACs of a text's exact and normalised forms.

A tenant's key is derived from SECRET_KEY and the tenant id, so a digest in the cache table can
neither be matched against another tenant's texts nor tested against a guessed text by anyone
without SECRET_KEY. Rotating SECRET_KEY therefore empties the cache in effect (every lookup
misses and re-embeds once); nothing else depends on these digests.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from django.conf import settings

from memory_app.text import exact_text, identity_skeleton, keyed_hash, normalize_text


def tenant_cache_key(tenant_id: int | None) -> bytes:
    """The HMAC key of one tenant's cache rows (`None`: tenant-less tools such as calibration)."""
    label = f"embedding-cache:{tenant_id if tenant_id is not None else '-'}"
    return hmac.new(settings.SECRET_KEY.encode("utf-8"), label.encode("utf-8"), hashlib.sha256).digest()


@dataclass(frozen=True)
class CacheKeys:
    tenant_id: int | None
    key: bytes

    @classmethod
    def of(cls, tenant_id: int | None) -> CacheKeys:
        return cls(tenant_id, tenant_cache_key(tenant_id))

    def exact(self, text: str) -> str:
        return keyed_hash(self.key, exact_text(text))

    def normalized(self, text: str) -> str:
        return keyed_hash(self.key, normalize_text(text))

    def skeleton(self, text: str) -> str:
        return keyed_hash(self.key, identity_skeleton(text))
