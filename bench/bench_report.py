"""Benchmark `prov report`: build time, page size and time until headless chromium has drawn
the plots, for synthetic comparisons of growing length; the peak-keeping downsampling
measured side by side with a page that ships every point.

    .venv/bin/python bench/bench_report.py [--positions 10000 100000] [--model DEMO_MODEL_DIR]

Needs Debian's chromium and chromium-driver (`make apt`) and selenium (test extra).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from provenance.report import series, write_report  # noqa: E402
from tests.provenance.report.browser import (  # noqa: E402
    PLOTS_READY,
    chromium,
    console_errors,
    open_file,
)
from tests.provenance.report.synthetic import synthetic_result  # noqa: E402

FULL_UP_TO = 200_000  # the every-point page is measured only up to this many positions


def measure(result: Path, out: Path, model: Path | None, drv, full: bool) -> dict:
    saved = series.MAX_POINTS, series.RATE_BUCKETS
    if full:  # every point shipped: what the downsampling saves
        series.MAX_POINTS = series.RATE_BUCKETS = 10**9
    try:
        t0 = time.perf_counter()
        write_report(str(result), out, model=model)
        build = time.perf_counter() - t0
    finally:
        series.MAX_POINTS, series.RATE_BUCKETS = saved
    opens = [open_file(drv, out, PLOTS_READY, timeout=120) for _ in range(3)]
    errors = console_errors(drv)
    return {"build": build, "size": out.stat().st_size, "open": min(opens), "errors": errors}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--positions", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--model", type=Path, default=Path.home() / ".cache/prov-tests/demo-model",
                    help="decode the text with this tokenizer (demo model); '' for none")
    args = ap.parse_args()
    model = args.model if args.model and (args.model / "tokenizer.json").is_file() else None
    tmp = Path(tempfile.mkdtemp(prefix="prov-bench-report-"))
    print(f"text decoded with: {model or 'none (cluster windows of token ids)'}")
    print("| positions | page | build | size | chromium: plots drawn (best of 3) | "
          "every point / downsampled: size | open |")
    print("|---|---|---|---|---|---|---|")
    with chromium() as drv:
        for n in args.positions:
            res = synthetic_result(tmp / f"res-{n}", positions=n)
            down = measure(res, tmp / f"down-{n}.html", model, drv, full=False)
            if n > FULL_UP_TO:  # tens of MB of JSON: chromium takes minutes, if it copes
                print(f"| {n:,} | downsampled | {down['build']:.2f} s | "
                      f"{down['size'] / 1e6:.2f} MB | {down['open']:.2f} s | - | - |")
                continue
            full = measure(res, tmp / f"full-{n}.html", model, drv, full=True)
            ratios = (f"{full['size'] / down['size']:.1f}x | "
                      f"{full['open'] / down['open']:.1f}x |")
            for name, m in (("downsampled", down), ("every point", full)):
                print(f"| {n:,} | {name} | {m['build']:.2f} s | {m['size'] / 1e6:.2f} MB | "
                      f"{m['open']:.2f} s{' ERRORS' if m['errors'] else ''} | "
                      + (ratios if name == "downsampled" else "1 | 1 |"))
    print(f"(pages under {tmp})")


if __name__ == "__main__":
    main()
