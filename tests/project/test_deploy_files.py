"""docker-compose.yml is accepted by docker-compose (when the binary is installed) and runs the MCP
server over HTTP beside the REST API the way bin/serve does."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = shutil.which("docker-compose")
needs_compose = pytest.mark.skipif(COMPOSE is None, reason="docker-compose is not installed")


def _config(env_file: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "POSTGRES_PASSWORD")}
    return subprocess.run(
        [str(COMPOSE), "--env-file", str(env_file), "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


@needs_compose
def test_compose_file_is_valid_with_the_example_settings() -> None:
    result = _config(ROOT / ".env.example")
    assert result.returncode == 0, result.stderr


@needs_compose
def test_compose_refuses_to_start_without_a_secret_key(tmp_path: Path) -> None:
    env_file = tmp_path / "incomplete.env"
    env_file.write_text("POSTGRES_PASSWORD=x\n")
    result = _config(env_file)
    assert result.returncode != 0 and "SECRET_KEY" in result.stderr


def test_compose_serves_mcp_over_http_with_bin_serve_mcp_beside_gunicorn() -> None:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    web, mcp = services["web"], services["mcp"]
    assert web["command"][:3] == ["gunicorn", "-c", "project/gunicorn.conf.py"]
    # the same process the quick start runs (tests/mcp/test_mcp_server.py drives it over HTTP)
    assert mcp["command"] == ["bash", "bin/serve-mcp"]
    assert mcp["ports"] == ["${MCP_PORT:-8001}:8001"]
    # the same image, database, broker and secret as web: the same API keys and tenants
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "ALLOWED_HOSTS"):
        assert mcp["environment"][name] == web["environment"][name], name
    assert mcp["build"] == web["build"] and mcp["image"] == web["image"]
    assert mcp["depends_on"] == web["depends_on"]
    assert "8001/api/v1/health" in " ".join(mcp["healthcheck"]["test"])
    assert "bin/serve-mcp &" in (ROOT / "bin" / "serve").read_text()


def _rendered(env_file: Path, *profiles: str) -> dict:
    import yaml

    flags = [arg for profile in profiles for arg in ("--profile", profile)]
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "POSTGRES_PASSWORD")}
    result = subprocess.run(
        [str(COMPOSE), "--env-file", str(env_file), "-f", str(ROOT / "docker-compose.yml"), *flags, "config"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def _mounts(service: dict) -> dict[str, str]:
    """target → source, from either volume syntax (docker-compose v1 prints "source:target:mode")."""
    mounts = {}
    for volume in service["volumes"]:
        if isinstance(volume, dict):
            mounts[str(volume["target"])] = str(volume.get("source", ""))
        else:
            source, target = volume.split(":")[:2]
            mounts[target] = source
    return mounts


@needs_compose
def test_the_replica_profile_adds_a_streaming_standby_wired_to_the_app(tmp_path: Path) -> None:
    env_file = tmp_path / "replica.env"
    url = "postgres://memory:pw@db-replica:5432/memory"
    env_file.write_text(
        (ROOT / ".env.example").read_text()
        + "REPLICATION_PASSWORD=repl-secret\n"
        + f"DATABASE_REPLICA_URLS={url}\nDATABASE_REPLICA_MAX_LAG_SECONDS=2\n"
    )
    services = _rendered(env_file, "replica")["services"]
    replica = services["db-replica"]
    assert replica["profiles"] == ["replica"]
    assert replica["entrypoint"] == ["/bin/sh", "/replica/standby.sh"]
    assert replica["environment"]["REPLICATION_PASSWORD"] == "repl-secret"
    assert replica["environment"]["PRIMARY_HOST"] == "db"
    assert "db" in replica["depends_on"]
    assert "/replica" in _mounts(replica) and _mounts(replica)["/replica"].endswith("deploy/replica")
    assert (ROOT / "deploy" / "replica" / "standby.sh").exists()
    primary = services["db"]
    assert primary["environment"]["REPLICATION_PASSWORD"] == "repl-secret"
    assert _mounts(primary)["/docker-entrypoint-initdb.d/10-replication.sh"].endswith("primary-init.sh")
    assert "wal_level=replica" in primary["command"]
    for name in ("web", "worker", "beat", "migrate"):
        environment = services[name]["environment"]
        assert environment["DATABASE_REPLICA_URLS"] == url, name
        assert str(environment["DATABASE_REPLICA_MAX_LAG_SECONDS"]) == "2", name


@needs_compose
def test_without_a_replica_the_app_gets_no_replica_urls() -> None:
    services = _rendered(ROOT / ".env.example")["services"]
    assert services["web"]["environment"]["DATABASE_REPLICA_URLS"] == ""


@pytest.mark.parametrize("script", ["primary-init.sh", "standby.sh"])
def test_the_replication_scripts_are_valid_shell(script: str) -> None:
    shell = "bash" if script == "primary-init.sh" else "sh"
    result = subprocess.run(
        [shell, "-n", str(ROOT / "deploy" / "replica" / script)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


@needs_compose
def test_the_citus_profile_adds_a_coordinator_and_two_workers_the_app_points_at(tmp_path: Path) -> None:
    env_file = tmp_path / "citus.env"
    env_file.write_text((ROOT / ".env.example").read_text() + "DATABASE_HOST=citus-coordinator\n")
    services = _rendered(env_file, "citus")["services"]
    nodes = ("citus-coordinator", "citus-worker-1", "citus-worker-2")
    for name in nodes:
        assert services[name]["profiles"] == ["citus"]
        assert services[name]["image"] == "agent-memory-citus:latest"
        assert "wal_level=logical" in services[name]["command"]
    register = services["citus-register"]
    assert set(register["depends_on"]) == set(nodes)
    assert register["environment"]["CITUS_WORKERS"] == "citus-worker-1 citus-worker-2"
    for name in ("web", "worker", "beat", "migrate"):
        assert "@citus-coordinator:5432/" in services[name]["environment"]["DATABASE_URL"], name
    assert "citus_distribute --if-citus" in " ".join(services["migrate"]["command"])
    assert "pgvector" in (ROOT / "deploy" / "citus" / "Dockerfile").read_text()


@needs_compose
def test_without_the_citus_profile_the_app_uses_db_and_the_citus_nodes_stay_in_their_profile() -> None:
    services = _rendered(ROOT / ".env.example")["services"]
    assert "@db:5432/" in services["web"]["environment"]["DATABASE_URL"]
    # docker-compose v1 lists every service; the profile keeps them from starting.
    assert all(s.get("profiles") == ["citus"] for name, s in services.items() if name.startswith("citus"))


def test_the_citus_register_script_is_valid_shell() -> None:
    assert subprocess.run(["sh", "-n", str(ROOT / "deploy" / "citus" / "register.sh")]).returncode == 0
