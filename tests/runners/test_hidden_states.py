"""Hidden-state results (runners/hidden.py): the storage round trip through a real worker, the
chunked rebuild + analysis (host path here; the fused kernel under the Triton interpreter in a
child process), the output head's digest check, and repeats compared on hidden states."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runners.api import EngineConfig, read_result, run_diverge, run_repeat, ungated
from runners.hidden import HIDDEN_CELLS, sample_rows, store_mode, to_float32
from runners.hidden_analysis import HiddenStateError

ROOT = Path(__file__).resolve().parents[2]
U = 2.0 ** -24
REF = "transformers:attn=eager,dtype=bfloat16"
CAND = "transformers:attn=sdpa,dtype=bfloat16"


def test_store_mode_switches_above_the_threshold():
    assert store_mode(None, 1 << 14, 1 << 14) == "logits"  # exactly 2^28 cells
    assert store_mode("auto", (1 << 14) + 1, 1 << 14) == "hidden"
    assert store_mode("hidden", 2, 2) == "hidden" and store_mode("logits", 10**6, 10**6) \
        == "logits"
    assert HIDDEN_CELLS == 1 << 28
    with pytest.raises(ValueError, match="store must be one of"):
        store_mode("half", 2, 2)


def test_sample_rows_are_spread_and_bounded():
    rows = sample_rows(131071)
    assert len(rows) == 64 and rows[0] == 0 and rows[-1] == 131070
    assert np.all(np.diff(rows) > 0)
    assert list(sample_rows(5)) == [0, 1, 2, 3, 4]


def test_bf16_bits_read_back_exactly():
    vals = np.array([1.0, -2.5, 3.140625, 0.0, -0.0, 65280.0], dtype=np.float32)
    bits = (vals.view(np.uint32) >> np.uint32(16)).astype(np.uint16).view(np.int16)
    assert np.array_equal(to_float32(bits, "bfloat16"), vals)


@pytest.fixture(scope="module")
def pair(prepared, tmp_path_factory):
    """The same pair of engines stored both ways (standalone workers); the hidden-state one
    with its noise floor (the reference's hidden states stored twice)."""
    base = tmp_path_factory.mktemp("hidden")
    hid = run_diverge(EngineConfig.parse(REF + ",store=hidden"),
                      EngineConfig.parse(CAND + ",store=hidden"), prepared, base / "wh",
                      base / "rh", check=ungated, repeat_check=ungated)
    log = run_diverge(EngineConfig.parse(REF + ",store=logits"),
                      EngineConfig.parse(CAND + ",store=logits"), prepared, base / "wl",
                      base / "rl", check=ungated, repeat_check=ungated, noise_floor=False)
    return hid, log, base


def test_worker_stores_hidden_states_not_logits(pair, demo_model, prepared):
    from runners.hidden import head_sha256
    from runners.hidden_analysis import load_head

    hid, _, base = pair
    with np.load(base / "wh" / "ref" / "scores.npz") as z:
        files = {k: z[k] for k in z.files}
    meta = json.loads((base / "wh" / "ref" / "run.json").read_text())
    n = len(prepared.ids) - 1
    st = meta["storage"]
    assert meta["kind"] == "hidden" and st["kind"] == "hidden" and st["hidden_dtype"] == \
        "bfloat16"
    assert files["scores"].shape[0] == 0  # no score rows at all
    assert files["final_hidden"].dtype == np.int16  # bf16 bits
    assert files["final_hidden"].shape == tuple(st["hidden_shape"]) == (n, 128)
    rows = files["sample_rows"]
    assert np.array_equal(rows, sample_rows(n))
    assert files["sample_logits"].shape == (len(rows), st["head"]["shape"][0])
    assert "logits_sampled" in meta["digests"] and "logits" not in meta["digests"]
    # the head as the engine held it (the fp32 checkpoint cast to bf16), found by name
    assert st["head"]["tensor"] == "lm_head.weight" and st["head"]["dtype"] == "bfloat16"
    head = load_head(demo_model, "lm_head.weight", "bfloat16", st["head"]["sha256"])
    assert head_sha256(head) == st["head"]["sha256"] == meta["head_digest"]
    assert head.shape == tuple(st["head"]["shape"])


def test_rebuilt_analysis_equals_the_logits_analysis(pair):
    hid, log, _ = pair
    for k in ("ref_top1", "cand_top1", "kl_ref_cand", "kl_cand_ref", "delta_p", "margin",
              "ref_p_top1", "ref_logp_next", "cand_logp_next", "top_agree_depth",
              "ref_label_rank", "cand_label_rank"):
        assert np.array_equal(hid.arrays[k], log.arrays[k]), k
    for k in ("same_top_p", "topk_agreement", "label_in_topk", "kl_by_confidence",
              "perplexity", "delta_p", "kl_ref_cand"):
        assert hid.summary[k] == log.summary[k], k
    # the noise floor of a hidden-state reference: its stored hidden states, bit for bit
    nf = hid.summary["noise_floor"]
    assert nf["bit_identical"] and nf["bit_identical_positions"] == hid.summary["positions"]
    assert nf["kl_ref_cand"]["max"] == 0.0 and "final hidden states" in nf["compared"]
    assert "--no-noise-floor" in log.summary["noise_floor"]["not_computable"]
    floor = hid.summary["self_kl_floor"]
    for side in ("ref", "cand"):
        assert floor[side]["rows"] == 64 and floor[side]["top1_equal"]
        assert floor[side]["max_abs_logit_delta"] == 0.0  # CPU: the engine's own matmul
    doc, arrays = read_result(hid.result_path)
    assert doc["storage"]["reference"]["kind"] == "hidden"
    assert doc["analysis"]["device"] == "cpu" and "numpy" in doc["analysis"]["kernel"]
    card = doc["disclosure"]
    from provenance.model.disclosure import problems

    assert problems(card) == []
    vocab = card["vocabulary_truncation"]
    assert vocab["mode"] == "full" and vocab["size"] > 0
    assert "rebuilt" in vocab["note"] and "64/64 rows bit-identical" in vocab["note"]
    assert "64 evenly spaced positions" in card["sampled_positions"]["rule"]
    assert "ref_final_hidden" not in arrays  # the runs' own outputs hold the hidden states


def test_a_different_output_head_is_refused(pair, demo_model, prepared, tmp_path):
    import shutil

    from safetensors.numpy import load_file, save_file

    from runners.diverge import analyse_pair

    hid, _, base = pair
    other = tmp_path / "model"
    shutil.copytree(demo_model, other)
    w = load_file(str(other / "model.safetensors"))
    w["lm_head.weight"] = w["lm_head.weight"].copy()
    w["lm_head.weight"][0, 0] += 1.0
    save_file(w, str(other / "model.safetensors"))
    with pytest.raises(HiddenStateError, match="not the runs' model"):
        analyse_pair(hid.ref, hid.cand, dataclasses.replace(prepared, model=other),
                     base / "wh")


def test_mixed_storage_is_refused(pair, prepared):
    from runners.diverge import analyse_pair

    hid, log, base = pair
    with pytest.raises(HiddenStateError, match="same store= option"):
        analyse_pair(hid.ref, log.cand, prepared, base / "wh")


def test_repeats_compare_hidden_state_runs(prepared, tmp_path):
    out = run_repeat(EngineConfig.parse(REF + ",store=hidden"), prepared, 2, tmp_path / "w",
                     tmp_path / "r", check=ungated)
    assert out.identical and out.verdict["verdict"] == "bit-identical"
    digests = out.runs[0].meta["digests"]
    assert {"final_norm", "logits_sampled"} <= set(digests) and "logits" not in digests
    assert out.verdict["layers"] == len(digests)
    # a differing block is sized on the hidden states (hidden-state runs keep no scores)
    from runners.repeat import compare_repeats

    other = dataclasses.replace(out.runs[1], meta=json.loads(json.dumps(out.runs[1].meta)))
    other.meta["digests"]["final_norm"][1] = "changed"
    other.final_hidden = out.runs[1].final_hidden.copy()
    other.final_hidden[300, 0] ^= 1 << 14  # a high bit of one bf16 value in block 1
    v = compare_repeats([out.runs[0], other], 256)
    assert (v["verdict"], v["layer"], v["block"], v["positions"]) == \
        ("differs", "final_norm", 1, [256, 383])
    assert v["final_hidden_max_abs_diff_in_block"] > 0 and \
        v["final_hidden_max_abs_diff"] == v["final_hidden_max_abs_diff_in_block"]


@pytest.fixture(scope="module")
def interpreted() -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, str(ROOT / "tests/runners/rebuild_check.py"), "1"],
                          capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_chunked_rebuild_fused_matches_host(interpreted):
    assert interpreted["top1_equal"] and interpreted["chunked_equals_whole"]
    assert interpreted["chunk_rows"] == 16 and interpreted["rows_on_disk"] == 50
    # fp32 sums of n = 700 terms (test_fused.py's bound, logits of scale ~ 4: |lse| < 12)
    tol = 8 * (np.log2(700) + 700 / 512 + 8) * U * (1 + 12)
    for k, err in interpreted["max_abs_diff"].items():
        assert err <= tol, (k, err, tol)
    assert interpreted["identical_row_kl"] == [0.0, 0.0]
    assert interpreted["host_kl_mean"] > 1e-4  # the candidate does differ
    # the ordered top-10 lists beside the kernel (torch.topk, ties by the lower id) equal the
    # host's and numpy's stable argsort, ties across the 10th place included
    assert interpreted["lists_equal"] and interpreted["lists_match_argsort"]
    assert interpreted["boundary_ties"] > 0 and interpreted["inner_ties"] > 0
    assert interpreted["stress_lists_equal"] and interpreted["stress_boundary_ties"] > 30
    assert interpreted["logit_delta_diff"] == 0.0


def test_hidden_noise_floor_matches_the_oracle(interpreted):
    """Seven rows of the repeat's hidden states differ: only they are rebuilt and analysed,
    the rest count 0; the figures equal the float64 oracle's on the rebuilt logits."""
    got, want = interpreted["noise_hidden"]["got"], interpreted["noise_hidden"]["want"]
    assert (got["bit_identical_positions"], got["positions"]) == (43, 50)
    assert got["bit_identical"] is want["bit_identical"] is False
    for side in ("kl_ref_cand", "kl_cand_ref"):
        for k, v in want[side].items():
            assert got[side][k] == pytest.approx(v, rel=1e-9, abs=1e-15), (side, k)
    assert got["kl_ref_cand"]["max"] > 0
    assert got["max_abs_logit_delta"] == want["max_abs_logit_delta"] > 0
    assert got["top1_agreement"] == want["top1_agreement"]
    same = interpreted["noise_hidden_identical"]
    assert same["bit_identical"] and same["kl_ref_cand"]["max"] == 0.0


def test_chunked_rebuild_streams_every_field_to_disk(interpreted):
    assert interpreted["files"] == sorted(f"{k}.npy" for k in (
        "ref_top1", "cand_top1", "margin", "kl_ref_cand", "kl_cand_ref", "delta_p",
        "ref_p_top1", "ref_logp_next", "cand_logp_next", "top_agree_depth", "ref_label_rank",
        "cand_label_rank"))
    for side in ("ref", "cand"):
        f = interpreted["floor"][side]
        assert f["rows"] == 3 and f["top1_equal"] and f["self_kl_max"] < 1e-9


def test_cli_diverge_on_hidden_states_through_the_gate(demo_model, tmp_path):
    from tests.runners.clihelp import prov

    out = tmp_path / "res"
    p = prov("run", "diverge", "--ref", REF + ",store=hidden", "--cand", CAND + ",store=hidden",
             "--model", str(demo_model), "--text", str(demo_model / "eval.txt"),
             "--max-tokens", "200", "--vary", "attention-backend", "--out", str(out), "--json",
             "--no-noise-floor", store=tmp_path / "store", cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    summary = json.loads(p.stdout)
    assert summary["positions"] == 199 and summary["self_kl_floor"]["ref"]["rows"] == 64
    doc, _ = read_result(out)
    assert doc["comparison"]["gate"] == "passed" and doc["storage"]["candidate"]["kind"] == \
        "hidden"
    # the result's report says how its logits were obtained; the stored comparison's report
    # (whose runs kept no score rows) renders without plots rather than failing
    for target, name in ((str(out), "r.html"), (doc["comparison"]["comparison_record"], "c.html")):
        p = prov("report", target, "--out", str(tmp_path / name), store=tmp_path / "store",
                 cwd=tmp_path)
        assert p.returncode == 0, p.stderr[-2000:]
    html = (tmp_path / "r.html").read_text()
    assert "<td>stored</td><td>bfloat16 final hidden states [199, 128]" in html
    assert "logits rebuilt on cpu" in html


def test_cli_refuses_a_gpu_analysis_without_a_gpu(demo_model, tmp_path):
    from tests.runners.clihelp import prov

    out = tmp_path / "res"
    p = prov("run", "diverge", "--ref", REF + ",store=hidden", "--cand", CAND + ",store=hidden",
             "--model", str(demo_model), "--text", str(demo_model / "eval.txt"),
             "--max-tokens", "100", "--standalone", "--out", str(out),
             store=tmp_path / "store", cwd=tmp_path, env={"PROV_ANALYSIS_DEVICE": "cuda"})
    assert p.returncode == 3, p.stderr
    assert "torch sees no GPU" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and not out.exists()
