"""docs/ARCHITECTURE.md's map of memory_app (the first code block under "## Layers") names every
folder of memory_app and every module at its top, and nothing that no longer exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "memory_app"
# An entry is the first word of a line indented by two (a top folder or module: "conf.py") or four
# (a subpackage: "selectors/search/") spaces; deeper lines continue a description.
_ENTRY = re.compile(r"^(?:  |    )((?:[a-z_]+/)+|[a-z_]+\.py)(?:\s|$)")


def map_entries(markdown: str) -> set[str]:
    """The entries of the memory_app/ part of the map: indented lines after `memory_app/`, up to the
    next line that starts at the margin."""
    layers = markdown.split("\n## Layers\n", 1)[1]
    block = layers.split("```\n", 2)[1]
    lines = block.splitlines()
    start = lines.index("memory_app/")
    entries = set()
    for line in lines[start + 1 :]:
        if line and not line.startswith(" "):
            break
        match = _ENTRY.match(line)
        if match:
            entries.add(match.group(1))
    return entries


def app_layout() -> set[str]:
    folders = {
        f"{path.relative_to(APP).as_posix()}/"
        for path in APP.rglob("*")
        # a folder left holding only __pycache__ (after a branch switch) is not part of the code
        if path.is_dir() and "__pycache__" not in path.parts and any(c.is_file() for c in path.iterdir())
    }
    modules = {path.name for path in APP.glob("*.py") if path.name != "__init__.py"}
    return folders | modules


def test_the_architecture_map_names_every_folder_and_top_module_of_memory_app() -> None:
    entries = map_entries((ROOT / "docs" / "ARCHITECTURE.md").read_text())
    layout = app_layout()
    assert not layout - entries, f"missing from docs/ARCHITECTURE.md's map: {sorted(layout - entries)}"
    assert not entries - layout, f"in the map but not in memory_app: {sorted(entries - layout)}"


def test_the_map_reader_sees_nested_folders_and_stops_at_the_next_top_level_entry() -> None:
    markdown = "\n".join(
        [
            "",
            "## Layers",
            "```",
            "memory_app/",
            "  db/           blocks",
            "    db/x/       nested",
            "                text.py continues the description",
            "  conf.py       knobs",
            "project/        settings",
            "  other/",
            "```",
        ]
    )
    assert map_entries(markdown) == {"db/", "db/x/", "conf.py"}


def test_the_architecture_document_stays_at_most_500_lines() -> None:
    # A map the next reader reads whole: detail belongs in the docs it points to.
    assert len((ROOT / "docs" / "ARCHITECTURE.md").read_text().splitlines()) <= 500
