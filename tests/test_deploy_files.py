"""docker-compose.yml is accepted by docker-compose (when the binary is installed) and runs the MCP
server over HTTP beside the REST API the way bin/serve does."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
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
    # the same process the quick start runs (tests/test_mcp_server.py drives it over HTTP)
    assert mcp["command"] == ["bash", "bin/serve-mcp"]
    assert mcp["ports"] == ["${MCP_PORT:-8001}:8001"]
    # the same image, database, broker and secret as web: the same API keys and tenants
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "ALLOWED_HOSTS"):
        assert mcp["environment"][name] == web["environment"][name], name
    assert mcp["build"] == web["build"] and mcp["image"] == web["image"]
    assert mcp["depends_on"] == web["depends_on"]
    assert "8001/api/v1/health" in " ".join(mcp["healthcheck"]["test"])
    assert "bin/serve-mcp &" in (ROOT / "bin" / "serve").read_text()
