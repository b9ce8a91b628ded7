"""Peak RSS of `prov pin` on images with oversized metadata members, measured on the prov
process itself: a dedicated child, waited for alone, its rusage read from os.wait4."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.hostile.containers.cases import big_metadata

PROV = [sys.executable, "-c", "import sys; from provenance.cli import main; sys.exit(main())"]
BOUND_MB = 256


def _pin_peak_mb(src: str, out: Path) -> tuple[int, int, str]:
    """(exit status, peak RSS in MB, stderr) of one `prov pin` child."""
    err = out / "stderr.txt"
    with open(err, "wb") as fh:
        proc = subprocess.Popen(
            PROV + ["pin", src, "-o", str(out / "lock.toml")], stdout=subprocess.DEVNULL, stderr=fh
        )
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # only this child, with its own rusage
        finally:
            proc.returncode = 0  # waited for above; keep Popen from waiting again
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss // 1024, err.read_text()


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
