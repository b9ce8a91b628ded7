"""Real transformers runs on CPU, each in its own worker process."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from provenance.model.disclosure import (
    Direction,
    DisclosureCard,
    NotApplicable,
    Vocabulary,
    problems,
    publish_problems,
)
from runners.diverge import run_diverge
from runners.engines import EngineConfig
from runners.launch import ungated
from runners.repeat import run_repeat
from runners.results import read_result


def test_same_implementation_repeats_bit_identical(prepared, tmp_path):
    cfg = EngineConfig.parse("transformers:attn=sdpa,dtype=float32")
    out = run_repeat(cfg, prepared, 2, tmp_path / "work", tmp_path / "res", block=128,
                     check=ungated)
    assert out.identical, out.verdict
    a, b = out.runs
    assert a.meta["pid"] != b.meta["pid"]  # separate processes
    assert np.array_equal(a.scores, b.scores)
    assert a.meta["digests"] == b.meta["digests"]
    # what ran, read by the in-process probe (a worker's own word is never its runtime)
    rt = a.meta["runtime"]
    assert rt["transformers"]["models"]["0"]["attn_implementation"] == "sdpa"
    kernels = rt["torch"]["sdpa_kernels"]  # the kernel torch's sdpa chose, per call shape
    assert kernels and set(kernels.values()) <= {"FLASH_ATTENTION", "EFFICIENT_ATTENTION",
                                                  "CUDNN_ATTENTION", "MATH"}
    assert rt == b.meta["runtime"]
    doc, _ = read_result(out.result_path)
    assert doc["summary"]["verdict"] == "bit-identical"
    card = DisclosureCard.from_dict(doc["disclosure"])  # the strict check, or it raises
    assert card.context_lengths == (len(prepared.ids),)
    assert card.sampled_positions.count == len(prepared.ids) - 1
    assert card.kl_direction == NotApplicable("repeatability compares raw bytes, no KL")
    assert card.aggregation.block == 128 and card.aggregation.runs == 2
    assert card.reference_checkpoint.digest == prepared.model_digest
    assert problems(doc["disclosure"]) == []


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_eager_vs_sdpa_differ_and_analysis_matches_scipy(prepared, tmp_path, dtype):
    from tests.runners import oracle

    ref_cfg = EngineConfig.parse(f"transformers:attn=eager,dtype={dtype}")
    cand_cfg = EngineConfig.parse(f"transformers:attn=sdpa,dtype={dtype}")
    floor = dtype == "float32"  # the noise floor once: it costs one more reference run
    out = run_diverge(ref_cfg, cand_cfg, prepared, tmp_path / "work", tmp_path / "res",
                      check=ungated, repeat_check=ungated, noise_floor=floor)
    ref, cand = out.ref.scores, out.cand.scores
    for run, attn in ((out.ref, "eager"), (out.cand, "sdpa")):
        assert run.meta["runtime"]["transformers"]["models"]["0"]["attn_implementation"] == attn
    # not bit-identical: the attention implementations round differently
    assert not np.array_equal(ref, cand)
    assert out.ref.meta["digests"]["logits"] != out.cand.meta["digests"]["logits"]

    # independent computation from the stored logits, with scipy
    lp = special.log_softmax(ref.astype(np.float64), axis=1)
    lq = special.log_softmax(cand.astype(np.float64), axis=1)
    kl = special.rel_entr(np.exp(lp), np.exp(lq)).sum(axis=1)
    agree = ref.argmax(axis=1) == cand.argmax(axis=1)
    first = int(np.flatnonzero(~agree)[0]) if (~agree).any() else None

    doc, arrays = read_result(out.result_path)
    s = doc["summary"]
    assert abs(s["top1_agreement"] - agree.mean()) <= 1e-6
    assert s["first_disagreement"] == first
    assert abs(s["kl_ref_cand"]["mean"] - kl.mean()) <= 1e-6
    assert np.max(np.abs(arrays["kl_ref_cand"] - kl)) <= 1e-6
    assert s["kl_ref_cand"]["mean"] > 0
    # every figure (llama.cpp's and exllamav3's) against the independent float64 oracle
    e = oracle.expected(ref, cand, prepared.ids)
    oracle.check_summary(s, e)
    oracle.check_arrays(arrays, e)
    assert s["kl_lower_bound"] is False and s["perplexity"]["labels"] == len(ref)
    if floor:  # a second execution of the reference: bit for bit the first on CPU
        repeat = np.load(tmp_path / "work" / "ref_repeat" / "scores.npz")["scores"]
        assert np.array_equal(repeat, ref)
        nf = s["noise_floor"]
        assert nf["bit_identical"] and nf["bit_identical_positions"] == len(ref)
        assert nf["kl_ref_cand"]["max"] == nf["kl_cand_ref"]["max"] == 0.0
        assert (nf["top1_agreement"], nf["max_abs_logit_delta"]) == (1.0, 0.0)
        assert doc["runs"]["reference_repeat"] is None  # standalone: no run records
        assert "the noise floor on the same positions" in \
            doc["disclosure"]["sampled_positions"]["rule"]
    else:
        assert "--no-noise-floor" in s["noise_floor"]["not_computable"]
        assert not (tmp_path / "work" / "ref_repeat").exists()
    card = DisclosureCard.from_dict(doc["disclosure"])  # the strict check, or it raises
    assert card.kl_direction is Direction.BOTH
    assert card.vocabulary_truncation.mode is Vocabulary.FULL
    assert card.context_lengths == (len(prepared.ids),)
    assert card.sampled_positions.count == s["positions"] == len(prepared.ids) - 1
    assert card.aggregation.bootstrap.block == s["ci"]["kl_ref_cand_mean"]["block"]
    assert card.runtime_environment.runtime["reference"] == out.ref.meta["runtime"]
    assert publish_problems(doc["disclosure"]) == []  # publishable as a KL figure


def test_refuses_unknown_options():
    from runners.engines import EngineError

    with pytest.raises(EngineError, match="unknown transformers option"):
        EngineConfig.parse("transformers:attention=eager")
    with pytest.raises(EngineError, match="dtype"):
        EngineConfig.parse("transformers:dtype=float8")


REBUILD = """
import sys, numpy as np, torch
from safetensors.numpy import load_file
head = load_file(sys.argv[1])["lm_head.weight"]
hidden = torch.from_numpy(np.load(sys.argv[2]))[None]
rebuilt = torch.nn.functional.linear(hidden, torch.from_numpy(head))[0, :-1].numpy()
np.save(sys.argv[3], rebuilt)
"""


def test_full_logits_rebuild_exactly_from_stored_hidden_and_head(prepared, demo_model, tmp_path):
    import hashlib
    import subprocess
    import sys

    from safetensors.numpy import load_file

    ref_cfg = EngineConfig.parse("transformers:attn=eager")
    cand_cfg = EngineConfig.parse("transformers:attn=eager,dtype=bfloat16")
    out = run_diverge(ref_cfg, cand_cfg, prepared, tmp_path / "work", tmp_path / "res",
                      check=ungated, repeat_check=ungated, noise_floor=False)
    doc, arrays = read_result(out.result_path)
    weights = demo_model / "model.safetensors"
    head = load_file(str(weights))["lm_head.weight"]
    assert hashlib.sha256(head.tobytes()).hexdigest() == doc["output_head_digest"]
    np.save(tmp_path / "hidden.npy", arrays["ref_final_hidden"])
    # torch in a child process: the test process stays small (other tests fork from it)
    subprocess.run([sys.executable, "-c", REBUILD, str(weights), str(tmp_path / "hidden.npy"),
                    str(tmp_path / "rebuilt.npy")], check=True)
    assert np.array_equal(np.load(tmp_path / "rebuilt.npy"), out.ref.scores)  # bit for bit
