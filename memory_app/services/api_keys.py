"""Tenants and API keys. A key is shown once; only its SHA-256 is kept."""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from memory_app.db import checked_by_first_statement, fetch_all_prepared, models_from_rows
from memory_app.db_routing import read_alias
from memory_app.errors import ApplicationError
from memory_app.models import ApiKey, Tenant

KEY_PREFIX = "mem"
# Writing last_used_at on every request would turn each read into a write; once a minute is enough.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    raw_key: str


def _hash(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


@transaction.atomic
def tenant_create(*, name: str, slug: str | None = None) -> Tenant:
    name = name.strip()
    if not name:
        raise ApplicationError("Tenant name must not be empty.", fields={"name": ["This field is required."]})
    slug_value = slugify(slug or name)[:100]
    if not slug_value:
        raise ApplicationError("Tenant name needs letters or digits.", fields={"name": ["Invalid name."]})
    if Tenant.objects.filter(slug=slug_value).exists():
        raise ApplicationError(f"A tenant with slug {slug_value!r} exists.", code="conflict", status=409)
    return Tenant.objects.create(name=name, slug=slug_value)


@transaction.atomic
def api_key_issue(*, tenant: Tenant, name: str = "") -> IssuedKey:
    prefix = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    raw_key = f"{KEY_PREFIX}_{prefix}_{secret}"
    api_key = ApiKey.objects.create(tenant=tenant, name=name, prefix=prefix, key_hash=_hash(raw_key))
    return IssuedKey(api_key=api_key, raw_key=raw_key)


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


def api_key_authenticate(*, raw_key: str) -> ApiKey | None:
    """The key's row when the key is valid, active and its tenant active; None otherwise."""
    parts = raw_key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    api_key = _key_with_tenant(parts[1])
    if api_key is None or api_key.revoked_at is not None or not api_key.tenant.is_active:
        return None
    if not hmac.compare_digest(api_key.key_hash, _hash(raw_key)):
        return None
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key


@functools.cache
def _key_statement() -> str:
    columns = [f"k.{f.column}" for f in ApiKey._meta.concrete_fields]
    columns += [f"t.{f.column}" for f in Tenant._meta.concrete_fields]
    return (
        f"SELECT {', '.join(columns)} FROM {ApiKey._meta.db_table} k "
        f"JOIN {Tenant._meta.db_table} t ON t.id = k.tenant_id WHERE k.prefix = %s"
    )


def _key_with_tenant(prefix: str) -> ApiKey | None:
    """The key of `prefix` (unique: apikey_prefix_unique) with its tenant, from one statement
    written once (building the equivalent queryset cost every request about a millisecond) and
    prepared on the connection (planned once, not on every request)."""
    alias = read_alias()
    # A request's first statement: it checks the connection in place of Django's SELECT 1.
    rows = checked_by_first_statement(
        lambda: fetch_all_prepared(_key_statement(), [prefix], using=alias), aliases=[alias]
    )
    if not rows:
        return None
    row = rows[0]
    width = len(ApiKey._meta.concrete_fields)
    [api_key] = models_from_rows(ApiKey, ApiKey._meta.concrete_fields, [row], using=alias)
    [api_key.tenant] = models_from_rows(Tenant, Tenant._meta.concrete_fields, [row[width:]], using=alias)
    return api_key
