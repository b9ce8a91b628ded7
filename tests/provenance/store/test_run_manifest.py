"""The run's manifest: one rule (`run_manifest`), and its text form gives the same document."""

from __future__ import annotations

import pytest

from provenance.model import Manifest
from provenance.store.manifests import run_manifest, run_manifest_text

SNAPSHOT = Manifest({
    "python": {"packages": {"numpy": {"version": "2.0.0"}}, "executable": "/usr/bin/python3"},
    "env": {"OMP_NUM_THREADS": "4", "HOME": "/root"},
    "host": {"hostname": "a"},
})


@pytest.mark.parametrize("facts", [
    {"run": {"name": "n", "tags": {"study": "x"}, "params": {"dtype": "bf16"}}},  # context
    {"runtime": {"vllm": {"attention_backend": {"resolved": "FLASH_ATTN"}}}},  # identity
    {"run": {"name": "n"}, "runtime": {"kv_cache_dtype": "fp8"}},
])
def test_the_text_form_is_the_manifest_the_rule_builds(facts):
    m = run_manifest(SNAPSHOT, facts=facts)
    text, digest = run_manifest_text(SNAPSHOT.to_json(), SNAPSHOT.digest(), facts)
    assert (text, digest) == (m.to_json(), m.digest())
    assert Manifest.loads(text).digest() == digest  # the stored document verifies


def test_context_sections_keep_the_identity_and_identity_sections_change_it():
    context = run_manifest(SNAPSHOT, facts={"run": {"name": "n"}})
    runtime = run_manifest(SNAPSHOT, facts={"runtime": {"backend": "SDPA"}})
    assert context.digest() == SNAPSHOT.digest() != runtime.digest()
    assert context.get("run.name") == "n" and runtime.get("runtime.backend") == "SDPA"


def test_the_commands_env_joins_the_env_section_sorted():
    m = run_manifest(SNAPSHOT, env={"VLLM_USE_V1": "1", "OMP_NUM_THREADS": "8"})
    assert list(m.facts["env"]) == ["HOME", "OMP_NUM_THREADS", "VLLM_USE_V1"]
    assert m.get("env.OMP_NUM_THREADS") == "8" and m.digest() != SNAPSHOT.digest()


def test_a_record_from_before_the_run_manifest_is_completed_by_the_same_rule(tmp_path):
    from provenance.store import RunRecord, open_store

    store = open_store(tmp_path / "s")
    snap = store.put_manifest(SNAPSHOT)
    facts = {"runtime": {"backend": "SDPA"}, "run": {"name": "old"}}
    built = run_manifest(SNAPSHOT, facts=facts)
    old = RunRecord(run_id="0123456789abcdef", state="complete", command=("true",),
                    started_at="2026-11-30T00:00:00.000000Z", manifest=snap,
                    manifest_digest=built.digest(), facts=facts)  # no run_manifest field
    assert store.run_manifest(old).to_json() == built.to_json()
    new = old.replace(run_manifest=store.put_manifest(built))
    assert store.run_manifest(new).to_json() == built.to_json()
    assert store.run_manifest(old.replace(facts=None)).digest() == SNAPSHOT.digest()
