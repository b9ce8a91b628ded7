"""Bad input (issue #19 section 2): one case list, run against any checkout of prov.

Each case runs the real `prov` console script in a fresh work directory under a memory
limit and a timeout, and is classified:
  clean     a documented non-zero exit (1-4) with a one-line error (or, for `verify`, the
            numbered report saying FAILED), nothing half-written, no input replaced
  internal  exit 70 or a traceback
  hang      still running at the timeout
  exit0     exit 0 on garbage
  leak      a file written outside the work directory, a temp file left behind, or an
            input (a device node, a directory) replaced

`python -m tests.hostile.badinput [CHECKOUT]` prints the table for a checkout (default:
this one) and writes JSON; tests/hostile/cli/test_bad_input.py asserts every case is clean.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

TIMEOUT = 30
MEMORY_LIMIT = 2 << 30  # address space: /dev/zero read whole is a MemoryError, not swap
PROV = str(Path(sys.executable).parent / "prov")


def _hostile_inputs(w: Path) -> dict[str, str]:
    """name -> path of a hostile input file inside work dir `w`."""
    os.mkfifo(w / "fifo")
    (w / "a-directory").mkdir()
    (w / "deep.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    (w / "deep.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    (w / "utf16.toml").write_bytes('schema_version = 1\n[python]\n'.encode("utf-16"))
    (w / "junk.bin").write_bytes(bytes(range(256)) * 64)
    bad_name = os.fsencode(str(w)) + b"/n\xffme\xfe.json"
    with open(bad_name, "wb") as fh:
        fh.write(b"\xff\xfe junk")
    with open(w / "sparse.json", "wb") as fh:  # 3 GiB, no blocks: the size bound must hold
        fh.truncate(3 << 30)
    return {"fifo": str(w / "fifo"), "dev-zero": "/dev/zero", "directory": str(w / "a-directory"),
            "deep-json": str(w / "deep.json"), "deep-toml": str(w / "deep.toml"),
            "utf16": str(w / "utf16.toml"), "junk": str(w / "junk.bin"),
            "non-utf8-name": os.fsdecode(bad_name), "sparse-3gib": str(w / "sparse.json"),
            "missing": str(w / "missing.json")}


# Commands taking an input file X; G is a good manifest, R a good result, B a good bundle,
# K its public key, W the work directory.
INPUT_COMMANDS: dict[str, list[str]] = {
    "diff X G": ["diff", "X", "G"],
    "diff G X": ["diff", "G", "X"],
    "sbom --manifest X": ["sbom", "--manifest", "X", "-o", "W/s.json"],
    "audit --manifest X": ["audit", "--manifest", "X", "--osv-db", "W/osv"],
    "publish R --manifest X": ["publish", "R", "--manifest", "X", "--out", "W/b1"],
    "publish X --manifest G": ["publish", "X", "--manifest", "G", "--out", "W/b2"],
    "publish --key X": ["publish", "R", "--manifest", "G", "--key", "X", "--out", "W/b3"],
    "verify --lock X": ["verify", "--lock", "X"],
    "verify X": ["verify", "X", "--no-signature"],
    "verify B --key X": ["verify", "B", "--key", "X"],
    "lock --manifest X": ["lock", "--manifest", "X", "--offline", "-o", "W/l.toml"],
    "sweep X": ["sweep", "X"],
    "report X": ["report", "X", "-o", "W/r.html"],
    "compare X G": ["compare", "X", "G"],
}

# Commands with an output path O.
OUTPUT_COMMANDS: dict[str, list[str]] = {
    "snapshot -o O": ["snapshot", "-o", "O"],
    "sbom -o O": ["sbom", "--manifest", "G", "-o", "O"],
    "publish --out O.tar.gz": ["publish", "R", "--manifest", "G", "--out", "O"],
    "lock -o O": ["lock", "--manifest", "G", "--offline", "--allow-missing-hashes", "-o", "O"],
    "keygen -o O": ["keygen", "-o", "O"],
    "audit --sbom-out O": ["audit", "--manifest", "G", "--osv-db", "W/osv", "--sbom-out", "O"],
    "report -o O": ["report", "B", "-o", "O"],
}
OUTPUT_TARGETS = ("a-directory", "char-device", "under-a-file", "missing-parent")

OPTION_CASES: dict[str, list[str]] = {
    "runs --limit 10**30": ["runs", "--limit", str(10**30)],
    "runs --limit -5": ["runs", "--limit", "-5"],
    "demo --steps -1": ["demo", "--steps", "-1", "--workdir", "W/demo"],
    "demo --steps 10**30": ["demo", "--steps", str(10**30), "--workdir", "W/demo"],
    "demo --workdir FILE": ["demo", "--workdir", "R", "--steps", "1"],
    "keygen -o dir/": ["keygen", "-o", "W/a-directory/"],
    "verify --key PRIVATE": ["verify", "B", "--key", "P"],
    "show <100k-char id>": ["show", "r" * 100_000],
    "publish --run <100k-char id>": ["publish", "R", "--run", "r" * 100_000, "--out", "W/b"],
    "PROV_STORE under a file": ["runs"],
}


# Cases where exit 0 is the right answer: a result file is opaque bytes (CSV, binary,
# UTF-16 text are all publishable), and `keygen -o PREFIX` writes PREFIX.key/.pub beside a
# device node named PREFIX, never the node itself.
ACCEPTED = {"publish X --manifest G [junk]", "publish X --manifest G [utf16]",
            "publish X --manifest G [deep-toml]", "keygen -o O [char-device]"}


@dataclass
class Outcome:
    case: str
    verdict: str  # clean | internal | hang | exit0 | leak
    exit_code: int | None
    message: str


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def prepare_assets(base: Path, env: dict[str, str]) -> dict[str, str]:
    """G, R, B, K, P: a good manifest, result, signed bundle and its key pair."""
    base.mkdir(parents=True, exist_ok=True)
    g, r = base / "good.json", base / "result.json"
    _prov(["snapshot", "-o", str(g), "-f", "json"], env, base, check=True)
    r.write_text(json.dumps({"metric": "top1_agreement", "value": 0.9}))
    _prov(["keygen", "-o", str(base / "k")], env, base, check=True)
    _prov(["publish", str(r), "--manifest", str(g), "--key", str(base / "k.key"), "--out",
           str(base / "bundle")], env, base, check=True)
    return {"G": str(g), "R": str(r), "B": str(base / "bundle"), "K": str(base / "k.pub"),
            "P": str(base / "k.key")}


def _prov(argv, env, cwd, check=False, timeout=TIMEOUT):
    p = subprocess.run([PROV, *argv], env=env, cwd=cwd, capture_output=True,
                       timeout=timeout, stdin=subprocess.DEVNULL, preexec_fn=_limit_memory)
    if check and p.returncode != 0:
        raise RuntimeError(f"prov {argv[0]} failed: {p.stderr.decode(errors='replace')}")
    return p


def _listing(root: Path) -> dict[str, int]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            out[os.fsdecode(p.relative_to(root))] = os.lstat(p).st_mode
    return out


def classify(case: str, p: subprocess.CompletedProcess | None, before: dict[str, int],
             after: dict[str, int], outside_before: set[str],
             outside_after: set[str]) -> Outcome:
    if p is None:
        return Outcome(case, "hang", None, f"still running after {TIMEOUT}s")
    err = p.stderr.decode("utf-8", "replace").strip()
    out = p.stdout.decode("utf-8", "replace")
    first = (err.splitlines() or [""])[-1][:200]
    if p.returncode == 70 or "Traceback" in err or "internal error" in err:
        return Outcome(case, "internal", p.returncode, first)
    replaced = [k for k, mode in before.items() if k in after and
                stat.S_IFMT(after[k]) != stat.S_IFMT(mode)]
    temps = [k for k in after if k not in before and ".tmp" in k.rsplit("/", 1)[-1]]
    if replaced or temps or outside_after - outside_before:
        what = replaced or temps or sorted(outside_after - outside_before)
        return Outcome(case, "leak", p.returncode, f"left or replaced: {what[:3]}")
    if p.returncode == 0 and case in ACCEPTED:
        return Outcome(case, "clean", 0, "accepted: valid input")
    if p.returncode == 0:
        return Outcome(case, "exit0", 0, (out.strip().splitlines() or [""])[-1][:200])
    report_failed = p.returncode == 1 and "FAILED" in out
    if p.returncode in (1, 2, 3, 4) and (len(err.splitlines()) == 1 or report_failed):
        return Outcome(case, "clean", p.returncode, first or out.strip().splitlines()[-1])
    return Outcome(case, "internal", p.returncode, f"not one line: {first}")


def _substitute(argv: list[str], assets: dict[str, str], w: Path, x: str) -> list[str]:
    out = []
    for a in argv:
        if a == "X":
            a = x
        elif a in assets:
            a = assets[a]
        elif a.startswith("W/"):
            a = str(w / a[2:])
        out.append(a)
    return out


def _output_target(w: Path, assets: dict[str, str], kind: str, command: str) -> str | None:
    suffix = ".tar.gz" if "tar.gz" in command else ""
    if kind == "a-directory":
        d = w / f"outdir{suffix}"
        d.mkdir()
        return str(d)
    if kind == "char-device":
        try:
            os.mknod(w / f"null{suffix}", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except (PermissionError, OSError):
            return None
        return str(w / f"null{suffix}")
    if kind == "under-a-file":
        return assets["R"] + f"/x{suffix}"
    return str(w / "no-such-dir" / f"x{suffix}")


def cases() -> list[tuple[str, list[str], str | None, str | None]]:
    """(case id, argv template, hostile input name or None, output target kind or None)."""
    out = []
    for cmd, argv in INPUT_COMMANDS.items():
        for name in ("fifo", "dev-zero", "directory", "deep-json", "deep-toml", "utf16",
                     "junk", "non-utf8-name", "sparse-3gib", "missing"):
            out.append((f"{cmd} [{name}]", argv, name, None))
    for cmd, argv in OUTPUT_COMMANDS.items():
        for kind in OUTPUT_TARGETS:
            out.append((f"{cmd} [{kind}]", argv, None, kind))
    for cmd, argv in OPTION_CASES.items():
        out.append((cmd, argv, None, None))
    return out


def run_case(case: str, argv: list[str], hostile: str | None, target: str | None,
             assets: dict[str, str], env: dict[str, str], scratch: Path) -> Outcome:
    w = Path(tempfile.mkdtemp(prefix="case-", dir=scratch))
    try:
        inputs = _hostile_inputs(w)
        (w / "osv").mkdir()
        x = inputs[hostile] if hostile else ""
        full = _substitute(argv, assets, w, x)
        if target is not None:
            o = _output_target(w, assets, target, case)
            if o is None:
                return Outcome(case, "clean", None, "skipped: mknod not permitted")
            full = [o if a == "O" else a for a in full]
        case_env = {**env, "PROV_STORE": str(w / "store")}
        if case == "PROV_STORE under a file":
            case_env["PROV_STORE"] = assets["R"] + "/store"
        before, outside = _listing(w), set(os.listdir(scratch))
        try:
            p = _prov(full, case_env, w)
        except subprocess.TimeoutExpired:
            p = None
        return classify(case, p, before, _listing(w), outside, set(os.listdir(scratch)))
    finally:
        shutil.rmtree(w, ignore_errors=True)


def run_all(checkout: Path, scratch: Path) -> list[Outcome]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "NO_COLOR": "1", "COLUMNS": "200"}
    assets = prepare_assets(scratch / "assets", env)
    return [run_case(c, a, h, t, assets, env, scratch) for c, a, h, t in cases()]


def table(outcomes: list[Outcome]) -> dict[str, int]:
    counts = {"tried": len(outcomes)}
    for v in ("clean", "internal", "hang", "exit0", "leak"):
        counts[v] = sum(o.verdict == v for o in outcomes)
    return counts


def main() -> None:
    checkout = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[2]).resolve()
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    scratch = Path(tempfile.mkdtemp(prefix="prov-badinput-"))
    try:
        outcomes = run_all(checkout, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for o in outcomes:
        if o.verdict != "clean":
            print(f"{o.verdict:9} {o.exit_code!s:>4}  {o.case}: {o.message}")
    print(json.dumps(table(outcomes)))
    if out:
        out.write_text(json.dumps({"checkout": str(checkout), "table": table(outcomes),
                                   "cases": [o.__dict__ for o in outcomes]}, indent=1))


if __name__ == "__main__":
    main()
