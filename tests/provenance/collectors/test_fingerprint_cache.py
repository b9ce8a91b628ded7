"""The per-distribution fingerprint table (`python_env.fingerprint_table`, a `stamped` table): a
warm collection says exactly what a cold one says, and a changed RECORD or (with
--verify-files) a changed file is still seen. RECORDs made a moment ago are inside the racy
window, whose rows are never kept: the fixture counts them as settled (a window of 0), except
in the test of the window itself."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from provenance.collectors import python_env, stamped
from tests.provenance.collectors.test_python_env import make_dist

RACY_NS = stamped.RACY_NS


@pytest.fixture()
def site(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(stamped, "RACY_NS", 0)
    site = tmp_path / "site"
    for name in ("alpha", "beta"):
        make_dist(site, name, "1.0", {f"{name}/__init__.py": b"x = 1\n"})
    return site


def collect(site: Path, **kw) -> dict:
    return python_env.collect([str(site)], **kw)["section"]["packages"]


def cache_file(site: Path) -> Path:
    return Path(python_env.fingerprint_table([str(site)]).path)


def rows(site: Path) -> dict:
    return python_env.fingerprint_table([str(site)]).rows


def test_warm_equals_cold_and_the_cache_is_used(site):
    cold = collect(site, use_cache=False)
    first = collect(site)
    assert cache_file(site).exists()
    assert len(rows(site)) == 2
    assert collect(site) == first == cold


def test_a_rewritten_record_is_seen(site):
    before = collect(site)["alpha"]
    record = site / "alpha-1.0.dist-info" / "RECORD"
    text = record.read_text().replace("alpha/__init__.py,sha256=", "alpha/__init__.py,sha256=A")
    tmp = record.with_name("RECORD.new")  # as installers do: a new file renamed over the old
    tmp.write_text(text)
    os.replace(tmp, record)
    after = collect(site)["alpha"]
    assert after["fingerprint"] != before["fingerprint"]
    assert after == collect(site, use_cache=False)["alpha"]


def test_a_record_edited_in_place_is_seen(site):
    before = collect(site)["beta"]
    record = site / "beta-1.0.dist-info" / "RECORD"
    with open(record, "a") as fh:  # same inode; size and mtime change
        fh.write("beta/extra.py,sha256=abc,3\n")
    assert collect(site)["beta"]["fingerprint"] != before["fingerprint"]


def test_a_racy_record_is_not_cached(site, monkeypatch):
    """The real window: the RECORDs were written a moment ago, so no row is kept."""
    monkeypatch.setattr(stamped, "RACY_NS", RACY_NS)
    assert collect(site) == collect(site, use_cache=False)
    assert rows(site) == {}


def test_verify_files_sees_an_edited_file_with_a_warm_cache(site):
    collect(site)
    (site / "alpha" / "__init__.py").write_text("x = 2\n")
    got = collect(site, verify=True)
    assert got["alpha"]["modified_files"] == ["alpha/__init__.py"]


def test_a_removed_distribution_leaves_the_cache(site):
    collect(site)
    shutil.rmtree(site / "beta-1.0.dist-info")
    assert list(collect(site)) == ["alpha"]
    assert len(rows(site)) == 1


def test_a_damaged_cache_is_ignored(site):
    cold = collect(site, use_cache=False)
    collect(site)
    cache_file(site).write_text("{not json")
    assert collect(site) == cold
