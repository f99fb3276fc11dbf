"""docker-compose.yml is accepted by docker-compose (when the binary is installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = shutil.which("docker-compose")
pytestmark = pytest.mark.skipif(COMPOSE is None, reason="docker-compose is not installed")


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


def test_compose_file_is_valid_with_the_example_settings() -> None:
    result = _config(ROOT / ".env.example")
    assert result.returncode == 0, result.stderr


def test_compose_refuses_to_start_without_a_secret_key(tmp_path: Path) -> None:
    env_file = tmp_path / "incomplete.env"
    env_file.write_text("POSTGRES_PASSWORD=x\n")
    result = _config(env_file)
    assert result.returncode != 0 and "SECRET_KEY" in result.stderr
