"""What the probe costs a user's program at start, and what digesting the files a run read
costs: `prov exec` with the probe on, off (PROV_INPROCESS=0) and no prov at all, side by side.

    .venv/bin/python bench/bench_probe_reads.py [--repeats N] [--rounds R] [--gb G]
        [--reader safe_open|load_file|mapped_at_exit] [--dir D] [--out DIR]

1. Start-up: `python -c pass` and a small user script that imports numpy, each run bare,
   under `prov exec` with PROV_INPROCESS=0 and under `prov exec` with the probe; N
   interleaved rounds, medians of wall time and of the process tree's CPU time (wait4).
2. Digesting what a run read: a user script reads every tensor of a G GB float16
   safetensors checkpoint (built here in chunks under a temp folder, deleted at the end) with
   `safetensors.safe_open` (or `safetensors.torch.load_file`; or `mapped_at_exit`: safe_open
   left open, so the file is still mapped when the program ends), run bare, under `prov exec`
   with PROV_INPROCESS=0, with the probe and prov's file-digest cache cleared (cold), and
   with it as the cold run left it (warm); `sha256sum` of the same file and Python's
   hashlib.sha256 over it in 1 MiB reads (prov's FileDigestCache: hashlib.file_digest) are the
   floors. R interleaved rounds, medians. The file is in the page cache for all but the first read,
   the same for every case: the cold-warm difference is hashing, not the disk.
For each probed run the bench reads `prov show RUN --json` and says what the record holds
for the checkpoint (`model.files.*` / `inputs.files.*`, with the digest's source: computed
or from the cache, and whether it equals sha256sum's): a record that holds nothing for it
cost nothing to digest, and the figures say so rather than hide it.
Absolute times on the shared 2-core machine are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
PROV = str(Path(PY).parent / "prov")
CHUNK = 256 << 20  # tensors of at most 256 MiB: memory stays bounded writing and reading
USER_NUMPY = "import numpy as np\nprint(float(np.arange(1000, dtype=np.float64).sum()))\n"
HASHLIB = """import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as fh:
    while chunk := fh.read(1 << 20):
        h.update(chunk)
print(h.hexdigest())
"""
READERS = {
    "safe_open": """import sys
from safetensors import safe_open
total = 0
with safe_open(sys.argv[1], framework="numpy") as f:
    for name in f.keys():
        total += f.get_tensor(name).nbytes
print(total)
""",
    # the file still mapped at exit: what a probe that digests only mapped files sees
    "mapped_at_exit": """import sys
from safetensors import safe_open
f = safe_open(sys.argv[1], framework="numpy")
print(sum(f.get_tensor(name).nbytes for name in f.keys()))
""",
    "load_file": """import sys
from safetensors.torch import load_file
print(sum(t.numel() * t.element_size() for t in load_file(sys.argv[1]).values()))
""",
}


def write_checkpoint(path: Path, gb: float) -> int:
    """A safetensors file of float16 tensors of CHUNK bytes, written one chunk at a time (the
    format is an 8-byte header length, a JSON header, then the raw data)."""
    step = 16 << 20
    total = max(step, int(gb * (1 << 30)) // step * step)
    chunk = min(CHUNK, total)
    n = total // chunk
    header: dict = {"__metadata__": {"format": "pt"}}
    for i in range(n):
        header[f"layer.{i}.weight"] = {"dtype": "F16", "shape": [chunk // 2],
                                       "data_offsets": [i * chunk, (i + 1) * chunk]}
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    block = os.urandom(16 << 20)
    with open(path, "wb") as fh:
        fh.write(len(blob).to_bytes(8, "little") + blob)
        for i in range(n):
            for j in range(chunk // len(block)):
                fh.write((i * 1000 + j).to_bytes(8, "little") + block[8:])
    return path.stat().st_size


def tree(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, str]:
    """Wall and CPU seconds (the process and every descendant it waited for), stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # wait4: the tree's rusage, which wait drops
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{cmd[:6]} failed ({proc.returncode}): "
                             f"{err.read().decode()[-800:]}")
        return elapsed, usage.ru_utime + usage.ru_stime, out.read().decode()


def cases(prog: list[str], env: dict[str, str]) -> dict[str, tuple[list[str], dict]]:
    exec_ = [PROV, "exec", "--json", "--"]
    return {"bare": (prog, env), "prov, probe off": (exec_ + prog, {**env, "PROV_INPROCESS": "0"}),
            "prov, probe on": (exec_ + prog, env)}


def medians(samples: dict[str, list[tuple[float, float]]]) -> dict[str, dict]:
    return {k: {"wall_s": round(statistics.median(w for w, _ in v), 4),
                "cpu_s": round(statistics.median(c for _, c in v), 4)} for k, v in samples.items()}


def ratios(med: dict[str, dict], over: str, of: list[str]) -> dict[str, dict]:
    return {f"{k} / {over}": {m: round(med[k][m] / med[over][m], 3) for m in ("wall_s", "cpu_s")}
            for k in of}


def startup(env: dict, tmp: Path, repeats: int) -> dict:
    (tmp / "user_numpy.py").write_text(USER_NUMPY)
    out = {}
    for label, prog in (("python -c pass", [PY, "-c", "pass"]),
                        ("user script importing numpy", [PY, "user_numpy.py"])):
        todo = cases(prog, env)
        for cmd, e in todo.values():  # warm prov's snapshot and digest caches
            tree(cmd, e, str(tmp))
        samples: dict[str, list] = {k: [] for k in todo}
        for _ in range(repeats):
            for k, (cmd, e) in todo.items():
                samples[k].append(tree(cmd, e, str(tmp))[:2])
        med = medians(samples)
        out[label] = {"median": med, "ratios": ratios(med, "bare", list(todo)[1:]) | ratios(
            med, "prov, probe off", ["prov, probe on"]),
            "probe_added_ms": {m: round(1000 * (med["prov, probe on"][m] -
                                                med["prov, probe off"][m]), 1)
                               for m in ("wall_s", "cpu_s")}}
    return out


def digest_cache_files(env: dict[str, str]) -> list[Path]:
    """Where the prov under test keeps file digests under its cache root, as its own
    provenance.exec.libraries says (this interpreter's prov, the bench's PROV_CACHE_DIR)."""
    code = "from provenance.exec.libraries import _cache_path; print(_cache_path())"
    p = subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, check=True)
    return [Path(p.stdout.strip())]


def _flat(doc, path: str = "") -> dict[str, object]:
    if not isinstance(doc, dict):
        return {path: doc}
    out: dict[str, object] = {}
    for k, v in doc.items():
        out.update(_flat(v, f"{path}.{k}" if path else str(k)))
    return out


def held(run_id: str, env: dict, name: str, truth: str) -> dict:
    """What the run's record says of the checkpoint file, wherever it says it (model.files,
    inputs.files, ...): each entry that names the file, its digest's source and whether the
    digest equals sha256sum's."""
    show = subprocess.run([PROV, "show", run_id, "--json"], env=env, capture_output=True,
                          text=True, check=True)
    found: dict[str, dict] = {}
    for key, value in _flat(json.loads(show.stdout).get("facts") or {}).items():
        if name not in key or not key.endswith((".sha256", ".source")):
            continue
        entry, _, field = key.rpartition(".")
        item = found.setdefault(entry, {})
        if field == "source":
            item["source"] = value
        else:
            item["equals_sha256sum"] = value == truth
    return found


def digests(env: dict, tmp: Path, rounds: int, gb: float, reader: str) -> dict:
    ckpt = tmp / "ckpt" / "model.safetensors"
    ckpt.parent.mkdir()
    t0 = time.perf_counter()
    size = write_checkpoint(ckpt, gb)
    written_s = time.perf_counter() - t0
    (tmp / "read_ckpt.py").write_text(READERS[reader])
    prog = [PY, "read_ckpt.py", str(ckpt)]
    todo = cases(prog, env)
    todo["prov, probe on, cold"] = todo.pop("prov, probe on")
    todo["prov, probe on, warm"] = todo["prov, probe on, cold"]
    todo["sha256sum"] = (["sha256sum", str(ckpt)], env)
    todo["python hashlib.sha256"] = ([PY, "-c", HASHLIB, str(ckpt)], env)  # what prov runs
    caches = digest_cache_files(env)
    samples: dict[str, list] = {k: [] for k in todo}
    records: dict[str, list] = {"prov, probe on, cold": [], "prov, probe on, warm": []}
    truth = ""
    for cmd, e in todo.values():  # the page cache and prov's snapshot cache, for every case
        tree(cmd, e, str(tmp))
    for _ in range(rounds):
        for k, (cmd, e) in todo.items():
            if k.endswith("cold"):
                for c in caches:
                    c.unlink(missing_ok=True)
            wall, cpu, stdout = tree(cmd, e, str(tmp))
            samples[k].append((wall, cpu))
            if k == "sha256sum":
                truth = "sha256:" + stdout.split()[0]
            elif k in records:
                records[k].append(json.loads(stdout)["run_id"])
    med = medians(samples)
    holds = {k: held(v[-1], env, ckpt.name, truth) for k, v in records.items()}
    out = {"checkpoint_bytes": size, "written_s": round(written_s, 2), "reader": reader,
           "rounds": rounds, "digest_cache": [str(c) for c in caches], "median": med,
           "ratios": ratios(med, "prov, probe off", ["prov, probe on, cold",
                                                     "prov, probe on, warm"])
           | ratios(med, "bare", ["prov, probe off"])
           | ratios(med, "sha256sum", ["prov, probe on, cold", "python hashlib.sha256"]),
           "cold_minus_warm_s": {m: round(med["prov, probe on, cold"][m] -
                                          med["prov, probe on, warm"][m], 3)
                                 for m in ("wall_s", "cpu_s")},
           "sha256sum_GB_per_s": round(size / med["sha256sum"]["wall_s"] / 1e9, 2),
           "hashlib_GB_per_s": round(size / med["python hashlib.sha256"]["wall_s"] / 1e9, 2),
           "record_holds": holds}
    out["checkpoint_digested"] = bool(holds["prov, probe on, cold"])
    return out


def _row(label: str, med: dict, ref: dict) -> str:
    return (f"| {label} | {med['wall_s']:.3f} | {med['cpu_s']:.3f} | "
            f"{med['wall_s'] / ref['wall_s']:.2f} | {med['cpu_s'] / ref['cpu_s']:.2f} |")


def markdown(res: dict, argv: str) -> str:
    """The tables, ratios against `prov exec` with the probe off (the program's own cost and
    prov's outside it cancel)."""
    lines = ["# The probe at start and digesting what a run read (bench/bench_probe_reads.py)",
             "", f"`bench/bench_probe_reads.py {argv}` at {res['commit']}, Python "
             f"{res['python']}, {res['cpus']} CPUs; medians of interleaved runs; wall and "
             "CPU (wait4, the whole process tree) in seconds; ratios over `prov exec` with "
             "PROV_INPROCESS=0.", ""]
    head = ["| case | wall s | CPU s | wall ratio | CPU ratio |", "|---|---|---|---|---|"]
    for label, part in (res.get("startup") or {}).items():
        med = part["median"]
        lines += [f"## {label}", ""] + head
        lines += [_row(k, v, med["prov, probe off"]) for k, v in med.items()]
        lines += ["", f"The probe adds {part['probe_added_ms']['cpu_s']} ms CPU, "
                  f"{part['probe_added_ms']['wall_s']} ms wall.", ""]
    d = res["digest"]
    med = d["median"]
    lines += [f"## Reading a {d['checkpoint_bytes'] / 1e9:.2f} GB safetensors checkpoint "
              f"({d['reader']}), {d['rounds']} rounds", ""] + head
    lines += [_row(k, v, med["prov, probe off"]) for k, v in med.items()]
    lines += ["", f"Cold minus warm: {d['cold_minus_warm_s']['wall_s']} s wall, "
              f"{d['cold_minus_warm_s']['cpu_s']} s CPU; sha256sum reads "
              f"{d['sha256sum_GB_per_s']} GB/s here, Python's hashlib "
              f"{d['hashlib_GB_per_s']} GB/s (start-up included).", "",
              "What the records hold for the checkpoint (the last run of each case): "
              + json.dumps(d["record_holds"]) + ".",
              "" if d["checkpoint_digested"] else
              "\nThe cold run's record holds no digest of the checkpoint: this tree does not "
              "digest a file the program read and closed, so the cold figure measures no "
              "digest of it.",
              "", "Cold clears the whole file-digest cache: the libraries the run loaded are "
              "hashed again too (all of the cold-warm difference when the checkpoint is not "
              "digested)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--gb", type=float, default=3.0)
    ap.add_argument("--reader", choices=sorted(READERS), default="safe_open")
    ap.add_argument("--dir", type=Path, help="where the checkpoint is built (default: a temp "
                    "folder; needs --gb free)")
    ap.add_argument("--skip-startup", action="store_true")
    ap.add_argument("--out", type=Path, help="write bench_probe_reads.{json,md} here")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="prov-bench-reads-", dir=args.dir))
    env = {**os.environ, "PROV_STORE": str(tmp / "store"), "PROV_CACHE_DIR": str(tmp / "cache")}
    env.pop("PYTHONPATH", None)
    try:
        result = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                  "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                           capture_output=True, text=True).stdout.strip()}
        if not args.skip_startup:
            result["startup"] = startup(env, tmp, args.repeats)
        result["digest"] = digests(env, tmp, args.rounds, args.gb, args.reader)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_probe_reads.json").write_text(json.dumps(result, indent=2) + "\n")
        (args.out / "bench_probe_reads.md").write_text(markdown(result, " ".join(sys.argv[1:])))


if __name__ == "__main__":
    main()
