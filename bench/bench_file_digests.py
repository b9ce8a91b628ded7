"""What apk's SHA-1 costs `prov pin`: the file-verifying scan with the walk's digest policy
as built (md5 and SHA-1 until a layer shows the image's package database, then only the one
it uses), beside md5 only (the walk before apk verification) and md5 + SHA-1 on every layer.

    .venv/bin/python bench/bench_file_digests.py [IMAGE ...] [--repeats N] [--out DIR]

IMAGE: any source; default: the tests' Debian bookworm image (tests/fixtures/images.py,
built once and cached in ~/.cache/prov-tests) and the Alpine-like image of
tests/fixtures/alpine_image.py. Runs interleave; each is timed in CPU seconds of this
process (every thread) and wall seconds; the minimum over the repeats is reported.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from containers import filehash, scan_image  # noqa: E402

_INIT, _NARROW = filehash.MemberDigester.__init__, filehash.MemberDigester.narrow


def _md5_only(self, *args, **kwargs) -> None:
    _INIT(self, *args, **kwargs)
    self.sha1 = False


def _never(self, databases) -> None:
    return None


POLICIES = {
    "as built (narrowed per layer)": (_INIT, _NARROW),
    "md5 only (before)": (_md5_only, _never),
    "md5 + sha1 on every layer": (_INIT, _never),
}


def _run(source: str, policy: str) -> tuple[float, float, int]:
    filehash.MemberDigester.__init__, filehash.MemberDigester.narrow = POLICIES[policy]
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        scan = scan_image(source, verify_files=True)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        filehash.MemberDigester.__init__, filehash.MemberDigester.narrow = _INIT, _NARROW
    return cpu, wall, sum(c.checked for c in (scan.files or {}).values())


def _default_images(tmp: Path) -> list[str]:
    from tests.fixtures.alpine_image import build_alpine_image
    from tests.fixtures.images import build_test_image

    return [f"oci:{build_test_image().oci}", build_alpine_image(tmp)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("images", nargs="*")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        images = args.images or _default_images(Path(tmp))
        results = []
        for source in images:
            runs: dict[str, list] = {p: [] for p in POLICIES}
            for _ in range(args.repeats):
                for policy in POLICIES:
                    runs[policy].append(_run(source, policy))
            row = {"image": source, "claims_checked": {}}
            for policy, found in runs.items():
                row[policy] = {"cpu_s": round(min(r[0] for r in found), 3),
                               "wall_s": round(min(r[1] for r in found), 3)}
                row["claims_checked"][policy] = found[0][2]
            base = row["md5 only (before)"]["cpu_s"]
            for policy in POLICIES:
                row[policy]["cpu_vs_md5_only"] = round(row[policy]["cpu_s"] / base, 3)
            results.append(row)
            print(json.dumps(row, indent=1))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "file-digests.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
