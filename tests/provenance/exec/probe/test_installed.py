"""Who installed a file (provenance/exec/probe/installed.py), against readers nobody here
wrote: importlib.metadata over every RECORD of this venv, and `dpkg-query -S`; read afresh
and from what prov's stamped cache kept, and after installs the cache did not see."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sysconfig
from collections import Counter
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from provenance.collectors import stamped
from provenance.exec.probe import installed
from provenance.exec.probe.installed import DpkgOwners, Installed
from tests.provenance.exec.probe.probe_support import build_wheel, pip_install


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """prov's cache in tmp_path; every value kept however fresh its files (the racy-file
    rule is stamped.py's own, tested there), and no index kept by this process."""
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(stamped, "RACY_NS", 0)
    monkeypatch.setattr(installed, "_SITE_MEMO", {})
    return tmp_path / "cache"


def _fresh() -> Installed:
    installed._SITE_MEMO.clear()  # what a new prov process starts with
    return Installed()


def _expected(site: str) -> dict[str, tuple[str, str, str]]:
    """importlib.metadata's reading of every RECORD: file in the site directory -> (dist,
    version, hash); files that two RECORDs list are left out (which one owns them is an
    order, not a fact), as are a wheel's scripts (bin/: outside any site directory)."""
    seen: dict[str, tuple[str, str, str]] = {}
    count: Counter[str] = Counter()
    for dist in importlib.metadata.distributions(path=[site]):
        name, version = canonicalize_name(dist.metadata["Name"]), dist.version
        for f in dist.files or ():
            path = os.path.normpath(os.path.join(site, f))
            count[path] += 1
            seen[path] = (name, version, f"{f.hash.mode}={f.hash.value}" if f.hash else "")
    return {p: v for p, v in seen.items() if count[p] == 1 and p.startswith(site + os.sep)}


def _owners(inst: Installed, paths) -> dict[str, tuple[str, str, str]]:
    out = {}
    for path in paths:
        owned = inst.wheel(path)
        out[path] = (owned.dist, owned.version, owned.record_hash) if owned else None
    return out


def test_every_file_of_this_venv_has_the_owner_importlib_metadata_reads(cache):
    site = sysconfig.get_paths()["purelib"]
    expected = _expected(site)
    assert len(expected) > 10_000, len(expected)  # torch, transformers, prov's own deps
    shipped = {p for p in expected if installed._is_shared_object(p)}
    inst = _fresh()
    assert _owners(inst, expected) == expected
    fresh_copies = set(inst.site(site).shared_objects())
    assert shipped <= {path for _, path, _ in fresh_copies}
    inst.save()
    kept = _fresh()  # a later run: names, top-level names and shared objects from the table
    assert kept.site(site).table.rows, "nothing was kept"
    assert _owners(kept, expected) == expected
    assert set(kept.site(site).shared_objects()) == fresh_copies


def test_a_lookup_reads_only_the_records_that_list_its_top_level_name(cache, monkeypatch):
    site = sysconfig.get_paths()["purelib"]
    path = os.path.join(site, "packaging", "utils.py")
    _fresh().wheel(path)
    first = _fresh()
    first.wheel(path)
    first.save()
    read: list[str] = []
    real = installed._record_rows
    monkeypatch.setattr(installed, "_record_rows", lambda rec: read.append(rec) or real(rec))
    owned = _fresh().wheel(path)
    assert owned is not None and owned.dist == "packaging"
    assert [Path(r).parent.name.split("-")[0] for r in read] == ["packaging"], read


def test_an_upgrade_after_the_table_was_kept_is_seen(cache, tmp_path):
    site = tmp_path / "lib" / "site-packages"
    pip_install(build_wheel(tmp_path, "tinydep", "1.0", {"tinydep/__init__.py": "x = 1\n"}),
                site)
    init, extra = site / "tinydep" / "__init__.py", site / "tinydep" / "extra.py"
    inst = _fresh()
    assert inst.wheel(str(init)).owner == "wheel:tinydep==1.0"
    inst.save()
    shutil.rmtree(tmp_path / "wheels", ignore_errors=True)
    (tmp_path / "wheels").mkdir()
    pip_install(build_wheel(tmp_path / "wheels", "tinydep", "2.0",
                            {"tinydep/__init__.py": "x = 2\n", "tinydep/extra.py": ""}), site)
    after = _fresh()
    assert after.wheel(str(init)).owner == "wheel:tinydep==2.0"
    assert after.wheel(str(extra)).owner == "wheel:tinydep==2.0"
    assert after.wheel(str(site / "tinydep" / "gone.py")) is None


def test_a_record_and_metadata_edited_in_place_are_read_again(cache, tmp_path):
    """The same dist-info directory, its files rewritten: a new top-level module in RECORD
    and another version in METADATA, each seen although the old ones were kept."""
    site = tmp_path / "lib" / "site-packages"
    pip_install(build_wheel(tmp_path, "tinydep", "1.0", {"tinydep/__init__.py": ""}), site)
    init, loose = str(site / "tinydep" / "__init__.py"), site / "tinyextra.py"
    loose.write_text("")
    inst = _fresh()
    assert inst.wheel(init).owner == "wheel:tinydep==1.0" and inst.wheel(str(loose)) is None
    inst.save()
    info = next(site.glob("tinydep-*.dist-info"))
    with (info / "RECORD").open("a") as fh:
        fh.write("tinyextra.py,sha256=edited,0\n")
    meta = info / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 1.0", "Version: 1.0.post1"))
    after = _fresh()
    assert after.wheel(str(loose)).record_hash == "sha256=edited"
    assert after.wheel(init).owner == "wheel:tinydep==1.0.post1"


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a dpkg system")
def test_the_owner_of_a_system_library_is_what_dpkg_query_says(cache):
    libc = os.path.realpath(next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6",
                                             "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                             "/lib/aarch64-linux-gnu/libc.so.6")
                                 if os.path.exists(p)))
    said = subprocess.run(["dpkg-query", "-S", libc], capture_output=True, text=True)
    if said.returncode != 0:  # usr-merge: dpkg knows the path under /lib
        said = subprocess.run(["dpkg-query", "-S", libc.replace("/usr/lib/", "/lib/", 1)],
                              capture_output=True, text=True, check=True)
    package = said.stdout.split(": ", 1)[0]  # "libc6:amd64: /usr/lib/..."
    fresh = DpkgOwners()
    assert fresh.owner(libc) == package
    fresh.save()
    kept = DpkgOwners()
    assert kept.answers.get(libc) == package  # from the kept answers, no list read
    assert kept.owner(libc) == package and not kept.dirty


def test_kept_dpkg_answers_end_when_a_list_is_added_or_changed(cache, tmp_path):
    info = tmp_path / "info"
    info.mkdir()
    (info / "a.list").write_text("/opt/x\n/opt/y\n")
    first = DpkgOwners(info)
    assert (first.owner("/opt/y"), first.owner("/opt/z")) == ("a", None)
    first.save()
    (info / "b.list").write_text("/opt/z\n")  # a package installed
    second = DpkgOwners(info)
    assert second.answers == {}  # the kept answers no longer hold
    assert second.owner("/opt/z") == "b"
    second.save()
    (info / "a.list").write_text("/opt/x\n")  # a package's files changed
    third = DpkgOwners(info)
    assert third.owner("/opt/y") is None and third.owner("/opt/z") == "b"


def test_kept_dpkg_answers_are_answered_again_when_the_lists_are_read(cache, tmp_path):
    """A list changed after the kept answers were loaded, then a path not answered before:
    the lists are read, and the loaded answers are taken from them too."""
    info = tmp_path / "info"
    info.mkdir()
    (info / "a.list").write_text("/opt/x\n/opt/y\n")
    first = DpkgOwners(info)
    assert first.owner("/opt/y") == "a"
    first.save()
    loaded = DpkgOwners(info)
    assert loaded.answers == {"/opt/y": "a"}
    (info / "a.list").write_text("/opt/x\n")  # while the run looks
    assert loaded.owner("/opt/x") == "a"
    assert loaded.owner("/opt/y") is None

