"""Census of hostile images (issue #19 section 4): each case x pin, snapshot, sbom, lock.

Usage: python bench/bench_hostile_images.py TREE [--out results.json] [--timeout S]
TREE is the prov source tree to run (PYTHONPATH), e.g. /work/main for "before".
Each command runs in its own process with a timeout; outcome: "refused" (exit 2 or 3 with one
line on stderr), "ok" (exit 0), "internal" (exit 70 or a traceback), "hang" (timed out).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from tests.hostile.containers.cases import CASES  # noqa: E402

PROV = [sys.executable, "-c", "import sys; from provenance.cli import main; sys.exit(main())"]
COMMANDS = {
    "pin": lambda src, out: ["pin", src, "-o", str(out / "lock.toml")],
    "snapshot": lambda src, out: ["snapshot", "--image", src, "--out", str(out / "snap.json")],
    "sbom": lambda src, out: ["sbom", "--image", src, "-o", str(out / "sbom.json")],
    "lock": lambda src, out: ["lock", "--image", src, "-o", str(out / "pylock.toml")],
}


def outcome(tree: str, argv: list[str], timeout: float) -> tuple[str, int | None, str]:
    env = {**os.environ, "PYTHONPATH": tree}
    try:
        proc = subprocess.run(PROV + argv, env=env, capture_output=True, text=True,
                              timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return "hang", None, ""
    err = proc.stderr.strip()
    if proc.returncode == 70 or "Traceback" in err:
        kind = "internal"
    elif proc.returncode == 0:
        kind = "ok"
    elif proc.returncode in (2, 3) and len(err.splitlines()) == 1:
        kind = "refused"
    else:
        kind = f"exit {proc.returncode}"
    return kind, proc.returncode, err.splitlines()[-1][:200] if err else ""


_LAUNCHER = """
import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""


def peak_rss(tree: str, count: int, size: int) -> dict:
    """Exit status and peak RSS (MB) of `prov pin` on `count` METADATA files of `size` bytes,
    measured as the RUSAGE_CHILDREN of a launcher whose only child is prov."""
    from tests.hostile.containers.cases import big_metadata

    with tempfile.TemporaryDirectory() as tmp:
        big_metadata(Path(tmp), count=count, size=size)
        argv = [sys.executable, "-c", _LAUNCHER, *PROV, "pin", f"oci:{tmp}/oci",
                "-o", f"{tmp}/lock.toml"]
        env = {**os.environ, "PYTHONPATH": tree}
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600).stdout
        rc, peak = (int(x) for x in out.split())
    return {"count": count, "size_mib": size >> 20, "rc": rc, "peak_rss_mb": peak}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("--out")
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--rss", action="store_true", help="only the peak-RSS case (16 x 60 MiB)")
    args = ap.parse_args()
    if args.rss:
        print(json.dumps(peak_rss(args.tree, 16, 60 << 20)))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (build, expect) in CASES.items():
            root = Path(tmp) / name.replace(" ", "_").replace("/", "_")
            root.mkdir()
            build(root)
            for cmd, argv in COMMANDS.items():
                work = root / cmd
                work.mkdir()
                kind, rc, line = outcome(args.tree, argv(f"oci:{root / 'oci'}", work), args.timeout)
                rows.append({"case": name, "command": cmd, "expect": expect, "outcome": kind,
                             "rc": rc, "stderr": line})
                print(f"{name:38} {cmd:9} {kind:9} {line[:90]}", flush=True)
    totals: dict[str, int] = {}
    for row in rows:
        totals[row["outcome"]] = totals.get(row["outcome"], 0) + 1
    print(json.dumps({"tried": len(rows), **totals}))
    if args.out:
        Path(args.out).write_text(json.dumps({"tree": args.tree, "rows": rows,
                                              "totals": totals}, indent=1))


if __name__ == "__main__":
    main()
