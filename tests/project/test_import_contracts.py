"""Each import-linter contract of pyproject.toml breaks on an import that violates it: lint-imports
runs once on a copy of memory_app and project with one violating module per contract added, and
each contract's report names its own violation. (bin/test runs it on the real tree, where all hold.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# Per contract id: the modules added (path under the copy -> its source), and what the contract's
# report must name. The acyclic check reports packages, not modules.
VIOLATIONS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "layers": (
        {"memory_app/models/_violation_layers.py": "import memory_app.api.serializers\n"},
        ("memory_app.models._violation_layers -> memory_app.api.serializers",),
    ),
    "pure": (
        {"memory_app/judge/_violation_pure.py": "from memory_app.embeddings import embed_texts\n"},
        ("memory_app.judge._violation_pure -> memory_app.embeddings",),
    ),
    "selectors-read": (
        {"memory_app/selectors/_violation_read.py": "import memory_app.services.api_keys\n"},
        ("memory_app.selectors._violation_read -> memory_app.services.api_keys",),
    ),
    "celery-app": (
        {"memory_app/selectors/_violation_app.py": "from project.celery import app\n"},
        ("memory_app.selectors._violation_app -> project.celery",),
    ),
    "celery-package": (
        {"memory_app/services/_violation_celery.py": "from celery import shared_task\n"},
        ("memory_app.services._violation_celery -> celery",),
    ),
    "runtime-without-evaluation": (
        {"memory_app/services/_violation_eval.py": "from memory_eval.locomo import load_locomo\n"},
        ("memory_app.services._violation_eval -> memory_eval.locomo",),
    ),
    "acyclic": (
        {
            "memory_app/retrieval/_violation_cycle.py": "import memory_app.compaction.grouping\n",
            "memory_app/compaction/_violation_cycle.py": "import memory_app.retrieval.fusion\n",
        },
        (".retrieval", ".compaction"),
    ),
}


def contract_names() -> dict[str, str]:
    """Contract id -> name, as pyproject.toml declares them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {contract["id"]: contract["name"] for contract in config["contracts"]}


def sections(report: str, names: list[str]) -> dict[str, str]:
    """The part of lint-imports' "Broken contracts" report under each contract's heading."""
    broken = report.split("Broken contracts", 1)[1] if "Broken contracts" in report else ""
    found: dict[str, str] = {}
    for name in names:
        heading = f"\n{name}\n{'-' * len(name)}\n"
        if heading in broken:
            rest = broken.split(heading, 1)[1]
            ends = [rest.find(f"\n{other}\n{'-' * len(other)}\n") for other in names if other != name]
            found[name] = rest[: min([end for end in ends if end >= 0], default=len(rest))]
    return found


@pytest.fixture(scope="module")
def violated_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    tree = tmp_path_factory.mktemp("imports")
    ignore = shutil.ignore_patterns("__pycache__", "*.json", "*.onnx")
    for package in ("memory_app", "memory_eval", "project"):
        shutil.copytree(ROOT / package, tree / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    for modules, _ in VIOLATIONS.values():
        for path, source in modules.items():
            (tree / path).write_text(source)
    result = subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache"],
        cwd=tree,
        env={**os.environ, "COLUMNS": "500"},  # one line per contract name, as the headings are read
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    return result.stdout


def test_every_contract_has_a_deliberate_violation_here() -> None:
    assert set(contract_names()) == set(VIOLATIONS)


@pytest.mark.parametrize("contract_id", sorted(VIOLATIONS))
def test_lint_imports_reports_each_contract_broken_by_its_violation(
    violated_report: str, contract_id: str
) -> None:
    names = contract_names()
    name = names[contract_id]
    assert f"{name} BROKEN" in violated_report, violated_report
    section = sections(violated_report, list(names.values())).get(name, "")
    for expected in VIOLATIONS[contract_id][1]:
        assert expected in section, f"{name}: {expected!r} not in\n{section}"


def test_the_report_reader_splits_broken_contracts_by_their_headings() -> None:
    report = "x\nBroken contracts\n----------------\n\nA\n-\n\nfirst\n\nB b\n---\n\nsecond\n"
    assert sections(report, ["A", "B b", "C"]) == {"A": "\nfirst\n", "B b": "\nsecond\n"}
