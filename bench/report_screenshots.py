"""Screenshots of `prov report` pages in headless chromium at 1280 px, with their widths.

    .venv/bin/python bench/report_screenshots.py --out bench/results/DATE-MACHINE \\
        run=RUN_ID@STORE comparison=DIGEST@STORE sweep=DIGEST@STORE

Each NAME=TARGET@STORE is built with `prov report TARGET --store STORE`, opened from its
file (Debian's chromium through chromedriver, the flags of tests/provenance/report/
browser.py), and saved as OUT/report-NAME.png (the page from its top, up to 3000 px tall);
OUT/report-screenshots.md lists each page's scroll width against the window's (a page
wider than its window scrolls sideways: the script fails on one).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.provenance.report.browser import (  # noqa: E402
    PAGE_READY,
    WIDTHS,
    chromium,
    console_errors,
    full_page_screenshot,
    open_file,
)

PROV = str(Path(sys.executable).with_name("prov"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--about", default="", help="how the targets were made (markdown)")
    ap.add_argument("pages", nargs="+", metavar="NAME=TARGET@STORE")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, chromium() as drv:
        for spec in args.pages:
            name, rest = spec.split("=", 1)
            target, store = rest.rsplit("@", 1)
            html = Path(tmp) / f"{name}.html"
            subprocess.run([PROV, "report", target, "--store", store, "--out", str(html)],
                           check=True, capture_output=True)
            drv.set_window_size(1280, 2000)
            open_file(drv, html, PAGE_READY + " && document.querySelectorAll("
                      "'.plot:not([data-rendered=\"1\"])').length === 0")
            w = drv.execute_script(WIDTHS)
            errors = console_errors(drv)
            png = args.out / f"report-{name}.png"
            full_page_screenshot(drv, png, most=3000)
            rows.append({"page": name, "target": target, **w, "console_errors": len(errors),
                         "png_bytes": png.stat().st_size})
            if w["scroll"] > w["client"] or errors:
                raise SystemExit(f"{name}: {w}, console errors {errors}")
    print(json.dumps(rows, indent=1))
    lines = ["# `prov report` at 1280 px", "",
             "`bench/report_screenshots.py --out DIR " + " ".join(args.pages) + "`: headless "
             "chromium (1280 px window), each page from its top.", "",
             *([args.about, ""] if args.about else []),
             "| page | target | scroll width | client width | console errors | screenshot |",
             "|---|---|---:|---:|---:|---|"]
    lines += [f"| {r['page']} | `{r['target'][:23]}` | {r['scroll']} | {r['client']} | "
              f"{r['console_errors']} | [report-{r['page']}.png](report-{r['page']}.png) "
              f"({r['png_bytes'] // 1000} kB) |" for r in rows]
    (args.out / "report-screenshots.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
