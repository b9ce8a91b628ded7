"""transformers under `prov exec`: the attention implementation, dtype and model files."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.exec_support import (  # noqa: F401 - fixtures
    PYTHON,
    last_run,
    penv,
    prov,
    prov_cache,
)
from tests.runners.vllm_venv import CACHE

SCRIPT = """
import os, sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
attn = os.environ["ATTN"]  # not on the command line: read, so identity too (env.ATTN)
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], attn_implementation=attn)
tok = AutoTokenizer.from_pretrained(sys.argv[1])
ids = torch.tensor([tok.encode("the cat")])
print(repr(float(model(ids).logits.sum())))
"""


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A copy of the demo model (built by project code, cached), free to edit."""
    from runners.demo.build import ensure

    built = ensure(CACHE / "demo-model", steps=120)
    out = tmp_path_factory.mktemp("model") / "demo-model"
    shutil.copytree(built, out)
    return out


def run(penv, tmp_path, model_dir, attn):
    script = tmp_path / "load.py"
    script.write_text(SCRIPT)
    p = prov("exec", "-q", "--", PYTHON, str(script), str(model_dir), env=dict(penv, ATTN=attn),
             timeout=300)
    assert p.returncode == 0, p.stderr
    return last_run(penv)


def compare(penv, a, b, *vary):
    flags = [x for v in vary for x in ("--vary", v)]
    p = prov("compare", a["run_id"], b["run_id"], *flags, "--json", env=penv)
    return p.returncode, json.loads(p.stdout)


def test_eager_vs_sdpa_is_refused_and_covered_by_the_attention_backend_preset(
        penv, tmp_path, model_dir):
    a = run(penv, tmp_path, model_dir, "eager")
    b = run(penv, tmp_path, model_dir, "sdpa")
    model = a["facts"]["runtime"]["transformers"]["models"]["0"]
    assert model["class"] == "Qwen3ForCausalLM" and model["dtype"] == "float32"
    assert model["name_or_path"] == "local:demo-model" and model["quantization"] == "none"
    key = "runtime.transformers.models.0.attn_implementation"
    # the sdpa run also records the kernel torch's sdpa chose; eager never calls sdpa
    kernels = b["facts"]["runtime"]["torch"]["sdpa_kernels"]
    assert kernels and "sdpa_kernels" not in a["facts"]["runtime"]["torch"]
    assert all(k.startswith("cpu/float32/head_dim:") for k in kernels)
    keys = {key, key + "_requested"} | {"runtime.torch.sdpa_kernels." + k for k in kernels}
    rc, doc = compare(penv, a, b)
    assert rc == 3 and set(doc["refused"]) == keys | {"env.ATTN"}
    assert doc["refused"][key]["a"] == "eager" and doc["refused"][key]["b"] == "sdpa"
    rc, doc = compare(penv, a, b, "attention-backend", "env.ATTN")
    assert rc == 0 and set(doc["varied"]["attention-backend"]["keys"]) == keys
    files = a["facts"]["model"]["files"]
    assert {"model.safetensors", "tokenizer.json", "config.json"} <= set(files)
    assert b["facts"]["model"]["files"]["model.safetensors"]["source"] == "cache"


def test_a_weights_file_edited_in_place_is_caught(penv, tmp_path, model_dir):
    a = run(penv, tmp_path, model_dir, "eager")
    weights = model_dir / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01  # same name, same size, one bit of the last tensor
    weights.write_bytes(bytes(data))
    b = run(penv, tmp_path, model_dir, "eager")
    rc, doc = compare(penv, a, b)
    key = 'model.files."model.safetensors".sha256'
    assert rc == 3 and key in doc["refused"], doc["refused"]
    # the digest is the edited file's own (no stale cached one; the run's live facts may
    # have computed it first, so its source may be the cache of this very run)
    import hashlib

    got = b["facts"]["model"]["files"]["model.safetensors"]["sha256"]
    assert got.removeprefix("sha256:") == hashlib.sha256(weights.read_bytes()).hexdigest()
    rc, doc = compare(penv, a, b, "weights")
    assert rc == 0, doc["refused"]


def test_model_file_digests_equal_model_signing(tmp_path, model_dir):
    from provenance.exec.probe.hashing import file_hasher
    from provenance.exec.probe.model_files import digest
    from tests.provenance.exec.probe.model_signing_venv import model_signing_python

    try:
        py = model_signing_python()
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build the model-signing venv (PyPI unreachable?): {exc}")
    oracle = subprocess.run(
        [str(py), "-c", "import sys, model_signing.hashing as h\n"
         "for r in h.hash(sys.argv[1]).resource_descriptors():\n"
         "    print(r.identifier, r.digest.digest_value.hex())", str(model_dir)],
        capture_output=True, text=True, check=True, timeout=300)
    theirs = dict(line.split() for line in oracle.stdout.splitlines())
    hasher = file_hasher(tmp_path / "digests.json")
    ours = {f.name: digest(str(f), hasher)[0] for f in model_dir.iterdir() if f.is_file()}
    assert set(theirs) == set(ours) and len(ours) >= 5
    assert {k: "sha256:" + v for k, v in theirs.items()} == ours


# transformers 5's own resolution (modeling_utils.get_correct_attn_implementation and
# PretrainedConfig.output_attentions): nothing requested -> sdpa where the class supports it;
# output_attentions=True given first -> eager; the deprecated "paged|sdpa" -> sdpa
LOADS = """
import sys, warnings
from transformers import AutoModelForCausalLM, Qwen3ForCausalLM
warnings.simplefilter("ignore")
keep = [AutoModelForCausalLM.from_pretrained(sys.argv[1]),
        AutoModelForCausalLM.from_pretrained(sys.argv[1], output_attentions=True),
        Qwen3ForCausalLM.from_pretrained(sys.argv[1], attn_implementation="paged|sdpa"),
        AutoModelForCausalLM.from_pretrained(sys.argv[1], attn_implementation="eager")]
print([m.config._attn_implementation for m in keep])
"""


def test_requested_and_resolved_attention_are_both_recorded_where_transformers_differs(
        penv, tmp_path, model_dir):
    script = tmp_path / "loads.py"
    script.write_text(LOADS)
    p = prov("exec", "-q", "--", PYTHON, str(script), str(model_dir), env=penv, timeout=300)
    assert p.returncode == 0, p.stderr
    resolved = ast.literal_eval(p.stdout.decode())  # what the program itself saw: the oracle
    models = last_run(penv)["facts"]["runtime"]["transformers"]["models"]
    got = [(models[str(i)]["attn_implementation_requested"],
            models[str(i)]["attn_implementation"]) for i in range(4)]
    assert got == [("default", resolved[0]), ("default", resolved[1]),
                   ("paged|sdpa", resolved[2]), ("eager", resolved[3])]
    assert resolved == ["sdpa", "eager", "sdpa", "eager"]  # the cases are real in this version


HELPER_SCRIPT = """
import os, subprocess, sys, torch
from transformers import AutoModelForCausalLM
torch.set_float32_matmul_precision("high")
if not os.path.exists("warm"):
    # a helper Python that exists only on a cold cache (as a compile worker does) and holds
    # torch's defaults: it imports torch and never sees the model
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    open("warm", "w").close()
model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
print(repr(float(model(torch.tensor([[1, 2, 3]])).logits.sum())))
"""


def test_a_cold_cache_helper_process_does_not_change_the_runs_torch_flags(
        penv, tmp_path, model_dir):
    """The flags are the model's process's: a helper that only a cold run starts, holding
    torch's default matmul precision, does not make the cold run differ from a warm one."""
    script = tmp_path / "helper.py"
    script.write_text(HELPER_SCRIPT)
    runs = []
    for _ in range(2):
        p = prov("exec", "-q", "--", PYTHON, str(script), str(model_dir), env=penv,
                 timeout=300, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        runs.append(last_run(penv))
    cold, warm = runs
    assert cold["facts"]["probe"]["processes"] == 2 and warm["facts"]["probe"]["processes"] == 1
    for run in runs:
        assert run["facts"]["runtime"]["torch"]["flags"]["float32_matmul_precision"] == "high"
    rc, doc = compare(penv, cold, warm)
    assert rc == 0, doc.get("refused")


TWICE = """
import sys
from transformers import AutoTokenizer
AutoTokenizer.from_pretrained(sys.argv[1])
AutoTokenizer.from_pretrained(sys.argv[1])  # a second load of the same tokenizer
AutoTokenizer.from_pretrained(sys.argv[1], chat_template="{{ messages }}")  # another one
"""


def test_a_tokenizer_loaded_twice_is_one_entry_and_another_one_is_a_second(
        penv, tmp_path, model_dir):
    script = tmp_path / "twice.py"
    script.write_text(TWICE)
    p = prov("exec", "-q", "--", PYTHON, str(script), str(model_dir), env=penv, timeout=300)
    assert p.returncode == 0, p.stderr
    tokenizers = last_run(penv)["facts"]["runtime"]["transformers"]["tokenizers"]
    assert sorted(tokenizers) == ["0", "1"], tokenizers
    assert tokenizers["0"]["chat_template_sha256"] != tokenizers["1"]["chat_template_sha256"]
