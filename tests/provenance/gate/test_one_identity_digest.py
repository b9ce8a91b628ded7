# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""One run, one identity digest: `prov show`, `prov compare` and the comparison record agree."""

from __future__ import annotations

import json

import pytest

from tests.exec_support import PYTHON, penv, prov, prov_cache, show_json  # noqa: F401

pytestmark = pytest.mark.slow  # processes and venvs: not in make test-fast

WORKLOAD = (
    "import json\n"  # maps the _json extension: the run has loaded libraries to compare
    "from runners.runfacts import add_run_facts\n"
    "add_run_facts({'runtime': {'demo': {'attention_backend': {'resolved': 'SDPA'}}}})\n"
)


def test_show_compare_and_the_record_print_one_identity_digest(penv):
    p = prov("exec", "-q", "--name", "one", "--", PYTHON, "-c", WORKLOAD, env=penv)
    assert p.returncode == 0, p.stderr
    run = json.loads(prov("runs", "--json", env=penv).stdout)[0]["run_id"]
    shown = show_json(run, penv)["manifest_digest"]
    cmp = prov("compare", run, run, "--json", env=penv)
    assert cmp.returncode == 0, cmp.stderr
    doc = json.loads(cmp.stdout)
    assert doc["loaded_libraries_compared"] > 0  # libraries took part in the comparison
    from provenance.store import open_store

    store = open_store(penv["PROV_STORE"])
    saved = store.get_json(doc["record"])
    rec = store.get_run(run).record
    printed = {shown, doc["digest"]["a"], doc["digest"]["b"], saved["digest"]["a"],
               saved["a"]["manifest_digest"], saved["b"]["manifest_digest"]}
    assert printed == {rec.manifest_digest}
    # the digest is the stored run manifest's, and that manifest holds the run's own facts
    manifest = store.manifest_object(rec.run_manifest)
    assert manifest.digest() == rec.manifest_digest != rec_snapshot_digest(store, rec)
    assert manifest.get("runtime.demo.attention_backend.resolved") == "SDPA"


def rec_snapshot_digest(store, rec) -> str:
    return store.manifest_object(rec.manifest).digest()
