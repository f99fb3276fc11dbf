"""Tests that cannot pass on a Citus cluster yet, each with the reason (`bin/test --citus` skips
them; docs/SCALING.md "What does not run on Citus yet"). A pytest plugin loaded by
tests/conftest.py; on a single server it changes nothing.

Keys are test node ids or their prefixes (a file, or a file and test name without parameters).
"""

from __future__ import annotations

import pytest

JOIN_BY_ID = (
    "the ORM joins two distributed tables by id alone (select_related / related lookups without "
    "the tenant): Citus refuses joins that are not on the distribution column"
)

GAPS: dict[str, str] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"] != "project.citus_backend":
        return
    for item in items:
        for prefix, reason in GAPS.items():
            if (
                item.nodeid == prefix
                or item.nodeid.startswith(prefix + "::")
                or item.nodeid.startswith(prefix + "[")
            ):
                item.add_marker(pytest.mark.skip(reason=f"on Citus: {reason}"))
                break
