"""docs/concepts/gate.md lists every built-in preset with its patterns, as PRESETS has them.

The table between the two markers is generated from `provenance.gate.presets.PRESETS`;
`PROV_UPDATE_GOLDEN=1` rewrites it (then review the diff), as for every golden file.
"""

from __future__ import annotations

from pathlib import Path

from provenance.gate.presets import PRESETS
from tests.golden import check_generated_block

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "concepts" / "gate.md"
BEGIN = "<!-- generated from PRESETS: PROV_UPDATE_GOLDEN=1 pytest tests/test_docs_presets.py -->"
END = "<!-- end of generated presets -->"


def generated_table() -> str:
    rows = [f"| `{name}` | {', '.join(f'`{p}`' for p in patterns)} |"
            for name, patterns in PRESETS.items()]
    return "\n".join([BEGIN, "", "| preset | patterns |", "|---|---|", *rows, "", END])


def test_the_preset_table_matches_presets() -> None:
    check_generated_block(PAGE, BEGIN, END, generated_table())
