"""Peak RSS of `prov pin` and `prov verify` on inputs of growing size, beside their bounds.

    .venv/bin/python bench/bench_hostile.py [--sizes 1,16,64,200] [--out DIR]

- verify: a signed .tar.gz bundle whose result file is N MiB (random bytes, so gzip cannot
  shrink it). The verifier streams members to disk within MAX_MEMBER_BYTES per member;
  its peak RSS should not grow with N.
- verify, bomb: a 2 MiB .tar.gz whose one member claims (and holds) 2 GiB of zeros:
  refused at the member header.
- pin: a docker-archive image whose one layer holds 16 METADATA files of N/16 MiB each
  (issue #19: 16 x 60 MiB reached 1,560 MB).
Each figure is ru_maxrss of the one `prov` child process (os.wait4), not of this script.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROV = [sys.executable, "-c", "from provenance.cli import main; main()"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


MEASURED = dict(ENV)  # the checkout whose prov is measured (--checkout: an older main)


def peak_rss(argv: list[str], cwd: Path) -> tuple[int, int, float]:
    """(exit status, peak RSS in MiB, seconds) of one child."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, env=MEASURED, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_maxrss // 1024, time.perf_counter() - t0


def _bundle(work: Path, mib: int) -> tuple[Path, Path]:
    from provenance.model import Manifest
    from provenance.publish.archive import write_tar_gz
    from provenance.publish.bundle import publish
    from provenance.publish.keys import generate
    from provenance.sbom.subjects import Subject

    result = work / f"result-{mib}.bin"
    with open(result, "wb") as fh:
        for _ in range(mib):
            fh.write(os.urandom(1 << 20))
    key = work / "k"
    if not (work / "k.key").exists():
        generate(key)
    manifest = Manifest({"python": {"version": "3.11.2", "packages": {}}})
    tree = work / f"tree-{mib}"
    publish([result], Subject(manifest, "bench", "manifest"), tree, key_path=work / "k.key")
    archive = work / f"bundle-{mib}.tar.gz"
    write_tar_gz(tree, archive)
    result.unlink()
    return archive, work / "k.pub"


def _bomb(work: Path) -> Path:
    path = work / "bomb.tar.gz"
    info = tarfile.TarInfo("results/huge.bin")
    info.size = 2 << 30
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(info.tobuf(tarfile.PAX_FORMAT))
        zeros = bytes(1 << 20)
        for _ in range(2048):
            gz.write(zeros)
    return path


def _image(work: Path, mib: int) -> Path:
    from tests.fixtures.oci_pack import image_config, write_docker_archive

    buf = io.BytesIO()
    each = max(1, mib // 16) << 20
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for i in range(16):
            name = f"usr/lib/python3/dist-packages/pkg{i}-1.0.dist-info/METADATA"
            body = b"Metadata-Version: 2.1\nName: pkg%d\nVersion: 1.0\n\n" % i
            body += b"x" * (each - len(body))
            t = tarfile.TarInfo(name)
            t.size = len(body)
            tar.addfile(t, io.BytesIO(body))
    layer = buf.getvalue()
    out = work / f"image-{mib}.tar"
    write_docker_archive(out, [layer], image_config([layer], ["ADD pkgs"], []), "bench:1")
    return out


def prepare(work: Path, sizes: list[int]) -> None:
    """Build every input (run in a child, so this script stays small: a child's ru_maxrss
    starts from its parent's RSS at fork, and would otherwise report ours)."""
    for mib in sizes:
        _bundle(work, mib)
        _image(work, mib)
    _bomb(work)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,16,64,200")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--checkout", type=Path, help="measure this checkout's prov (inputs are "
                    "built by this one); the 2 GiB bomb is skipped for it")
    args = ap.parse_args()
    if args.checkout:
        MEASURED["PYTHONPATH"] = str(args.checkout.resolve())
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.prepare:
        prepare(args.prepare, sizes)
        return
    member_bound = 256  # MiB: provenance.publish.archive.MAX_MEMBER_BYTES (not imported here)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, __file__, "--prepare", str(work), "--sizes", args.sizes],
                       env=ENV, check=True)
        pub = work / "k.pub"
        for mib in sizes:
            code, rss, secs = peak_rss([*PROV, "verify", str(work / f"bundle-{mib}.tar.gz"),
                                        "--key", str(pub)], work)
            rows.append({"command": "verify", "input_mib": mib, "exit": code, "peak_rss_mib": rss,
                         "seconds": round(secs, 2),
                         "bound": f"member <= {member_bound} MiB, streamed to disk"})
        bomb = work / "bomb.tar.gz"
        if not args.checkout:  # an unbounded reader would take 2 GiB of a shared machine
            code, rss, secs = peak_rss([*PROV, "verify", str(bomb), "--no-signature"], work)
            rows.append({"command": "verify (2 GiB member)",
                         "input_mib": bomb.stat().st_size >> 20, "exit": code,
                         "peak_rss_mib": rss, "seconds": round(secs, 2),
                         "bound": "refused at the member header"})
        for mib in sizes:
            code, rss, secs = peak_rss([*PROV, "pin", f"docker-archive:{work}/image-{mib}.tar",
                                        "-o", str(work / f"l{mib}.toml")], work)
            rows.append({"command": "pin (16 METADATA)", "input_mib": mib, "exit": code,
                         "peak_rss_mib": rss, "seconds": round(secs, 2),
                         "bound": "README: far under 256 MiB (member reads: images room)"})
    print(f"{'command':24} {'input MiB':>9} {'exit':>4} {'peak RSS MiB':>12} {'s':>6}  bound")
    for r in rows:
        print(f"{r['command']:24} {r['input_mib']:>9} {r['exit']:>4} {r['peak_rss_mib']:>12} "
              f"{r['seconds']:>6}  {r['bound']}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        name = "bench_hostile-before.json" if args.checkout else "bench_hostile.json"
        (args.out / name).write_text(json.dumps({"checkout": str(MEASURED["PYTHONPATH"]),
                                                 "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
