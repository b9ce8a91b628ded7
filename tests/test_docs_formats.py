"""docs/reference/formats.md's run record table names every field of `RunRecord`, and only
those (the store's typed record, provenance/store/run_record.py)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from provenance.store import RunRecord

PAGE = Path(__file__).resolve().parent.parent / "docs" / "reference" / "formats.md"


def run_record_table() -> set[str]:
    """The backticked names in the first column of the run record's table."""
    text = PAGE.read_text()
    section = text[text.index("## Run record (`prov.run`)"):]
    section = section[:section.index("\n## ", 1)]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return names


def test_the_run_record_table_names_every_field():
    fields = {f.name for f in dataclasses.fields(RunRecord)} - {"extra"} | {"kind"}
    documented = run_record_table()
    assert fields - documented == set(), "RunRecord fields formats.md does not describe"
    assert documented - fields == set(), "formats.md describes fields RunRecord has not"
