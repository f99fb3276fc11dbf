from __future__ import annotations

from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from memory_app.models import Tenant
from memory_app.services.api_keys import api_key_issue
from tests.factories import TenantFactory
from tests.respx_httpx2 import install as install_respx_httpx2

# respx must also see the OpenAI SDK's httpx2 transport (tests/respx_httpx2.py).
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
