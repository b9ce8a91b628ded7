"""What `prov serve`'s recording front adds per request (issue 27): a plain server called
directly and through the front, side by side in one run, request batches alternating.

    .venv/bin/python bench/bench_front.py --out bench/results/<date>-cpu-2core
        [--requests 200] [--concurrent 16]

The server is a plain stdlib one (tests/provenance/serve/plain_upstream.py: a fixed
completion with logprobs, so the front's cost is most of a request); the front is
`prov serve --upstream` under the supervisor, recording every exchange through the probe's
recorder. The client is this process (urllib, a fresh connection per request); it is not
under prov, so no exchange is bound to a client run, but its process is still looked up.
Printed: sequential latency p50 / p99, throughput with `--concurrent` threads, and
through-front/direct ratios. A probed server's own recorder is bench_exchanges.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROV = str(Path(sys.executable).parent / "prov")
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, body: dict[str, Any]) -> float:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with OPENER.open(req, timeout=300) as r:
        r.read()
    return time.perf_counter() - t0


def attempt(port: int, body: dict[str, Any]) -> float | None:
    """One concurrent request's latency, or None when its connection failed (counted)."""
    try:
        return post(port, body)
    except OSError:
        return None


def wait(port: int, proc: subprocess.Popen, path: str = "/v1/models") -> None:
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server on {port} ended with {proc.returncode}")
        try:
            with OPENER.open(f"http://127.0.0.1:{port}{path}", timeout=3):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"server on {port} never answered")


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()


def measure(ports: dict[str, int], body: dict[str, Any], requests: int, concurrent: int,
            batches: int = 5) -> dict[str, Any]:
    """Latencies and throughput per side, batches alternating between the sides."""
    lat: dict[str, list[float]] = {k: [] for k in ports}
    busy: dict[str, float] = dict.fromkeys(ports, 0.0)
    done: dict[str, int] = dict.fromkeys(ports, 0)
    failed: dict[str, int] = dict.fromkeys(ports, 0)
    per = max(1, requests // batches)
    for _ in range(batches):
        for side, port in ports.items():
            lat[side] += [post(port, body) for _ in range(per)]
            t0 = time.perf_counter()
            with ThreadPoolExecutor(concurrent) as pool:
                got = list(pool.map(attempt, [port] * per, [body] * per))
            busy[side] += time.perf_counter() - t0
            done[side] += sum(x is not None for x in got)
            failed[side] += sum(x is None for x in got)
    out: dict[str, Any] = {}
    for side, xs in lat.items():
        xs.sort()
        out[side] = {"requests": len(xs), "p50_ms": round(1000 * statistics.median(xs), 3),
                     "p99_ms": round(1000 * xs[min(len(xs) - 1, int(0.99 * len(xs)))], 3),
                     "throughput_rps": round(done[side] / busy[side], 2),
                     "concurrent_failed": failed[side]}
    d, r = out["direct"], out["recorded"]
    out["ratio"] = {"p50": round(r["p50_ms"] / d["p50_ms"], 3),
                    "p99": round(r["p99_ms"] / d["p99_ms"], 3),
                    "throughput": round(r["throughput_rps"] / d["throughput_rps"], 3)}
    return out


def exchanges_recorded(store: Path) -> int:
    """Exchange lines the recorded side's run holds (live, while it still serves)."""
    return sum(len(p.read_bytes().splitlines()) for p in store.glob("runs/*/exchanges/*.jsonl"))


def pair(name: str, direct: list[str], recorded: list[str], port_arg: str, env: dict,
         work: Path, body: dict[str, Any], args) -> dict[str, Any]:
    ports = {"direct": free_port(), "recorded": free_port()}
    procs = {}
    try:
        for side, argv in (("direct", direct), ("recorded", recorded)):
            argv = [a.replace(port_arg, str(ports[side])) for a in argv]
            procs[side] = start(argv, env, work / f"{name}-{side}.log")
        for side, proc in procs.items():
            wait(ports[side], proc)
        post(ports["direct"], body), post(ports["recorded"], body)  # warm both
        res = measure(ports, body, args.requests, args.concurrent)
        res["exchange_lines"] = exchanges_recorded(Path(env["PROV_STORE"]))
    finally:
        for proc in procs.values():
            stop(proc)
    print(f"{name}: {json.dumps(res['ratio'])}", flush=True)
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--concurrent", type=int, default=16)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-serving-"))
    env = {**os.environ, "PROV_STORE": str(work / "store"), "PROV_CACHE_DIR": str(work / "c")}
    plain = [sys.executable, str(ROOT / "tests/provenance/serve/plain_upstream.py")]
    small = {"model": "tiny", "prompt": "a", "max_tokens": 3, "logprobs": 1}
    results: dict[str, Any] = {"machine": platform.node(), "cpus": os.cpu_count(),
                               "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "requests": args.requests, "concurrent": args.concurrent}
    up = free_port()
    upstream = start([*plain, str(up), "float32"], env, work / "upstream.log")
    try:
        wait(up, upstream)
        results["front"] = pair(
            "front", [*plain, "PORT", "float32"],
            [PROV, "serve", "--upstream", f"http://127.0.0.1:{up}", "--port", "PORT"],
            "PORT", env, work, small, args)
    finally:
        stop(upstream)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_front.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "bench_front.md").write_text(markdown(results))
    print(markdown(results))
    return 0


def markdown(r: dict[str, Any]) -> str:
    lines = [f"# What `prov serve`'s front adds per request ({r['machine']}, {r['cpus']} CPUs, "
             f"{r['started']})", "", f"{r['requests']} requests a side, "
             f"{r['concurrent']} concurrent for throughput, batches alternating.", "",
             "| pair | side | p50 ms | p99 ms | req/s | failed (concurrent) | recorded/direct "
             "p50 | p99 | throughput | exchange lines |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in ("front",):
        if name not in r:
            continue
        x = r[name]
        for side in ("direct", "recorded"):
            s = x[side]
            ratio = x["ratio"] if side == "recorded" else {}
            lines.append(f"| {name} | {side} | {s['p50_ms']} | {s['p99_ms']} | "
                         f"{s['throughput_rps']} | {s['concurrent_failed']} | "
                         f"{ratio.get('p50', '')} | "
                         f"{ratio.get('p99', '')} | {ratio.get('throughput', '')} | "
                         f"{x['exchange_lines'] if side == 'recorded' else ''} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
