"""The README quick start's curl calls (store, search, context), sent as written with a tenant's key."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.conftest import TenantClient
from tests.support.readme_snippets import readme_block

pytestmark = pytest.mark.django_db


def curl_calls() -> list[tuple[str, dict[str, object]]]:
    """(path, JSON body) of each curl command of the quick start's block, in order."""
    block = readme_block("bash", "Can I make a peanut curry tonight?")
    calls = []
    for command in block.replace("\\\n", " ").splitlines():
        words = shlex.split(command)
        url = next(word for word in words if word.startswith("http://"))
        body = words[words.index("-d") + 1]
        calls.append((re.sub(r"^http://[^/]+", "", url), json.loads(body)))
    return calls


def test_the_quick_start_stores_finds_and_injects_a_memory(tenant_a: TenantClient):
    (store, stored_body), (search, search_body), (context, context_body) = curl_calls()
    stored = tenant_a.client.post(store, stored_body, format="json")
    assert stored.status_code == 201 and stored.json()["outcome"] == "created"
    found = tenant_a.client.post(search, search_body, format="json")
    assert [hit["memory"]["text"] for hit in found.json()["results"]] == ["User is allergic to peanuts"]
    answered = tenant_a.client.post(context, context_body, format="json")
    assert answered.status_code == 200 and "peanuts" in answered.json()["context"]
