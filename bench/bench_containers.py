"""Image scan speed against the physical limit, with and without file verification.

    .venv/bin/python bench/bench_containers.py [IMAGE ...] [--repeats N] [--out DIR]

IMAGE: any source (`oci:DIR[:TAG]`, `oci:FILE.tar`, `docker-archive:FILE.tar`); default:
the bench's own image (bench/container_image.py: >= 1 GB of layers, real Debian rootfs +
generated compressible and incompressible files, built once and cached) as OCI gzip,
OCI zstd and OCI uncompressed.

Per image, interleaved runs (page cache warm after the first), each timed in wall and CPU
seconds (user + sys of every process and thread):

  floor        for each layer `gzip -dc BLOB | tar -t` (`zstd -dc`, `cat`; a tar's members
               through `tar -xOf`): decompress and list, the physical limit of a scan
  floor+hash   the same with the hashing a scan cannot skip: sha256 of the blob (its
               digest) and of the uncompressed stream (its DiffID), beside it via tee
               (`openssl sha256`: SHA-NI like Python's hashlib; coreutils' sha256sum is
               2-3x slower here and would flatter the scan)
  hash-only    the hashing of file verification alone: sha256 of the blob, sha256 of the
               uncompressed stream twice (DiffID, per-file sha256) and md5 once (dpkg's
               md5sums), C tools over bytes already decompressed
  pin          prov's scan without file verification (`scan_image(verify_files=False)`)
  pin+verify   prov's scan as `prov pin` runs it: every file hashed and checked

Ratios: pin / floor+hash (target <= 1.3x), pin+verify / (floor+hash + hash-only), and
pin+verify / pin (the cost of verification). Peak RSS of each scan.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
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
    "from lockfiles.image_lock import lock_packages; "
    "s = scan_image(sys.argv[1], verify_files=sys.argv[2] == '1'); "
    "e = time.perf_counter() - t; f = s.files or {}; "
    "print(e, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(lock_packages(s.facts())), "
    "len(s.layers), sum(c.checked for c in f.values()))"
)


def _codec(head: bytes) -> str:
    if head.startswith(b"\x1f\x8b"):
        return "gzip -dc"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd -dc"
    return "cat"


def _manifest(read, index: dict, tag: str | None) -> dict:
    """The image manifest an index leads to: the entry named `tag`, else the first."""
    entries = index["manifests"]
    if tag is not None:
        names = "org.opencontainers.image.ref.name"
        entries = [e for e in entries if (e.get("annotations") or {}).get(names) == tag]
    doc = json.loads(read(entries[0]["digest"]))
    while "manifests" in doc:  # nested index: first entry
        doc = json.loads(read(doc["manifests"][0]["digest"]))
    return doc


def _split_tag(value: str) -> tuple[Path, str | None]:
    path = Path(value)
    head, sep, tag = value.rpartition(":")
    if not path.exists() and sep and "/" not in tag and Path(head).exists():
        return Path(head), tag
    return path, None


def layer_streams(source: str) -> list[tuple[str, str]]:
    """(shell command writing the layer blob to stdout, decompressor) per layer."""
    kind, _, value = source.partition(":")
    path, tag = _split_tag(value)
    if kind == "oci" and path.is_dir():
        blobs = path / "blobs" / "sha256"

        def read(digest: str) -> bytes:
            return (blobs / digest.split(":")[1]).read_bytes()

        doc = _manifest(read, json.loads((path / "index.json").read_text()), tag)
        out = []
        for layer in doc["layers"]:
            blob = blobs / layer["digest"].split(":")[1]
            with open(blob, "rb") as fh:
                out.append((f"< '{blob}'", _codec(fh.read(4))))
        return out
    # a tar (docker-archive or oci archive): layers are members, maybe named "./..."
    with tarfile.open(path) as tf:
        names = {m.name.removeprefix("./"): m for m in tf.getmembers()}

        def member(name: str) -> tarfile.TarInfo:
            return names[name.removeprefix("./")]

        if "manifest.json" in names and "index.json" not in names:
            layers = json.load(tf.extractfile(names["manifest.json"]))[0]["Layers"]
        else:
            index = json.load(tf.extractfile(names["index.json"]))

            def read(digest: str) -> bytes:
                return tf.extractfile(member("blobs/sha256/" + digest.split(":")[1])).read()

            doc = _manifest(read, index, tag)
            layers = ["blobs/sha256/" + x["digest"].split(":")[1] for x in doc["layers"]]
        out = []
        for name in layers:
            real = member(name).name
            head = tf.extractfile(member(name)).read(4)
            out.append((f"tar -xOf '{path}' '{real}' |", _codec(head)))
        return out


def _unpack(read: str, codec: str, blob_hash: bool = False) -> str:
    """Shell that writes one layer's uncompressed tar to stdout (`read`: `< 'FILE'` or a
    producer command ending in `|`)."""
    dc = "cat" if codec == "cat" else codec
    if read.startswith("<"):
        return f"{dc} {read}"
    tee = "tee >(openssl sha256 >/dev/null) | " if blob_hash else ""
    return f"{read} {tee}{dc}"


def pipelines(streams: list[tuple[str, str]], mode: str) -> list[str]:
    """One shell pipeline per layer for `floor`, `floor+hash` or `hash-only` (the last
    decompresses to /dev/shm; run_hash_only times only the hashing)."""
    out = []
    for read, codec in streams:
        if mode == "floor":
            out.append(f"{_unpack(read, codec)} | tar -t > /dev/null")
        elif mode == "floor+hash":
            tail = "tee >(openssl sha256 >/dev/null) | tar -t > /dev/null"
            if read.startswith("<"):  # the blob file hashed beside the pipeline
                beside = f"openssl sha256 {read[1:]} > /dev/null &"
                out.append(f"{beside} {_unpack(read, codec)} | {tail}; wait")
            else:
                out.append(f"{_unpack(read, codec, blob_hash=True)} | {tail}")
        else:
            out.append(f"{_unpack(read, codec)} > /dev/shm/prov-bench-layer")
    return out


def _timed(fn) -> tuple[float, float]:
    """(wall, CPU) seconds of fn(), CPU counted over the child processes it waits for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    extra = fn()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall - (extra or 0.0), cpu


def run_shell(cmds: list[str]) -> None:
    for cmd in cmds:
        subprocess.run(["bash", "-o", "pipefail", "-c", cmd], check=True)


HASH_ONLY = (
    "tee >(openssl sha256 >/dev/null) >(openssl sha256 >/dev/null) < /dev/shm/prov-bench-layer"
    " | openssl md5 > /dev/null"
)


def run_hash_only(cmds: list[str]) -> tuple[float, float]:
    """Decompress each layer to /dev/shm untimed, then time only the hashing of it."""
    wall = cpu = 0.0
    for cmd in cmds:
        subprocess.run(["bash", "-o", "pipefail", "-c", cmd], check=True)
        w, c = _timed(lambda: run_shell([HASH_ONLY]))
        wall, cpu = wall + w, cpu + c
    Path("/dev/shm/prov-bench-layer").unlink(missing_ok=True)
    return wall, cpu


def run_scan(source: str, verify: bool) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    args = [sys.executable, "-c", SCAN, source, "1" if verify else "0"]
    out = subprocess.run(args, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, kb, packages, layers, checked = out.split()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": float(wall), "cpu": cpu, "rss_mb": int(kb) / 1024,
            "packages": int(packages), "layers": int(layers), "checked": int(checked)}


def _stream_bytes(streams: list[tuple[str, str]], which: str) -> int:
    """Total bytes of the layer blobs (`cat`) or of their uncompressed tars (`codec`)."""
    total = 0
    for read, codec in streams:
        cmd = f"{read} cat" if which == "cat" else _unpack(read, codec)
        out = subprocess.run(["bash", "-o", "pipefail", "-c", f"{cmd} | wc -c"], check=True,
                             capture_output=True, text=True).stdout
        total += int(out.strip())
    return total


def bench(source: str, repeats: int) -> dict:
    streams = layer_streams(source)
    shells = {mode: pipelines(streams, mode) for mode in ("floor", "floor+hash", "hash-only")}
    run_shell(shells["floor"])  # warm the page cache
    runs: dict[str, list[tuple[float, float]]] = {}
    scans: dict[str, list[dict]] = {"pin": [], "pin+verify": []}
    for _ in range(repeats):
        runs.setdefault("floor", []).append(_timed(lambda: run_shell(shells["floor"])))
        runs.setdefault("floor+hash", []).append(_timed(lambda: run_shell(shells["floor+hash"])))
        runs.setdefault("hash-only", []).append(run_hash_only(shells["hash-only"]))
        scans["pin"].append(run_scan(source, verify=False))
        scans["pin+verify"].append(run_scan(source, verify=True))
    row: dict = {"source": source, "layers": scans["pin"][0]["layers"]}
    row["layer_bytes"] = _stream_bytes(streams, "cat")
    row["uncompressed_bytes"] = _stream_bytes(streams, "codec")
    row["packages"] = scans["pin"][0]["packages"]
    row["files_checked"] = scans["pin+verify"][0]["checked"]
    for name, values in runs.items():
        row[name] = {"wall_s": statistics.median(w for w, _ in values),
                     "cpu_s": statistics.median(c for _, c in values)}
    for name, values in scans.items():
        row[name] = {"wall_s": statistics.median(v["wall"] for v in values),
                     "cpu_s": statistics.median(v["cpu"] for v in values),
                     "peak_rss_mb": max(v["rss_mb"] for v in values)}
    for unit in ("wall_s", "cpu_s"):
        floor_verify = row["floor+hash"][unit] + row["hash-only"][unit]
        row[f"ratio_pin_{unit[:-2]}"] = row["pin"][unit] / row["floor+hash"][unit]
        row[f"ratio_pin_floor_{unit[:-2]}"] = row["pin"][unit] / row["floor"][unit]
        row[f"ratio_verify_{unit[:-2]}"] = row["pin+verify"][unit] / floor_verify
        row[f"verify_cost_{unit[:-2]}"] = row["pin+verify"][unit] / row["pin"][unit]
    return row


def _table(rows: list[dict]) -> str:
    head = (f"| source | floor | floor+hash | hash-only | pin | pin/floor+hash | pin+verify | "
            f"verify/(floor+hash+hash-only) | verify/pin | RSS MB |\n|{'---|' * 10}")
    lines = [head]
    for r in rows:
        def f(name: str, r: dict = r) -> str:
            return f"{r[name]['wall_s']:.2f} / {r[name]['cpu_s']:.2f}"

        lines.append(
            f"| {r['source'].rsplit('/', 1)[-1] if len(r['source']) > 40 else r['source']} | "
            f"{f('floor')} | {f('floor+hash')} | {f('hash-only')} | {f('pin')} | "
            f"{r['ratio_pin_wall']:.2f}x / {r['ratio_pin_cpu']:.2f}x | {f('pin+verify')} | "
            f"{r['ratio_verify_wall']:.2f}x / {r['ratio_verify_cpu']:.2f}x | "
            f"{r['verify_cost_wall']:.2f}x / {r['verify_cost_cpu']:.2f}x | "
            f"{r['pin']['peak_rss_mb']:.0f} / {r['pin+verify']['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images", nargs="*")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write results.json and results.md here")
    args = parser.parse_args()
    sources = args.images
    if not sources:
        from bench.container_image import build_bench_image

        sources = [f"oci:{path}" for path in build_bench_image().values()]
    rows = [bench(s, args.repeats) for s in sources]
    table = _table(rows)
    print("each cell: wall s / CPU s (median of", args.repeats, "runs)")
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        meta = {"machine": platform.machine(), "python": platform.python_version(),
                "cpus": len(__import__("os").sched_getaffinity(0)),
                "load_avg_at_end": __import__("os").getloadavg(), "repeats": args.repeats}
        (args.out / "containers.json").write_text(
            json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n"
        )
        (args.out / "containers-table.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
