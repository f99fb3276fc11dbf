"""The settings tables of README.md and docs/OPERATIONS.md, written from the declarations.

Every environment variable is declared once (project/variables.py for the infrastructure,
memory_app/conf/ for the service's knobs); each declaration names the table that lists it. A
table sits between two marker comments in its document and is replaced whole by
`manage.py settings_doc --write`; tests/project/test_settings_declared.py fails when a document's
table differs from what the declarations give.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from project.env import TABLES, Setting

BEGIN = "<!-- settings table: written by `manage.py settings_doc --write` from the declarations -->"
END = "<!-- end of settings table -->"
ROOT = Path(__file__).resolve().parent.parent


def declared() -> tuple[Setting[Any], ...]:
    """Every declaration: the infrastructure's, then the service's knobs."""
    # memory_app.conf imports django.conf lazily only; no app registry is needed to read it.
    from memory_app.conf import DECLARED as knobs
    from project.variables import DECLARED as infrastructure

    return infrastructure + knobs


def _number(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def default_cell(setting: Setting[Any]) -> str:
    if setting.default_doc:
        return setting.default_doc
    value = setting.default
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int | float):
        return f"`{_number(value)}`"
    if isinstance(value, list):
        return f"`{','.join(value)}`" if value else "empty"
    return f"`{value}`" if value else "empty"


def allowed_cell(setting: Setting[Any]) -> str:
    if setting.kind == "bool":
        return "`true` / `false`"
    if setting.kind == "choice":
        return " / ".join(f"`{choice}`" for choice in setting.choices)
    if setting.kind == "list":
        return "comma-separated"
    low, high = setting.minimum, setting.maximum
    if low is not None and high is not None:
        return f"{_number(low)}..{_number(high)}"
    if low is not None:
        return f">= {_number(low)}"
    return "number" if setting.kind in ("int", "float") else "text"


def row(setting: Setting[Any]) -> str:
    meaning = setting.doc.replace("|", "\\|")
    if setting.read_by:
        meaning += f" (read by {setting.read_by})"
    return f"| `{setting.name}` | {default_cell(setting)} | {allowed_cell(setting)} | {meaning} |"


def table(document: str, settings: tuple[Setting[Any], ...]) -> str:
    rows = [row(setting) for setting in settings if setting.table == document]
    return "\n".join(["| variable | default | allowed | meaning |", "|---|---|---|---|", *rows])


def with_table(text: str, generated: str, document: str) -> str:
    """`text` with what lies between its markers replaced by `generated`."""
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ValueError(f"{document} needs exactly one {BEGIN!r} and one {END!r}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{generated}\n{END}{tail}"


def documents(root: Path = ROOT) -> dict[Path, tuple[str, str]]:
    """Each document's path with its current text and the text it should have."""
    settings = declared()
    result = {}
    for document in TABLES:
        path = root / document
        current = path.read_text(encoding="utf-8")
        result[path] = (current, with_table(current, table(document, settings), document))
    return result
