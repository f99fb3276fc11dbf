"""Tests that need a Citus coordinator at DATABASE_URL (`bin/test --citus`); skipped otherwise."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _citus_only(db) -> None:  # type: ignore[no-untyped-def]
    from memory_app.db import citus_mode

    if not citus_mode():
        pytest.skip("needs a Citus coordinator at DATABASE_URL (bin/test --citus)")
