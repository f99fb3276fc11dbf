"""Each environment variable is declared once, and the docs and the code agree with the declarations."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from memory_app import conf
from project import settings_doc
from project.env import OPERATIONS, README, integer

ROOT = Path(__file__).resolve().parents[2]
DECLARED = {setting.name: setting for setting in settings_doc.declared()}

# Imports the test settings with os.environ replaced by a mapping that notes every variable the
# checkout's own code asks for (reads from Django, Celery and other libraries are not counted).
_RECORD_READS = """
import json, os, sys
root = sys.argv[1]
seen = set()

class Recording(dict):
    def _note(self, key):
        if sys._getframe(2).f_code.co_filename.startswith((root + "/project/", root + "/memory_app/")):
            seen.add(key)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self._note(key)
        return super().__contains__(key)

os.environ = Recording(os.environ)
import project.settings_test
print(json.dumps(sorted(seen)))
"""


def _start_up(**environment: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "ENV_FILE": "", "DEBUG": "true", **environment}
    return subprocess.run(
        [sys.executable, "-c", "import django; from django.conf import settings; settings.DEBUG"],
        env={**env, "DJANGO_SETTINGS_MODULE": "project.settings"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_settings_tables_of_the_readme_and_operations_are_what_the_declarations_give():
    stale = [path.name for path, (current, wanted) in settings_doc.documents().items() if current != wanted]
    assert stale == [], "run `manage.py settings_doc --write`"


def test_every_variable_the_settings_read_is_declared_and_every_declared_one_is_read():
    result = subprocess.run(
        [sys.executable, "-c", _RECORD_READS, str(ROOT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    read = set(json.loads(result.stdout.strip().splitlines()[-1]))
    assert sorted(read - set(DECLARED)) == []
    parsed_by_settings = {name for name, setting in DECLARED.items() if not setting.read_by}
    assert sorted(parsed_by_settings - read) == []


def _environment_reads(path: Path) -> list[tuple[str, ast.expr | None]]:
    """(name, literal default or None) of each os.environ.get / os.getenv / os.environ[...] read."""
    reads = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = ast.unparse(node.func)
            if called in ("os.environ.get", "os.getenv"):
                reads.append((node.args[0].value, node.args[1] if len(node.args) > 1 else None))
        if (
            isinstance(node, ast.Subscript)
            and ast.unparse(node.value) == "os.environ"
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.slice, ast.Constant)
        ):
            reads.append((node.slice.value, None))
    return reads


def test_code_that_reads_the_environment_itself_reads_only_declared_variables_with_their_defaults():
    files = [*ROOT.glob("project/*.py"), *(ROOT / "memory_app").rglob("*.py")]
    undeclared, other_default = [], []
    for path in files:
        for name, default in _environment_reads(path):
            setting = DECLARED.get(name)
            if setting is None:
                undeclared.append(f"{path.relative_to(ROOT)}: {name}")
            elif (
                isinstance(default, ast.Constant)
                and not setting.default_doc
                and str(default.value).lower() != str(setting.default).lower()
            ):
                other_default.append(f"{path.relative_to(ROOT)}: {name}={default.value!r}")
    assert undeclared == []
    assert other_default == []


def test_the_config_objects_read_only_declared_settings_and_each_is_a_django_setting():
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "memory_app" / "conf").glob("*.py"))
    read_by_name = set(re.findall(r"settings\.([A-Z][A-Z0-9_]+)", source))
    assert sorted(read_by_name - set(DECLARED)) == []
    assert [s.name for s in conf.DECLARED if not hasattr(settings, s.name)] == []


def test_no_variable_is_declared_twice_and_each_names_a_table():
    names = [setting.name for setting in settings_doc.declared()]
    assert sorted({n for n in names if names.count(n) > 1}) == []
    assert {setting.table for setting in settings_doc.declared()} == {README, OPERATIONS}
    assert all(setting.doc for setting in settings_doc.declared())


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("SEARCH_MMR_LAMBDA", "2", "SEARCH_MMR_LAMBDA must be <= 1.0, got 2.0"),
        ("STORE_MAX_BATCH", "lots", "STORE_MAX_BATCH must be an integer, got 'lots'"),
        ("SEARCH_FUSION", "sum", "SEARCH_FUSION must be one of weighted, rrf; got 'sum'"),
        ("API_PAGE_SIZE", "0", "API_PAGE_SIZE must be >= 1, got 0"),
    ],
)
def test_a_bad_value_of_a_declared_variable_stops_start_up_naming_it(variable, value, message):
    result = _start_up(**{variable: value})
    assert result.returncode != 0
    assert message in result.stderr


def test_a_table_row_shows_the_default_the_bounds_and_the_doc():
    setting = integer("SOME_LIMIT", 50, 1, 1000, "most things | at once", table=OPERATIONS)
    assert settings_doc.row(setting) == "| `SOME_LIMIT` | `50` | 1..1000 | most things \\| at once |"
    assert "SOME_LIMIT" in settings_doc.table(OPERATIONS, (setting,))
    assert "SOME_LIMIT" not in settings_doc.table(README, (setting,))


def test_the_writer_replaces_only_what_lies_between_the_markers_and_refuses_a_document_without_them():
    text = f"intro\n{settings_doc.BEGIN}\nold table\n{settings_doc.END}\noutro\n"
    assert settings_doc.with_table(text, "new table", "X.md") == (
        f"intro\n{settings_doc.BEGIN}\nnew table\n{settings_doc.END}\noutro\n"
    )
    with pytest.raises(ValueError, match=r"X\.md needs exactly one"):
        settings_doc.with_table("no markers", "new table", "X.md")
