"""Snapshot speed against the tools users already run, measured side by side in one run.

    .venv/bin/python bench/bench_snapshot.py [--repeats N] [--python PATH]

Times (median of N interleaved runs, page cache warm):
  prov snapshot                      vs  pip list --format=freeze, cyclonedx-py environment,
                                         python -m torch.utils.collect_env (if torch is installed)
  prov snapshot --verify-files       vs  sha256sum over the same RECORD-listed files
                                         (xargs -P nproc)
and prints the ratios. Absolute times on a shared machine are noisy; the ratios are the result.
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

BIN = Path(sys.executable).parent


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    return time.perf_counter() - start


def record_files(python: str) -> list[str]:
    """Every file a RECORD lists with a hash, for the interpreter's sys.path."""
    code = (
        "import sys, json, csv, os\n"
        "from importlib import metadata\n"
        "out = []\nseen = set()\n"
        "for d in metadata.distributions():\n"
        "    name = (d.metadata['Name'] or '').lower()\n"
        "    if name in seen or not d.files: continue\n"
        "    seen.add(name)\n"
        "    for f in d.files:\n"
        "        if f.hash: out.append(os.path.normpath(str(d.locate_file(f))))\n"
        "print(json.dumps(out))\n"
    )
    return json.loads(subprocess.run([python, "-c", code], capture_output=True, text=True,
                                     check=True).stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--python", default=sys.executable, help="environment to snapshot")
    args = ap.parse_args()
    store = tempfile.mkdtemp(prefix="prov-bench-")
    env = dict(os.environ, PROV_STORE=store)
    prov = [str(BIN / "prov"), "snapshot"]
    if args.python != sys.executable:
        prov += ["--python", args.python]
    cases: dict[str, list[str]] = {
        "prov snapshot": prov,
        "pip list --format=freeze": [args.python, "-m", "pip", "list", "--format=freeze"],
    }
    if shutil.which("cyclonedx-py", path=str(BIN)):
        cases["cyclonedx-py environment"] = [str(BIN / "cyclonedx-py"), "environment", args.python]
    probe = subprocess.run([args.python, "-c", "import torch"], capture_output=True)
    if probe.returncode == 0:
        cases["python -m torch.utils.collect_env"] = [args.python, "-m", "torch.utils.collect_env"]

    files = record_files(args.python)
    listing = Path(store) / "files.list"
    listing.write_bytes(b"\0".join(f.encode() for f in files))
    nproc = str(os.cpu_count() or 1)
    sha_cmd = ["sh", "-c", f"xargs -0 -P {nproc} -n 256 sha256sum < {listing} > /dev/null; true"]
    cases["prov snapshot --verify-files"] = prov + ["--verify-files"]
    cases[f"sha256sum, xargs -P {nproc} (same files)"] = sha_cmd

    for cmd in cases.values():  # warm the page cache and the torch probe cache
        timed(cmd, env)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeats):
        for name, cmd in cases.items():  # interleaved: machine noise hits every case alike
            samples[name].append(timed(cmd, env))
    med = {name: statistics.median(s) for name, s in samples.items()}

    pkgs = subprocess.run([args.python, "-m", "pip", "list", "--format=json"], capture_output=True,
                          text=True, check=True).stdout
    print(f"environment: {args.python}  ({len(json.loads(pkgs))} Python packages, "
          f"{len(files)} RECORD files; {os.cpu_count()} cores; median of {args.repeats})\n")
    print("| command | median s | ratio |")
    print("|---|---:|---:|")
    base = med["pip list --format=freeze"]
    for name in cases:
        if name.startswith("prov snapshot --verify") or name.startswith("sha256sum"):
            continue
        print(f"| `{name}` | {med[name]:.3f} | {med[name] / base:.2f}x pip list |")
    sha = med[f"sha256sum, xargs -P {nproc} (same files)"]
    print(f"| `prov snapshot --verify-files` | {med['prov snapshot --verify-files']:.3f} | "
          f"{med['prov snapshot --verify-files'] / sha:.2f}x sha256sum |")
    print(f"| `sha256sum` via `xargs -P {nproc}` | {sha:.3f} | 1.00x |")
    print()
    ratio = med["prov snapshot"] / base
    vratio = med["prov snapshot --verify-files"] / sha
    print(f"prov snapshot / pip list = {ratio:.2f} (target <= 0.50): "
          f"{'met' if ratio <= 0.5 else 'MISSED'}")
    print(f"prov --verify-files / sha256sum = {vratio:.2f} (target <= 1.20): "
          f"{'met' if vratio <= 1.2 else 'MISSED'}")
    shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
