"""docs/concepts/disclosure.md lists the nine items with their JSON types, as the model's
FIELDS has them.

The table between the two markers is generated from `provenance.model.disclosure.fields_table`;
`PROV_UPDATE_GOLDEN=1` rewrites it (then review the diff), as for every golden file.
"""

from __future__ import annotations

from pathlib import Path

from provenance.model.disclosure import ITEMS, fields_table
from tests.golden import check_generated_block

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "concepts" / "disclosure.md"
BEGIN = "<!-- generated from FIELDS: PROV_UPDATE_GOLDEN=1 pytest tests/test_docs_disclosure.py -->"
END = "<!-- end of generated disclosure items -->"


def test_the_items_table_matches_the_model() -> None:
    check_generated_block(PAGE, BEGIN, END, "\n".join([BEGIN, "", fields_table(), END]))


def test_the_table_names_every_item_once() -> None:
    table = fields_table()
    assert all(table.count(f"| `{item}` |") == 1 for item in ITEMS)
