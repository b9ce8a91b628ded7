"""Peak RSS of `prov pin` on images with oversized metadata members, measured on the prov
process itself (the RUSAGE_CHILDREN of a launcher whose only child is prov)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.hostile.containers.cases import big_metadata

PROV = [sys.executable, "-c", "import sys; from provenance.cli import main; sys.exit(main())"]
BOUND_MB = 256


# A small launcher runs prov as its only child and reports RUSAGE_CHILDREN once it has
# waited for it: Linux carries the RSS high-water mark of the forking process across exec, so
# prov must not be forked from pytest (which holds the built image in memory).
_LAUNCHER = """
import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""


def _pin_peak_mb(src: str, out: Path) -> tuple[int, int, str]:
    """(exit status, peak RSS in MB, stderr) of one `prov pin`."""
    argv = [sys.executable, "-c", _LAUNCHER, *PROV, "pin", src, "-o", str(out / "lock.toml")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    rc, peak = (int(x) for x in proc.stdout.split())
    return rc, peak, proc.stderr


def test_sixteen_60mib_metadata_files_stay_bounded(tmp_path: Path) -> None:
    big_metadata(tmp_path, count=16, size=60 << 20)
    rc, peak, err = _pin_peak_mb(f"oci:{tmp_path / 'oci'}", tmp_path)
    assert rc == 0, err
    assert peak < BOUND_MB, f"peak RSS {peak} MB"
    lock = (tmp_path / "lock.toml").read_text()
    assert "over the" in lock and "limit for its kind; skipped" in lock


def test_metadata_past_the_retained_bound_is_refused(tmp_path: Path) -> None:
    big_metadata(tmp_path, count=20, size=7 << 20)  # each under 8 MiB, 140 MiB together
    rc, peak, err = _pin_peak_mb(f"oci:{tmp_path / 'oci'}", tmp_path)
    assert rc == 2, err
    assert "MiB in memory; refused" in err and len(err.strip().splitlines()) == 1
    assert peak < BOUND_MB, f"peak RSS {peak} MB"
