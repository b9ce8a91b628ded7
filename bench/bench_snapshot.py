"""Snapshot speed against the tools users already run, measured side by side in one run.

    .venv/bin/python bench/bench_snapshot.py [--repeats N] [--python PATH]
    .venv/bin/python bench/bench_snapshot.py --peers [--repeats 7] [--out DIR]

Default mode: median of N interleaved runs, page cache warm:
  prov snapshot                      vs  pip list --format=freeze, cyclonedx-py environment,
                                         python -m torch.utils.collect_env (if torch is installed)
  prov snapshot --verify-files       vs  sha256sum over the same RECORD-listed files
                                         (xargs -P nproc)
--peers mode: builds (once, cached) a 26-package torch venv, installs the peer tools from
PyPI into a scratch directory on that venv's path (ceteris, pycheckem, mlenv: those that
`pip download --no-deps` can get), and times, interleaved and warm, `prov snapshot --python`
of that venv against `pip list`, each peer, and torch's collect_env; then a cold prov snapshot
(prov's caches emptied before each run). Writes snapshot-peers.json and .md to --out.
Absolute times on a shared machine are noisy; the ratios, measured in one run, are the result.
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
CACHE = Path(os.environ.get("PROV_BENCH_CACHE", Path.home() / ".cache" / "prov-bench"))
# torch (the +cpu build, from pip's configured find-links, as in lockfiles/pylock.dev.toml) and
# its own requirements, plus what an inference script commonly holds: 26 packages
# with the venv's pip and setuptools.
TORCH_VENV_PACKAGES = [
    "torch==2.13.0+cpu", "numpy==2.2.6", "safetensors==0.5.3", "pyyaml==6.0.2", "regex==2024.11.6",
    "tqdm==4.67.1", "packaging==24.2", "requests==2.32.3", "pillow==11.2.1", "psutil==7.0.0",
    "python-dateutil==2.9.0.post0",
]
PEERS = {  # name on PyPI -> argv after `python -c <entry point>`, run in the measured venv
    "ceteris": ("ceteris.cli", ["capture", "-o", os.devnull]),
    "pycheckem": ("pycheckem.cli", ["snapshot", "-o", os.devnull]),
    "mlenv": ("mlenv.cli", ["snapshot"]),
}


CPU_S: dict[str, list[float]] = {}  # name -> CPU seconds (user + sys) of each timed sample


def timed(cmd: list[str], env: dict[str, str], cwd: str | None = None,
          name: str | None = None) -> float:
    """Wall seconds of one run; its CPU seconds (children's user + sys) go to CPU_S[name]."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True,
                   cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if name is not None:
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        CPU_S.setdefault(name, []).append(cpu)
    return wall


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


def measure(cases: dict[str, tuple], repeats: int,
            before: dict[str, object] | None = None) -> dict[str, list[float]]:
    """Interleaved samples after one warm-up run of each case (cmd, env[, cwd]);
    `before[name]()` runs (untimed) before each sample of that case."""
    before = before or {}
    for name, case in cases.items():
        if name in before:
            before[name]()
        timed(*case)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, case in cases.items():  # interleaved: machine noise hits all alike
            if name in before:
                before[name]()
            samples[name].append(timed(*case, name=name))
    return samples


def default_mode(args: argparse.Namespace) -> None:
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
    samples = measure({n: (c, env) for n, c in cases.items()}, args.repeats)
    med = {name: statistics.median(s) for name, s in samples.items()}
    print(f"environment: {args.python}  ({len(files)} RECORD files; {os.cpu_count()} cores; "
          f"median of {args.repeats})\n")
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
    shutil.rmtree(store, ignore_errors=True)


def torch_venv() -> Path:
    """The bench's torch venv (built once; marked complete only at the end)."""
    venv = CACHE / "torch-venv-v1"
    marker = venv / ".prov-bench-complete"
    if not marker.exists():
        shutil.rmtree(venv, ignore_errors=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([shutil.which("python3") or sys.executable, "-m", "venv", str(venv)],
                       check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                        *TORCH_VENV_PACKAGES], check=True)
        marker.write_text("\n".join(TORCH_VENV_PACKAGES) + "\n")
    return venv


def install_peers(python: str) -> tuple[Path, dict[str, str]]:
    """Peers from PyPI into one --target directory; returns it and {peer: why not} for those
    that could not be had."""
    target = CACHE / "peers-v1"
    missing: dict[str, str] = {}
    for peer in PEERS:
        got = subprocess.run([python, "-m", "pip", "download", "-q", "--no-deps", "-d",
                              str(CACHE / "peer-wheels"), peer], capture_output=True, text=True)
        if got.returncode != 0:
            last = [x for x in got.stderr.splitlines() if x.startswith("ERROR")] or ["failed"]
            missing[peer] = last[-1]
            continue
        if not any(target.glob(f"{peer}-*.dist-info")):
            subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--target",
                            str(target), "--no-index", "--find-links", str(CACHE / "peer-wheels"),
                            peer], check=True)
    return target, missing


def peer_command(python: str, peer: str) -> list[str]:
    module, argv = PEERS[peer]
    code = f"import sys; sys.argv[0] = {peer!r}; from {module} import main; sys.exit(main())"
    return [python, "-c", code, *argv]


def manifest_digest(prov: list[str], env: dict[str, str]) -> str:
    """The identity digest `prov snapshot` prints (its `digest` summary line)."""
    out = subprocess.run(prov, capture_output=True, text=True, env=env, check=True).stdout
    return next(line.split()[-1] for line in out.splitlines() if line.split()[:1] == ["digest"])


def clear_prov_caches(cache_root: Path) -> None:
    shutil.rmtree(cache_root, ignore_errors=True)


def byte_compile_prov() -> None:
    """Byte-compile prov's packages, as installing a wheel does: this machine sets
    PYTHONDONTWRITEBYTECODE=1, so a source checkout would recompile every module every run."""
    root = Path(__file__).resolve().parent.parent
    for package in ("provenance", "containers", "lockfiles"):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / package)],
                       check=True, stdout=subprocess.DEVNULL)


def peers_mode(args: argparse.Namespace) -> None:
    byte_compile_prov()
    venv = torch_venv()
    python = str(venv / "bin" / "python")
    peers_dir, missing = install_peers(python)
    listed = subprocess.run([python, "-m", "pip", "list", "--format=json"], capture_output=True,
                            text=True, check=True).stdout
    count = len(json.loads(listed))
    store = tempfile.mkdtemp(prefix="prov-bench-")
    prov_cache = Path(store) / "prov-cache"
    env = dict(os.environ, PROV_STORE=str(Path(store) / "store"), PROV_CACHE_DIR=str(prov_cache))
    peer_env = dict(env, PYTHONPATH=str(peers_dir))
    prov = [str(BIN / "prov"), "snapshot", "--python", python]
    # every command runs in one scratch directory outside any repository (ceteris records the
    # git state of its working directory); ceteris once more inside this git checkout
    cwd = Path(store) / "cwd"
    cwd.mkdir()
    cases: dict[str, tuple] = {
        "pip list --format=freeze": ([python, "-m", "pip", "list", "--format=freeze"], env, cwd),
        "prov snapshot (warm)": (prov, env, cwd),
    }
    for peer in PEERS:
        if peer not in missing:
            cases[f"{peer} {PEERS[peer][1][0]}"] = (peer_command(python, peer), peer_env, cwd)
    if "ceteris" not in missing:
        repo = str(Path(__file__).resolve().parent.parent)
        cases["ceteris capture (cwd: a git checkout)"] = (
            peer_command(python, "ceteris"), peer_env, repo)
    cases["python -m torch.utils.collect_env"] = (
        [python, "-m", "torch.utils.collect_env"], env, cwd)
    samples = measure(cases, args.repeats)
    cold_cache = Path(store) / "cold-cache"
    cold_env = dict(env, PROV_CACHE_DIR=str(cold_cache))
    cold = measure({"prov snapshot (cold)": (prov, cold_env, cwd)}, max(3, args.repeats // 2),
                   before={"prov snapshot (cold)": lambda: clear_prov_caches(cold_cache)})
    samples.update(cold)
    clear_prov_caches(cold_cache)
    same = manifest_digest(prov, cold_env) == manifest_digest(prov, cold_env)  # cold, then warm
    report(args, samples, count, missing, python, same)
    shutil.rmtree(store, ignore_errors=True)


def report(args: argparse.Namespace, samples: dict[str, list[float]], count: int,
           missing: dict[str, str], python: str, cold_equals_warm: bool) -> None:
    med = {name: statistics.median(s) for name, s in samples.items()}
    cpu = {name: statistics.median(CPU_S[name]) for name in samples if CPU_S.get(name)}
    base = med["pip list --format=freeze"]
    ceteris = med.get("ceteris capture")  # outside a repository: its fastest
    warm = med["prov snapshot (warm)"]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parent).stdout.strip()
    result = {
        "environment": {"python": python, "packages": count, "cores": os.cpu_count(),
                        "load_avg_1m": os.getloadavg()[0], "prov_commit": commit},
        "repeats": args.repeats,
        "median_s": med,
        "samples_s": samples,
        "ratio_to_pip_list": {k: v / base for k, v in med.items()},
        "median_cpu_s": cpu,
        "cpu_ratio_to_pip_list": {k: v / cpu["pip list --format=freeze"] for k, v in cpu.items()},
        "peers_unavailable": missing,
        "cold_digest_equals_warm_digest": cold_equals_warm,
        "targets": {
            "warm <= 0.25x pip list": warm / base <= 0.25,
            "warm < ceteris capture (outside a repository)": ceteris is not None
            and warm < ceteris,
        },
        "targets_cpu": {
            "warm <= 0.25x pip list": cpu["prov snapshot (warm)"]
            <= 0.25 * cpu["pip list --format=freeze"],
            "warm < ceteris capture (outside a repository)": "ceteris capture" in cpu
            and cpu["prov snapshot (warm)"] < cpu["ceteris capture"],
        },
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "snapshot-peers.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# prov snapshot against its peers ({count}-package torch venv)", "",
        f"{os.cpu_count()} cores shared with other work (1-min load {os.getloadavg()[0]:.1f}); "
        f"median of {args.repeats} interleaved warm runs (cold: prov's caches emptied before "
        "each run, page cache warm); prov's modules byte-compiled as a wheel install leaves "
        "them. Produced by `bench/bench_snapshot.py --peers`.", "",
        "CPU s: the run's user + sys time (its child processes included), less sensitive to "
        "the machine's other load than wall time.", "",
        "| command | median s | x pip list | median CPU s | CPU x pip list |",
        "|---|---:|---:|---:|---:|",
    ]
    cpu_base = cpu["pip list --format=freeze"]
    lines += [f"| `{k}` | {v:.3f} | {v / base:.2f} | {cpu[k]:.3f} | {cpu[k] / cpu_base:.2f} |"
              for k, v in med.items()]
    lines.append("")
    for peer, why in missing.items():
        lines.append(f"- {peer}: not measured, `pip download --no-deps {peer}`: {why}")
    lines.append(f"- a cold and a warm snapshot give the same identity digest: {cold_equals_warm}")
    for target, met in result["targets"].items():
        by_cpu = result["targets_cpu"][target]
        lines.append(f"- target {target}: {'met' if met else 'MISSED'} by wall time, "
                     f"{'met' if by_cpu else 'MISSED'} by CPU time")
    (out / "snapshot-peers.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--python", default=sys.executable, help="environment to snapshot")
    ap.add_argument("--peers", action="store_true", help="the peers mode (see above)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                         "2026-12-01-cpu-2core"))
    args = ap.parse_args()
    peers_mode(args) if args.peers else default_mode(args)


if __name__ == "__main__":
    main()
