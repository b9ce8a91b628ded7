# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""Loaded libraries: what /proc/<pid>/maps of the workload says, with real digests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

from provenance.collectors import stamped
from provenance.exec.libraries import FileDigestCache, LibrarySampler, descendants, parse_maps
from tests.exec_support import PYTHON, penv, prov, prov_cache, runs_json, show_json  # noqa: F401

WORKLOAD = (
    "import time, numpy\n"
    "a = numpy.ones((64, 64))\n"
    "print(float((a @ a).sum()))\n"  # BLAS really used
    "time.sleep(0.6)\n"
)


def sha256sum(path: str) -> str:
    out = subprocess.run(["sha256sum", path], capture_output=True, text=True, check=True).stdout
    return "sha256:" + out.split()[0]


def test_numpy_workload_records_its_shared_libraries_with_digests(penv):
    import numpy  # the package whose libraries must show up

    p = prov("exec", "-q", "--", PYTHON, "-c", WORKLOAD, env=penv)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"262144.0\n"
    rec = show_json(runs_json(penv)[0]["run_id"], penv)
    libs = {lib["path"]: lib for lib in rec["loaded_libraries"]}
    numpy_dir = os.path.dirname(numpy.__file__)
    umath = [p for p in libs if re.search(r"/numpy/_core/_multiarray_umath\..*\.so$", p)]
    assert umath and umath[0].startswith(numpy_dir), sorted(libs)
    # numpy wheels bundle their BLAS in numpy.libs/ (scipy-openblas)
    blas = [p for p in libs if "openblas" in p.lower()]
    assert blas, sorted(libs)
    for path in (umath[0], blas[0]):
        assert libs[path]["sha256"] == sha256sum(path)
        assert libs[path]["size"] == os.path.getsize(path)
    assert any(lib["name"].startswith("libc.so") for lib in libs.values())
    # the human view lists the numerics-relevant ones; --libs lists every one
    human = prov("show", rec["run_id"], env=penv).stdout.decode()
    assert umath[0] in human and blas[0] in human and "/libc.so" not in human
    assert "/libc.so" in prov("show", rec["run_id"], "--libs", env=penv).stdout.decode()


def test_two_numpy_runs_compare_their_common_libraries(penv):
    for _ in range(2):
        assert prov("exec", "-q", "--", PYTHON, "-c", WORKLOAD, env=penv).returncode == 0
    a, b = (r["run_id"] for r in runs_json(penv)[:2])
    c = prov("compare", a, b, "--json", env=penv)
    doc = json.loads(c.stdout)
    assert c.returncode == 0, c.stderr
    assert doc["loaded_libraries_compared"] >= 3


def test_sampler_sees_descendants_and_the_hasher_caches(tmp_path, monkeypatch):
    proc = subprocess.Popen(  # the grandchild lives until its stdin closes, below
        ["sh", "-c", f"{PYTHON} -c 'import sys, numpy; print(1, flush=True); sys.stdin.read()'"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout.readline() == b"1\n"  # numpy imported in the grandchild
        tree = descendants(proc.pid)
        assert len(tree) >= 2 and tree[0] == proc.pid
        s = LibrarySampler(proc.pid)
        s.sample()
        assert any("_multiarray_umath" in p for p in s.paths)
    finally:
        proc.stdin.close()
        proc.kill()
        proc.wait()
    cache = tmp_path / "digests.json"
    h = FileDigestCache(cache)
    target = next(p for p in s.paths if "_multiarray_umath" in p)
    size, digest = h.hash(target)
    h.save()
    assert digest == sha256sum(target) and size == os.path.getsize(target)
    kept = json.loads(cache.read_text())["rows"][target]
    assert kept == [stamped.stamp(target), digest]  # dev ino size mtime ctime, digest
    # a file written a moment ago is inside the racy window: hashed, never kept
    f = tmp_path / "libfake.so"
    f.write_bytes(b"one")
    assert h.hash(str(f))[1] == sha256sum(str(f)) and not h.cached(str(f))
    # counted as settled (a window of 0): a changed file is re-hashed, never served stale
    monkeypatch.setattr(stamped, "RACY_NS", 0)
    h2 = FileDigestCache(cache)
    d1 = h2.hash(str(f))[1]
    assert h2.cached(str(f))
    f.write_bytes(b"three")
    assert h2.hash(str(f))[1] == sha256sum(str(f)) != d1
    # same size, mtime put back: the ctime moved, so it is re-hashed too
    st = f.stat()
    for _ in range(200):  # the file system's clock is coarse: until the ctime has moved
        f.write_bytes(b"THREE")
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        if f.stat().st_ctime_ns != st.st_ctime_ns:
            break
        time.sleep(0.01)
    assert not h2.cached(str(f)) and h2.hash(str(f))[1] == sha256sum(str(f))



def test_the_digest_table_forgets_files_gone_when_it_next_writes(tmp_path, monkeypatch):
    """Runs read files in ever-new directories: a row whose file is gone is dropped when
    the table is next written, and a table with nothing new is not written at all."""
    monkeypatch.setattr(stamped, "RACY_NS", 0)  # every file counts as settled
    cache = tmp_path / "digests.json"
    kept, gone, new = (tmp_path / name for name in ("kept.bin", "gone.bin", "new.bin"))
    for f in (kept, gone, new):
        f.write_bytes(f.name.encode())

    def rows() -> set[str]:
        return set(json.loads(cache.read_text())["rows"])

    h = FileDigestCache(cache)
    h.hash(str(kept))
    h.hash(str(gone))
    h.save()
    assert rows() == {str(kept), str(gone)}
    gone.unlink()
    written = cache.stat().st_mtime_ns
    h = FileDigestCache(cache)
    assert h.hash(str(kept))[1] == sha256sum(str(kept)) and h.cached(str(kept))
    h.save()  # nothing new: not written, the gone row still there
    assert cache.stat().st_mtime_ns == written and rows() == {str(kept), str(gone)}
    h.hash(str(new))
    h.save()
    assert rows() == {str(kept), str(new)}

def test_parse_maps_keeps_file_backed_shared_objects_only():
    maps = (
        b"7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        b"7f01-7f02 r--p 00000000 08:01 124 /opt/x/_C.cpython-311-x86_64-linux-gnu.so\n"
        b"7f02-7f03 rw-p 00000000 00:00 0 [heap]\n"
        b"7f03-7f04 r-xp 00000000 08:01 125 /usr/bin/python3.11\n"
        b"7f04-7f05 r-xp 00000000 08:01 126 /tmp/libgone.so.1 (deleted)\n"
        b"7f05-7f06 r--p 00000000 08:01 127 /usr/lib/locale/C.utf8/LC_CTYPE\n"
    )
    assert parse_maps(maps) == {
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/opt/x/_C.cpython-311-x86_64-linux-gnu.so",
        "/tmp/libgone.so.1 (deleted)",
    }
    assert Path("/proc/self/maps").exists()
