"""API-key authentication: `Authorization: Bearer <key>` resolves the request's tenant."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from memory_app.models import ApiKey, Tenant
from memory_app.services.api_keys import api_key_authenticate


@dataclass(frozen=True)
class TenantPrincipal:
    """What `request.user` is for API calls: the tenant behind the key (no key for a local MCP
    server over stdio, started by an operator for one tenant)."""

    tenant: Tenant
    api_key: ApiKey | None
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def pk(self) -> int:
        return int(self.api_key.pk) if self.api_key is not None else -int(self.tenant.pk)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[TenantPrincipal, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1").strip()
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != self.keyword.lower():
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <api key>'.")
        api_key = api_key_authenticate(raw_key=parts[1])
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        return TenantPrincipal(tenant=api_key.tenant, api_key=api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'


class HasTenant(permissions.BasePermission):
    message = "Authentication with an API key is required."

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, TenantPrincipal)


def tenant_of(request: Request) -> Tenant:
    principal = request.user
    if not isinstance(principal, TenantPrincipal):  # pragma: no cover - HasTenant runs first
        raise exceptions.NotAuthenticated()
    return principal.tenant
