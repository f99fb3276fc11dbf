"""A full disk under PostgreSQL: what a client is told, and whether anything acknowledged is lost.

    python bench/disk_full.py [--json] [--size-mb 256] [--headroom-kb 2048]

Needs root (it mounts a tmpfs of --size-mb in a fresh temporary folder, so the machine's own disk
is never filled). The embedded PostgreSQL gets its data directory there (EMBEDDED_PG_DIR), is
migrated, then a filler file takes all but --headroom-kb of the file system. Memories are then
stored through the API (DRF's test client: the same views, serializers and exception handler) in
batches until writes have failed three times in a row. Reported: each answer's status and error
code, whether the server survived, and, after the filler is removed (and the server restarted if
it stopped), how many acknowledged memories are present with their text and whether a new store
succeeds. The server is always stopped and the file system unmounted at the end. Results in
bench/results/disk_full.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from support import benchenv
from support.benchdb import log

ROOT = benchenv.ROOT
BATCH = 20
MAX_BATCHES = 400


def fill(mount: Path, headroom: int) -> int:
    free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
    size = max(0, free - headroom)
    with open(mount / "filler", "wb") as filler:
        os.posix_fallocate(filler.fileno(), 0, size)
    return size


def store_until_full(client, run: int) -> tuple[list[tuple[int, str]], dict[int, str]]:  # type: ignore[no-untyped-def]
    answers: list[tuple[int, str]] = []
    acknowledged: dict[int, str] = {}
    failures = 0
    for batch in range(MAX_BATCHES):
        items = [
            {
                "text": f"Run {run} batch {batch} item {i}: "
                + " ".join([f"disk-full probe {batch * BATCH + i}"] * 40),
                "user_id": "u1",
            }
            for i in range(BATCH)
        ]
        response = client.post("/api/v1/memories?deduplicate=false", items, format="json")
        body = response.json()
        code = body["error"]["code"] if response.status_code >= 400 else "ok"
        answers.append((response.status_code, code))
        if response.status_code == 201:
            failures = 0
            for item, outcome in zip(items, body, strict=True):  # a list in, a list of outcomes out
                acknowledged[outcome["memory_id"]] = item["text"]
        else:
            failures += 1
            if failures == 3:
                break
    return answers, acknowledged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--size-mb", type=int, default=256)
    parser.add_argument("--headroom-kb", type=int, default=2048)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root: it mounts a tmpfs for the database's data directory")

    mount = Path(tempfile.mkdtemp(prefix="memory-disk-full-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.size_mb}m", "tmpfs", str(mount)], check=True)
    server = None
    try:
        os.environ.update(
            EMBEDDED_PG_DIR=str(mount / "pgdata"),
            DATABASE_URL="",
            ENV_FILE="",
            DEBUG="false",
            ALLOWED_HOSTS="testserver",
            CELERY_BROKER_URL="",
            EMBEDDING_PROVIDER="local",
        )
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection
        from rest_framework.test import APIClient

        from memory_app.models import Memory, Tenant
        from memory_app.services.api_keys import api_key_issue
        from project.database import embedded_server

        log(f"embedded PostgreSQL on a {args.size_mb} MB tmpfs at {mount}; migrating")
        call_command("migrate", verbosity=0)
        tenant = Tenant.objects.create(name="disk full", slug="disk-full")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_issue(tenant=tenant, name='bench').raw_key}")
        client.post("/api/v1/memories", {"text": "warm-up", "user_id": "w"}, format="json")
        filler = fill(mount, args.headroom_kb * 1024)
        log(f"filler of {filler / 2**20:.0f} MB leaves {args.headroom_kb} KB; storing until writes fail")
        answers, acknowledged = store_until_full(client, 1)
        log(f"answers: {Counter(answers)}; {len(acknowledged)} memories acknowledged")

        connection.close()
        try:
            connection.ensure_connection()
            survived = True
        except Exception as exc:  # any failure to connect is the finding
            survived = False
            log(f"server unreachable while full: {exc}")
        connection.close()
        (mount / "filler").unlink()
        deadline = time.monotonic() + 60
        while True:
            try:
                server = embedded_server(mount / "pgdata")  # starts it again if it stopped
                connection.ensure_connection()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        present = dict(Memory.objects.filter(pk__in=acknowledged).values_list("pk", "text"))
        intact = sum(present.get(pk) == text for pk, text in acknowledged.items())
        after = client.post(
            "/api/v1/memories", {"text": "stored after space was freed", "user_id": "u1"}, format="json"
        )
        report = {
            "benchmark": "disk_full",
            "size_mb": args.size_mb,
            "headroom_kb": args.headroom_kb,
            "batches": len(answers),
            "answers": {f"{status} {code}": n for (status, code), n in Counter(answers).items()},
            "server_reachable_while_full": survived,
            "acknowledged": len(acknowledged),
            "acknowledged_present": len(present),
            "acknowledged_present_intact": intact,
            "acknowledged_missing": len(acknowledged) - intact,
            "store_after_space_freed": after.status_code,
            "load_average": [round(x, 1) for x in os.getloadavg()],
            "command": "python bench/disk_full.py",
        }
        log(
            f"after freeing space: {intact}/{len(acknowledged)} acknowledged present; "
            f"a new store answered {after.status_code}"
        )
        benchenv.write_results(ROOT / "bench" / "results" / "disk_full.json", report, print_json=args.json)
    finally:
        from django.db import connections

        connections.close_all()
        if server is None and (mount / "pgdata" / "postmaster.pid").exists():
            from project.database import embedded_server

            server = embedded_server(mount / "pgdata")
        if server is not None:
            server.stop()
        subprocess.run(["umount", str(mount)], check=False)
        mount.rmdir()


if __name__ == "__main__":
    main()
