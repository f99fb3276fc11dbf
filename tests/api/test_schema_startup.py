"""The OpenAPI schema view in a fresh server process: drf-spectacular's extensions are resolved at
start-up (`schema_extensions_load`), so the first requests, arriving at once, all get the schema."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from drf_spectacular.plumbing import OpenApiGeneratorExtension

from tests.support.mcp_helpers import gunicorn_process


def test_every_schema_extension_is_resolved_once_the_apps_are_ready():
    bases = OpenApiGeneratorExtension.__subclasses__()
    lazy = [ext for base in bases for ext in base._registry if isinstance(ext.target_class, str)]
    assert bases and lazy == []


@pytest.mark.django_db(transaction=True)
def test_the_first_concurrent_schema_requests_of_a_fresh_server_all_succeed():
    with gunicorn_process() as base, ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda _: httpx.get(f"{base}/api/schema/", timeout=60), range(6)))
    assert [answer.status_code for answer in answers] == [200] * 6
    assert all(b"openapi" in answer.content for answer in answers)
