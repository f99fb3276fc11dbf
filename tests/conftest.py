from __future__ import annotations

from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from memory_app.models import Tenant
from memory_app.services.api_keys import api_key_issue
from tests.factories import TenantFactory
from tests.support.respx_httpx2 import install as install_respx_httpx2

# Every statement the service sends to a tenant-owned table names its tenant (docs/SCALING.md); on a
# Citus cluster, the tests that cannot pass there yet are skipped with their reason (citus_gaps).
pytest_plugins = ["tests.support.tenant_predicate", "tests.support.citus_gaps"]

# respx must also see the OpenAI SDK's httpx2 transport (tests/support/respx_httpx2.py).
install_respx_httpx2()


@dataclass
class TenantClient:
    """An API client authenticated as one tenant."""

    tenant: Tenant
    client: APIClient
    raw_key: str


def _tenant_client(name: str) -> TenantClient:
    tenant = TenantFactory(name=name, slug=name.lower().replace(" ", "-"))
    issued = api_key_issue(tenant=tenant, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}")
    return TenantClient(tenant=tenant, client=client, raw_key=issued.raw_key)


@pytest.fixture
def tenant_a(db) -> TenantClient:  # type: ignore[no-untyped-def]
    return _tenant_client("Tenant A")


@pytest.fixture
def tenant_b(db) -> TenantClient:  # type: ignore[no-untyped-def]
    """A second tenant: the one that must never see tenant A's data."""
    return _tenant_client("Tenant B")


@pytest.fixture
def anon_client() -> APIClient:
    return APIClient()


# --- admin (review screens) ---------------------------------------------------------------
REVIEWER_PERMISSIONS = (
    "view_duplicatecluster",
    "change_duplicatecluster",
    "view_memory",
    "view_memorychange",
    "change_memorychange",
)


def _admin_user(username: str, *, is_staff: bool, permissions: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    user = get_user_model().objects.create_user(username, password="pw-" + username, is_staff=is_staff)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="memory_app", codename__in=permissions)
    )
    return user


@pytest.fixture
def reviewer(db):  # type: ignore[no-untyped-def]
    """A staff user with the review permissions (not a superuser)."""
    return _admin_user("reviewer", is_staff=True, permissions=REVIEWER_PERMISSIONS)


@pytest.fixture
def staff_without_permission(db):  # type: ignore[no-untyped-def]
    return _admin_user("bystander", is_staff=True)


@pytest.fixture
def non_staff(db):  # type: ignore[no-untyped-def]
    return _admin_user("outsider", is_staff=False, permissions=REVIEWER_PERMISSIONS)


@pytest.fixture(autouse=True)
def _search_threads_disconnected():  # type: ignore[no-untyped-def]
    """A search's pool threads keep their connections, as a server's do; a test leaves none open,
    so the test database can be flushed and dropped."""
    yield
    from memory_app.selectors.search.beside import beside_close

    beside_close()


@pytest.fixture(autouse=True)
def _embedding_breaker_closed():  # type: ignore[no-untyped-def]
    """The provider's circuit breaker is per process: no test inherits another's open circuit."""
    from memory_app.embeddings.breaker import breaker

    breaker.reset()
    yield
    breaker.reset()


@pytest.fixture(autouse=True)
def _active_embedding_model(monkeypatch):  # type: ignore[no-untyped-def]
    """Each test reads the live-model registry of its own database once: no cache from another
    test's rows, and no re-read inside a test that counts its statements (a test of the switch
    itself sets the interval)."""
    from memory_app.embeddings import active

    monkeypatch.setattr(active, "ACTIVE_MODEL_CACHE_SECONDS", 3600.0)
    active.active_model_forget()
    yield
    active.active_model_forget()
