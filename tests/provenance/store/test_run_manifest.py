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
