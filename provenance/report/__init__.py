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
    from provenance import __version__
    from provenance.report import build, render, summaries
    from provenance.report.sources import load
    from provenance.report.sweep import sweep_matrix

    ld = load(target, store)
    doc = ld.doc
    data: dict[str, Any] = {"format": "prov-report/1", "kind": ld.kind}
    sections: list[str] = []
    titles = {"diverge": "divergence", "repeat": "repeatability", "comparison": "comparison",
              "run": "run", "sweep": "sweep", "invariance": "batch invariance"}
    title = f"prov report: {titles[ld.kind]}"
    if ld.kind == "diverge" or (ld.kind == "comparison" and ld.arrays):
        title += f" — {build.spec(doc['engines'][0])} vs {build.spec(doc['engines'][1])}"
        sections.append(render.section("Summary", render.table(build.diverge_rows(doc)),
                                       "summary"))
        data["series"] = build.kl_series(ld.arrays)
        sections.append(render.section("Along the context: KL (log scale) and top-1 "
                                       "disagreement", render.series_section(data["series"]),
                                       "context"))
        body, data["tips"], source = build.text_section(ld, model)
        clusters = doc["summary"]["clusters"]
        sections.append(render.section(f"Disagreement clusters over the text ({len(clusters)})",
                                       render.text_section(source, body, clusters), "text"))
        if doc["summary"].get("segments"):
            sections.append(render.section("Disagreements by text segment type",
                                           render.segments_table(doc["summary"]["segments"]),
                                           "segments"))
    elif ld.kind == "repeat":
        title += f" — {build.spec(doc['engines'][0])} × {len(doc.get('runs') or [])}"
        sections.append(render.section("Summary", render.table(build.repeat_rows(doc)),
                                       "summary"))
    elif ld.kind == "invariance":
        title += f" — {build.spec(doc['engines'][0])}: {doc['summary']['verdict']}"
        sections.append(render.section("Summary", render.table(build.invariance_rows(doc)),
                                       "summary"))
        sections.append(render.section(
            "Probes (bitwise, per position)",
            render.table(build.invariance_probe_rows(doc), build.INVARIANCE_HEAD), "probes"))
    elif ld.kind == "run":
        rec = next(iter(ld.records.values()))
        title += f" {rec.get('run_id')}"
        sections.append(render.section("Run", render.table(build.run_rows(rec)), "summary"))
        sections.append(render.section("Engine and what the run read",
                                       render.facts_section(build.inside_rows(rec)), "engine"))
        sections.append(render.section("Outputs and logs",
                                       render.outputs_section(build.output_rows(rec)),
                                       "outputs"))
    elif ld.kind == "sweep":
        title += f" — {doc.get('name') or target}"
        rows = [("spec digest", doc.get("spec_digest", "-")), ("cells", len(doc["cells"])),
                ("reference", doc["reference"]),
                ("flagged by the gate", sum(1 for c in doc["cells"] if c.get("flagged")))]
        sections.append(render.section("Summary", render.table(rows), "summary"))
        sections.append(render.section("Cells against the reference",
                                       render.sweep_section(sweep_matrix(doc)), "sweep"))
    heat = build.heatmap_for(ld)
    if heat:
        data["heatmap"] = heat
        sections.append(render.section("Hidden-state divergence (layer × block digests)",
                                       render.heatmap_section(heat), "heatmap"))
    if ld.kind == "repeat":
        sections.append(render.section(
            "Gate: each repeat against run 0 (nothing declared to vary)",
            render.repeat_gate_section(build.repeat_gate_rows(doc), ld.comparison,
                                       _context_changes(ld)), "comparison"))
    if ld.kind in ("diverge", "comparison"):
        sections.append(render.section(
            "Comparison: declared variables and manifest diff",
            render.comparison_section(ld.comparison, doc.get("comparison"),
                                      _context_changes(ld)), "comparison"))
    if "disclosure" in doc:
        sections.append(render.section(render.disclosure_title(doc["disclosure"]),
                                       render.disclosure_section(doc["disclosure"]),
                                       "disclosure"))
    if isinstance(doc.get("policy"), dict):
        cells = doc.get("cells") if ld.kind == "sweep" else None
        sections.append(render.section(render.policy_title(doc["policy"]),
                                       render.policy_section(doc["policy"], cells), "policy"))
    sb = summaries.sbom_summary(sbom) if sbom else (
        summaries.sbom_summary(p) if (p := summaries.find_beside(ld.path, "sbom*.json"))
        else None)
    au = summaries.audit_summary(audit) if audit else (
        summaries.audit_summary(p) if (p := summaries.find_beside(ld.path, "audit*.json"))
        else None)
    if sb or au:
        sections.append(render.section("SBOM and audit", render.sbom_section(sb, au), "sbom"))
    generated = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return render.page(title, str(target), generated, __version__, sections, data)


def _context_changes(ld) -> list | None:
    """Context (non-identity) differences of the two runs' manifests, when both are stored."""
    if ld.store is None or not ld.comparison:
        return None
    from provenance.model import LeafKind
    from provenance.model.diff import diff_manifests
    from provenance.store import RunRecord

    recs = [ld.records.get(ld.comparison.get(s, {}).get("run_id") or "") for s in ("a", "b")]
    if not all(recs):
        return None
    ma, mb = (ld.store.run_manifest(RunRecord.from_doc(r)) for r in recs)
    return [c for c in diff_manifests(ma, mb).changes if c.kind != LeafKind.IDENTITY]


def write_report(target: str, out: Path, **kw: Any) -> Path:
    """Build, then temp file + fsync + rename: a failed build leaves nothing behind."""
    from provenance.model.atomic import write_atomic

    text = build_report(target, **kw).encode()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text)  # 0666 less the umask, like any file a user asks for
    return out
