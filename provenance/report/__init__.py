"""`prov report`: one self-contained, offline HTML page for a run, a comparison or a sweep.

Public surface: `build_report(target, ...) -> str` (the HTML) and `write_report(...)`;
`sparkline_line` / `scores_disagreement` / `figure_rows` for the terminal. numpy only;
tokenizers is used lazily to decode text when a model directory is known.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from provenance.report.sparkline import (
    runs_sparkline,
    scores_disagreement,
    sparkline,
    sparkline_line,
)

__all__ = ["build_report", "figure_rows", "runs_sparkline", "scores_disagreement", "sparkline",
           "sparkline_line", "write_report"]


def figure_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """A divergence summary's figures as (label, text) rows, as the report and
    `prov run diverge` print them."""
    from provenance.report.build import figure_rows as rows  # numpy: imported on use

    return rows(summary)


def build_report(target: str, *, store: str | None = None, model: Path | None = None,
                 sbom: Path | None = None, audit: Path | None = None) -> str:
    """The HTML page of a result, run or sweep: its kind's sections, then the ones any kind
    may carry (provenance/report/sections.py)."""
    from provenance import __version__
    from provenance.report import render, sections
    from provenance.report.sources import load

    ld = load(target, store)
    data: dict[str, Any] = {"format": "prov-report/1", "kind": ld.kind}
    suffix, body = sections.kind_sections(ld, data, model, target)
    body += sections.common_sections(ld, data, sbom, audit)
    title = f"prov report: {sections.TITLES[ld.kind]}{suffix}"
    generated = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return render.page(title, str(target), generated, __version__, body, data)


def write_report(target: str, out: Path, **kw: Any) -> Path:
    """Build, then temp file + fsync + rename: a failed build leaves nothing behind."""
    from provenance.model.atomic import write_atomic

    text = build_report(target, **kw).encode()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text)  # 0666 less the umask, like any file a user asks for
    return out
