# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""Record shipping between stores: runs recorded by `prov exec` into one store, merged into
another. Identical objects dedupe, nothing is overwritten, a corrupt batch writes nothing,
and the receiving store passes `prov store fsck` (its own re-hash of every object)."""

from __future__ import annotations

import json
import os

import pytest

from provenance.store import CorruptObject, open_store
from provenance.store.merge import export_objects, import_objects, run_closure
from tests.exec_support import PYTHON, penv, prov, prov_cache  # noqa: F401 - fixtures


def _exec(env, *argv):
    out = prov("exec", "--output", "out.txt", "--", *argv, env=env, cwd=env["_CWD"])
    assert out.returncode == 0, out.stderr
    return json.loads(prov("runs", "--json", env=env).stdout)[0]["run_id"]


@pytest.fixture
def node(tmp_path, penv):
    env = {**penv, "PROV_STORE": str(tmp_path / "node-store"), "_CWD": str(tmp_path)}
    return env


def test_merge_two_runs_dedupes_and_fscks_clean(tmp_path, node, penv):
    script = "import sys; open('out.txt','w').write(sys.argv[1]); print(sys.argv[1])"
    a = _exec(node, PYTHON, "-c", script, "one")
    b = _exec(node, PYTHON, "-c", script, "two")
    src = open_store(node["PROV_STORE"])
    dst = open_store(tmp_path / "driver")
    first = import_objects(dst, export_objects(src, run_closure(src, a)))
    assert first.added > 0 and first.present == 0 and first.runs == [a]
    second = import_objects(dst, export_objects(src, run_closure(src, b)))
    # same environment: b's snapshot manifest is already there (and identical logs would be)
    assert second.present >= 1 and second.runs == [b]
    again = import_objects(dst, export_objects(src, run_closure(src, b)))
    assert again.added == 0 and again.runs == []  # nothing rewritten, no row moved
    assert dst.get_run(a).state == "complete" and dst.get_run(b).state == "complete"
    assert dst.get_run(a).record_digest == src.get_run(a).record_digest
    out = prov("store", "fsck", "--json", env={**penv, "PROV_STORE": str(dst.root)})
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["ok"] and report["runs"] == {"complete": 2}
    assert report["orphaned"] == [] and report["unindexed_runs"] == []
    # the index agrees with one rebuilt from the objects alone
    before = sorted((r.run_id, r.record_digest) for r in dst.list_runs())
    assert prov("store", "reindex", env={**penv, "PROV_STORE": str(dst.root)}).returncode == 0
    assert sorted((r.run_id, r.record_digest) for r in dst.list_runs()) == before


def test_corrupt_batch_writes_nothing(tmp_path, node):
    a = _exec(node, PYTHON, "-c", "open('out.txt','w').write('x')")
    src = open_store(node["PROV_STORE"])
    items = export_objects(src, run_closure(src, a))
    items[-1] = (items[-1][0], items[-1][1] + b"tampered")
    dst = open_store(tmp_path / "driver")
    with pytest.raises(CorruptObject):
        import_objects(dst, items)
    objs = dst.root / "objects" / "sha256"
    assert not objs.exists() or not any(objs.rglob("*"))


def test_present_object_is_never_overwritten(tmp_path, node):
    a = _exec(node, PYTHON, "-c", "open('out.txt','w').write('y')")
    src = open_store(node["PROV_STORE"])
    items = export_objects(src, run_closure(src, a))
    dst = open_store(tmp_path / "driver")
    import_objects(dst, items)
    digest = items[0][0]
    path = dst.objects.path_for(digest)
    st = os.stat(path)
    import_objects(dst, items)
    assert os.stat(path).st_ino == st.st_ino and os.stat(path).st_mtime_ns == st.st_mtime_ns
