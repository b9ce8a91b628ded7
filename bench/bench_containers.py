"""Image scan speed against the physical limit, and peak memory, side by side in one run.

    .venv/bin/python bench/bench_containers.py [IMAGE ...] [--repeats N]

IMAGE: any source (`oci:DIR`, `oci:FILE.tar`, `docker-archive:FILE.tar`); default: the test
image (built and cached by tests/fixtures/images.py) as OCI layout and docker-archive.

  prov's scan (one process: open, re-hash every blob, decompress, walk the tar, whiteouts,
  catalogers)   vs   for each layer: `gzip -dc BLOB | tar -t` (`zstd -dc` for zstd, `cat`
  for uncompressed; docker-archive members through `tar -xOf`), which only decompresses
  and lists: the physical limit of a daemonless scan.

Prints median times, the ratio (target: within 1.3x) and the scan's peak RSS
(target: < 256 MB). Interleaved runs; page cache warm after the first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCAN = (
    "import resource, sys, time; t = time.perf_counter(); from containers import scan_image; "
    "s = scan_image(sys.argv[1]); e = time.perf_counter() - t; "
    "print(e, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
    "len(s.packages()), len(s.layers))"
)


def _codec(head: bytes) -> str:
    if head.startswith(b"\x1f\x8b"):
        return "gzip -dc"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd -dc"
    return "cat"


def baseline_commands(source: str) -> list[str]:
    """One shell pipeline per layer that decompresses and lists it."""
    kind, _, value = source.partition(":")
    path = Path(value)
    cmds = []
    if kind == "oci" and path.is_dir():
        index = json.loads((path / "index.json").read_text())
        digest = index["manifests"][0]["digest"]
        doc = json.loads((path / "blobs/sha256" / digest.split(":")[1]).read_text())
        while "manifests" in doc:  # nested index: first entry
            digest = doc["manifests"][0]["digest"]
            doc = json.loads((path / "blobs/sha256" / digest.split(":")[1]).read_text())
        for layer in doc["layers"]:
            blob = path / "blobs/sha256" / layer["digest"].split(":")[1]
            with open(blob, "rb") as fh:
                codec = _codec(fh.read(4))
            cmds.append(f"{codec} '{blob}' | tar -t > /dev/null")
        return cmds
    # a tar (docker-archive or oci archive): layers are members
    with tarfile.open(path) as tf:
        names = {m.name.lstrip("./"): m for m in tf.getmembers()}
        if "manifest.json" in names and "index.json" not in names:
            manifest = json.load(tf.extractfile(names["manifest.json"]))[0]
            members = manifest["Layers"]
        else:
            index = json.load(tf.extractfile(names["index.json"]))
            digest = index["manifests"][0]["digest"]
            doc = json.load(tf.extractfile(names["blobs/sha256/" + digest.split(":")[1]]))
            members = ["blobs/sha256/" + x["digest"].split(":")[1] for x in doc["layers"]]
        for member in members:
            head = tf.extractfile(names[member]).read(4)
            codec = _codec(head).replace(" -dc", " -dc -").replace("cat", "cat -")
            cmds.append(f"tar -xOf '{path}' '{member}' | {codec} | tar -t > /dev/null")
    return cmds


def with_sha256(cmds: list[str]) -> list[str]:
    """The same pipelines with the blob also hashed (`tee >(sha256sum)`): a scan must
    verify every digest, which `tar -t` alone does not."""
    out = []
    for cmd in cmds:
        head, _, tail = cmd.partition(" | ")
        if head.startswith(("gzip", "zstd", "cat")):
            blob = head.rsplit(" ", 1)[-1]
            out.append(f"sha256sum {blob} >/dev/null & {cmd}; wait")
        else:
            out.append(f"{head} | tee >(sha256sum >/dev/null) | {tail}")
    return out


def run_baseline(cmds: list[str]) -> float:
    start = time.perf_counter()
    for cmd in cmds:
        subprocess.run(["bash", "-o", "pipefail", "-c", cmd], check=True)
    return time.perf_counter() - start


def run_scan(source: str) -> tuple[float, int, int, int]:
    out = subprocess.run(
        [sys.executable, "-c", SCAN, source], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout.split()
    return float(out[0]), int(out[1]), int(out[2]), int(out[3])


def bench(source: str, repeats: int) -> dict:
    cmds = baseline_commands(source)
    hashed = with_sha256(cmds)
    run_baseline(cmds)  # warm the page cache
    base, base_sha, ours, rss = [], [], [], []
    packages = layers = 0
    for _ in range(repeats):
        base.append(run_baseline(cmds))
        base_sha.append(run_baseline(hashed))
        t, kb, packages, layers = run_scan(source)
        ours.append(t)
        rss.append(kb)
    b, o = statistics.median(base), statistics.median(ours)
    return {
        "source": source,
        "layers": layers,
        "packages": packages,
        "baseline_s": b,
        "baseline_sha_s": statistics.median(base_sha),
        "scan_s": o,
        "ratio": o / b,
        "peak_rss_mb": max(rss) / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images", nargs="*")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sources = args.images
    if not sources:
        from tests.fixtures.images import build_test_image

        img = build_test_image()
        sources = [f"oci:{img.oci}", f"docker-archive:{img.archive}"]
    rows = [bench(s, args.repeats) for s in sources]
    print(
        f"{'source':<48} {'layers':>6} {'pkgs':>5} {'limit s':>8} {'+sha s':>7} {'scan s':>7} "
        f"{'ratio':>6} {'RSS MB':>7}"
    )
    for r in rows:
        name = r["source"] if len(r["source"]) <= 48 else "…" + r["source"][-47:]
        print(
            f"{name:<48} {r['layers']:>6} {r['packages']:>5} {r['baseline_s']:>8.2f} "
            f"{r['baseline_sha_s']:>7.2f} {r['scan_s']:>7.2f} {r['ratio']:>5.2f}x "
            f"{r['peak_rss_mb']:>7.1f}"
        )
    print(
        "limit: gzip -dc | tar -t per layer (+sha: with the blob hashed beside it); "
        "ratio = scan / limit; targets: ratio <= 1.3x, peak RSS < 256 MB"
    )

if __name__ == "__main__":
    main()
