# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""One resolver of what the user named (issue #31 item 6): every command that takes a run
or a manifest says the same thing about the same bad name, and each accepts what the store
holds (a run id prefix, a stored manifest digest) as well as a file."""

from __future__ import annotations

import json

import pytest

from provenance.model.errors import ProvError
from provenance.sbom.source import resolve_subject
from provenance.store import open_store
from tests.exec_support import penv, prov, prov_cache, runs_json  # noqa: F401

SOURCES = [("sbom",), ("audit", "--osv-db", "{tmp}"), ("lock", "--out", "{tmp}/pylock.toml"),
           ("publish", "{tmp}/r.json", "--out", "{tmp}/b")]


def test_one_resolver_one_set_of_messages(penv, tmp_path, monkeypatch):
    (tmp_path / "r.json").write_text("{}")
    prov("exec", "-q", "--", "true", env=penv)
    said = set()
    for cmd in SOURCES:
        p = prov(*[a.replace("{tmp}", str(tmp_path)) for a in cmd], "--run", "0000beef",
                 env=penv)
        err = p.stderr.decode().strip()
        assert p.returncode == 2 and len(err.splitlines()) == 1, err
        said.add(err)
    assert said == {f"prov: error: --run 0000beef: no such manifest file, run or stored "
                    f"manifest in {penv['PROV_STORE']}"}
    # the same resolver in-process: a stored manifest names no run; one source at a time;
    # a run and its stored manifest resolve to one manifest
    monkeypatch.setenv("PROV_STORE", penv["PROV_STORE"])
    run_id = runs_json(penv)[0]["run_id"]
    record = open_store().get_run(run_id).record
    with pytest.raises(ProvError, match=r"^--run \w+: not a run \(it names a manifest\)$"):
        resolve_subject(run=record.manifest[7:19])
    with pytest.raises(ProvError, match=r"^give at most one of --image, --run, --manifest, "
                                        r"--python \(got --image, --run\)$"):
        resolve_subject(run="x", image="y")
    by_run = resolve_subject(run=run_id[:8])
    by_digest = resolve_subject(manifest=record.run_manifest[:20])
    assert by_run.kind == "run" and by_digest.kind == "manifest"
    assert by_run.manifest.digest() == by_digest.manifest.digest() == record.manifest_digest
    assert json.loads(by_digest.manifest.to_json())  # a whole manifest, not a stub
