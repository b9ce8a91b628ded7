"""docs/concepts/gate.md lists every built-in preset with its patterns, as PRESETS has them,
and `prov compare --help` names every one (the refusal lists them from PRESETS itself).

The table between the two markers is generated from `provenance.gate.presets.PRESETS`;
`PROV_UPDATE_GOLDEN=1` rewrites it (then review the diff), as for every golden file.
"""

from __future__ import annotations

import re
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


def test_compare_help_names_every_preset() -> None:
    import provenance.cli as cli

    cli.load_commands("compare")
    vary = next(p for p in cli.command().commands["compare"].params if p.name == "vary")
    named = re.search(r"preset \(([^)]*)\)", vary.help).group(1)
    assert named == ", ".join(sorted(PRESETS))
