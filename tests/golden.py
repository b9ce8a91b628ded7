"""Golden files: compare output with a file under tests/golden/.

Regenerate every golden file with the one switch `PROV_UPDATE_GOLDEN=1 make test`
(or `PROV_UPDATE_GOLDEN=1 .venv/bin/pytest`), then review the diff in git.
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"


def check_golden(name: str, actual: str) -> None:
    """`actual` must equal tests/golden/NAME (NAME may hold a folder: `sbom/x.cdx.json`)."""
    path = GOLDEN_DIR / name
    if os.environ.get("PROV_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"golden file {path} missing: run with PROV_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"output differs from {path} (PROV_UPDATE_GOLDEN=1 regenerates)"


def check_generated_block(page: Path, begin: str, end: str, expected: str) -> None:
    """The block of a docs page between `begin` and `end` (both kept) must equal `expected`;
    `PROV_UPDATE_GOLDEN=1` rewrites it in place. `expected` starts with `begin`, ends with `end`."""
    text = page.read_text(encoding="utf-8")
    assert begin in text and end in text, f"{page} lost its generated-block markers"
    head, rest = text.split(begin, 1)
    current, tail = rest.split(end, 1)
    if os.environ.get("PROV_UPDATE_GOLDEN") == "1":
        page.write_text(head + expected + tail, encoding="utf-8")
        return
    assert begin + current + end == expected, (
        f"{page.name} is out of date with the code: PROV_UPDATE_GOLDEN=1 regenerates it"
    )
