"""A hostile offline OSV database (`prov audit --osv-db DIR`, issue #30): a record nested
100,000 deep raised RecursionError (exit 70). Every record is now read as any user file is
(model/inputs): bounded, a regular file, strict UTF-8, nesting bounded, no lone surrogate,
no 5,000-digit integer; anything else is one line naming the record, exit 2."""

from __future__ import annotations

import os

import pytest

from provenance.audit.osv_db import load_db
from provenance.model.errors import ProvError
from tests.helpers import assert_one_line_error, run_prov

GOOD = '{"id": "PYSEC-0", "modified": "2024-01-01T00:00:00Z", "affected": []}'


def _deep(d):
    (d / "deep.json").write_text('{"id": "X", "a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return "nested deeper than"


def _surrogate(d):
    (d / "s.json").write_text('{"id": "X", "summary": "\\udcff"}')
    return "lone UTF-16 surrogate"


def _huge_int(d):
    (d / "n.json").write_text('{"id": "X", "n": ' + "9" * 5000 + "}")
    return "more than 4300 digits"


def _not_utf8_name(d):
    with open(os.fsencode(d) + b"/n\xff.json", "wb") as fh:
        fh.write(b"\xff\xfe junk")
    return "n\\xff.json"


HOSTILE = {"deep": _deep, "surrogate": _surrogate, "huge-int": _huge_int,
           "not-utf8-name": _not_utf8_name}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_record_is_one_line(tmp_path, kind):
    db = tmp_path / "osv"
    db.mkdir()
    (db / "good.json").write_text(GOOD)
    needle = HOSTILE[kind](db)
    with pytest.raises(ProvError) as err:
        load_db(db)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_symlink_loop_and_a_fifo_are_not_records(tmp_path):
    """Neither is followed or opened (a FIFO read would block forever)."""
    db = tmp_path / "osv"
    db.mkdir()
    (db / "good.json").write_text(GOOD)
    os.symlink(".", db / "loop")
    os.mkfifo(db / "f.json")
    _, facts = load_db(db)
    assert facts["records"] == 1


def test_the_cli_says_it_in_one_line(tmp_path):
    db = tmp_path / "osv"
    db.mkdir()
    _deep(db)
    manifest = tmp_path / "m.json"
    p = run_prov("snapshot", "-o", str(manifest), "-f", "json",
                 env={"PROV_STORE": str(tmp_path / "s")})
    assert p.returncode == 0, p.stderr
    p = run_prov("audit", "--manifest", str(manifest), "--osv-db", str(db),
                 env={"PROV_STORE": str(tmp_path / "s")})
    assert "deep.json: nested deeper than" in assert_one_line_error(p, 2)
