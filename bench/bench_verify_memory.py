"""Peak RSS of `prov verify` on bundles whose attestation is huge (issue #30 item 2).

    .venv/bin/python bench/bench_verify_memory.py [--tree DIR] [--sizes 10,40,400]
        [--out bench/results/<date>-cpu-2core]

Each case is a real signed bundle (prov publish) whose statement was padded to SIZE MB and
signed again with the RIGHT key, in three shapes an attacker picks freely:
  string   one long string in externalParameters.parameters
  escapes  the same string spelled as `\\n` escapes (what a backtracking regex chokes on)
  nodes    a list of small objects (what a JSON parser turns into many Python objects)
and the same bundle as a .tar.gz. Every measurement is a fresh process: a launcher whose only
child is prov, reporting RUSAGE_CHILDREN's ru_maxrss (the child's own peak; the launcher is
small). --before DIR also runs another prov source tree (PYTHONPATH) on the cases named by
--before-cases (FILE:SHAPE:MB, e.g. statement:string:10), right after this tree's run.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

PROV = [sys.executable, "-c", "import sys; from provenance.cli import main; sys.exit(main())"]
_LAUNCHER = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True)
wall = time.perf_counter() - t
out = (p.stderr + p.stdout).decode(errors="replace").strip().splitlines()
fail = [line for line in out if "FAIL" in line or "error:" in line]
print(json.dumps({"exit": p.returncode, "wall_s": round(wall, 2),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
                  "message": ((fail or out or [""])[0]).strip()[:200]}))
"""
SHAPES = ("string", "escapes", "astral", "nodes")
# (file padded, shapes, sizes in MB): the attestation at the sizes asked for, then each other
# document verify parses at its bound and past it
_DOC_SHAPES = ("string", "astral", "astral-raw", "nodes")
DOCS = (("sbom.cdx.json", _DOC_SHAPES, (15, 40)),
        ("manifest", _DOC_SHAPES, (15,)),
        ("results/big.json", _DOC_SHAPES, (60, 120)))


def base_bundle(root: Path) -> tuple[Path, Path, Path]:
    """A real signed bundle directory, the signer's private and public keys."""
    from provenance.publish.bundle import publish
    from provenance.publish.keys import generate
    from tests.provenance.sbom.helpers_sbom import sample_subject

    priv, pub, _ = generate(root / "signer")
    result = root / "agreement.json"
    result.write_text(json.dumps({"metric": "top1_agreement", "value": 0.931}))
    publish([result], sample_subject(), root / "bundle", key_path=priv, allow_unrecorded=True)
    return root / "bundle", priv, pub


def _pad(shape: str, mb: int) -> object:
    """A JSON value of ~`mb` MB in `shape`."""
    n = mb << 20
    if shape == "string":
        return "x" * n
    if shape == "escapes":
        return "\n" * (n // 2)  # json.dumps writes each as the two bytes \n
    if shape in ("astral", "astral-raw"):  # one astral character widens a whole string
        return "\U0001F600" + "x" * n
    return [{"a": 1}] * (n // 8)  # "nodes": 8 bytes of text per object


def padded(bundle: Path, key: Path, out: Path, target: str, shape: str, mb: int) -> None:
    """`bundle` copied to `out` with `target` (the statement, or a JSON file of the bundle)
    padded to ~`mb` MB, the statement's digest of it updated, and signed again."""
    import hashlib

    from provenance.publish.bundle import SIGNED_NAME
    from provenance.publish.dsse import sign
    from provenance.publish.keys import load_private

    shutil.copytree(bundle, out)
    env = json.loads((bundle / SIGNED_NAME).read_text())
    st = json.loads(base64.b64decode(env["payload"]))
    if target == "statement":
        st["predicate"]["buildDefinition"]["externalParameters"]["parameters"]["pad"] = \
            _pad(shape, mb)
    else:
        if target == "manifest":
            target = next(p for p in out.glob("manifests/*.json")).relative_to(out).as_posix()
        path = out / target
        doc = json.loads(path.read_text()) if path.exists() else {"metric": "x"}
        doc["pad"] = _pad(shape, mb)
        data = json.dumps(doc, ensure_ascii=shape != "astral-raw").encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        pred = st["predicate"]
        descs = pred["runDetails"]["byproducts"] + st["subject"]
        descs += pred["buildDefinition"]["resolvedDependencies"]
        hit = [d for d in descs if target in (d["name"], d.get("uri"))]
        for d in hit:
            d["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
        if not hit:
            st["subject"].append({"name": target,
                                  "digest": {"sha256": hashlib.sha256(data).hexdigest()}})
    payload = json.dumps(st).encode()
    (out / SIGNED_NAME).write_bytes(json.dumps(sign(payload, load_private(key))).encode())


def measure(tree: str, target: Path, pub: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": tree}
    argv = [sys.executable, "-c", _LAUNCHER, *PROV, "verify", str(target), "--key", str(pub)]
    # cwd: not a source tree (`python -c` puts the cwd before PYTHONPATH on sys.path)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800,
                          cwd=target.parent)
    return json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="another prov source tree, run beside this one")
    ap.add_argument("--before-cases", default="statement:string:10")
    ap.add_argument("--sizes", default="10,40,400")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--archive", action="store_true", help="also each bundle as a .tar.gz")
    ap.add_argument("--no-docs", action="store_true", help="only the attestation cases")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from provenance.publish.archive import write_tar_gz

    cases = [("statement", shape, int(mb)) for mb in args.sizes.split(",")
             for shape in args.shapes.split(",")]
    if not args.no_docs:
        cases += [(doc, shape, mb) for doc, shapes, sizes in DOCS for mb in sizes
                  for shape in shapes]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        root = Path(tmp)
        bundle, priv, pub = base_bundle(root)
        rows.append({"tree": "after", "file": "-", "shape": "-", "mb": 0, "form": "directory",
                     "file_mb": 0.0, **measure(str(HERE), bundle, pub)})
        print(rows[-1], flush=True)
        for target, shape, mb in cases:
            case = root / "case"
            padded(bundle, priv, case, target, shape, mb)
            name = {"statement": "attestation.dsse.json"}.get(target, target)
            if target == "manifest":
                name = next(case.glob("manifests/*.json")).relative_to(case).as_posix()
            size = round((case / name).stat().st_size / 1e6, 1)
            forms = [("directory", case)]
            if args.archive:
                write_tar_gz(case, root / "case.tar.gz")
                forms.append(("tar.gz", root / "case.tar.gz"))
            trees = [("after", str(HERE))]
            if args.before and f"{target}:{shape}:{mb}" in args.before_cases.split(","):
                trees.append(("before", args.before))
            for (form, path), (label, tree) in itertools.product(forms, trees):
                row = {"tree": label, "file": name, "shape": shape, "mb": mb, "form": form,
                       "file_mb": size, **measure(tree, path, pub)}
                rows.append(row)
                print(row, flush=True)
            shutil.rmtree(case)
            (root / "case.tar.gz").unlink(missing_ok=True)
    if args.out:
        from bench_images_scale import _described

        write(args.out, rows, _described(args.before))


def write(out: Path, rows: list[dict], tree: str | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    doc = {"bench": "bench/bench_verify_memory.py", "before": tree, "cpu_count": os.cpu_count(),
           "python": sys.version.split()[0], "rows": rows}
    (out / "verify-memory.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = ["# `prov verify` peak RSS on padded bundles (issue #30)", "",
             "A real signed bundle whose statement, SBOM, manifest or a JSON result was padded "
             "in one shape (string: one long string; escapes: the same as `\\n`; astral: "
             "ASCII plus one emoji as an escape; astral-raw: the emoji as UTF-8; nodes: a "
             "list of `{\"a\":1}`) and signed again with the right key. Fresh process per "
             "row; peak = ru_maxrss of the prov child; `before` is the tree before this work. "
             "Produced by `bench/bench_verify_memory.py`.", "",
             "| tree | file padded | shape | form | file MB | exit | peak RSS MB | wall s | "
             "outcome |",
             "|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        name = "manifests/HEX.json" if r["file"].startswith("manifests/") else r["file"]
        outcome = "verified" if r["exit"] == 0 else r["message"].replace("|", "/")
        lines.append(f"| {r['tree']} | {name} | {r['shape']} | {r['form']} | "
                     f"{r['file_mb']} | "
                     f"{r['exit']} | {r['peak_rss_mb']} | {r['wall_s']} | {outcome[:120]} |")
    (out / "verify-memory.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
