"""The README's code blocks, so tests can run them as a reader would paste them."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def readme_block(language: str, containing: str) -> str:
    """The one README block in `language` whose text contains `containing`."""
    blocks = [
        text for lang, text in BLOCK.findall(README.read_text()) if lang == language and containing in text
    ]
    assert len(blocks) == 1, (
        f"expected one {language} block with {containing!r} in README.md, found {len(blocks)}"
    )
    return blocks[0]
