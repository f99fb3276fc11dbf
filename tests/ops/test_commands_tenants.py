from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory_app.models import ApiKey, Tenant
from memory_app.services.api_keys import api_key_authenticate

pytestmark = pytest.mark.django_db


def test_create_tenant_prints_a_key_that_authenticates_and_stores_only_its_hash():
    out = StringIO()
    call_command("create_tenant", "Acme Health", stdout=out)
    raw_key = out.getvalue().strip().splitlines()[-1]
    tenant = Tenant.objects.get(slug="acme-health")
    key = ApiKey.objects.get(tenant=tenant)
    assert raw_key not in (key.key_hash, key.prefix)
    authenticated = api_key_authenticate(raw_key=raw_key)
    assert authenticated is not None
    assert authenticated.tenant == tenant


def test_create_tenant_refuses_a_duplicate_slug():
    call_command("create_tenant", "Acme", stdout=StringIO())
    with pytest.raises(CommandError, match="exists"):
        call_command("create_tenant", "acme", stdout=StringIO())


def test_create_api_key_issues_a_second_working_key():
    call_command("create_tenant", "Beta", stdout=StringIO())
    out = StringIO()
    call_command("create_api_key", "--tenant", "beta", "--name", "ci", stdout=out)
    raw_key = out.getvalue().strip().splitlines()[-1]
    assert api_key_authenticate(raw_key=raw_key).name == "ci"
    call_command("create_api_key", "beta", stdout=StringIO())  # positionally, as before
    assert ApiKey.objects.filter(tenant__slug="beta").count() == 3


def test_create_api_key_for_an_unknown_tenant_fails_clearly():
    with pytest.raises(CommandError, match="No single tenant"):
        call_command("create_api_key", "nobody", stdout=StringIO())


def test_revoke_api_key_stops_the_key_working():
    out = StringIO()
    call_command("create_tenant", "Gamma", stdout=out)
    raw_key = out.getvalue().strip().splitlines()[-1]
    call_command("revoke_api_key", raw_key.split("_")[1], stdout=StringIO())
    assert api_key_authenticate(raw_key=raw_key) is None


@pytest.mark.parametrize("given", ["printed prefix", "whole key"])
def test_revoke_api_key_accepts_the_prefix_as_printed_or_the_whole_key(given):
    out = StringIO()
    call_command("create_tenant", "Delta", stdout=out)
    raw_key = out.getvalue().strip().splitlines()[-1]
    printed_prefix = "_".join(raw_key.split("_")[:2])  # mem_xxxxxxxxxxxx
    call_command(
        "revoke_api_key", printed_prefix if given == "printed prefix" else raw_key, stdout=StringIO()
    )
    assert api_key_authenticate(raw_key=raw_key) is None


def test_revoke_api_key_with_an_unknown_prefix_fails_clearly():
    with pytest.raises(CommandError, match="No API key"):
        call_command("revoke_api_key", "mem_000000000000", stdout=StringIO())
