"""The sections of a report page: one builder per kind of result, then the sections every
kind may carry (heatmap, gate, disclosure, policy, SBOM and audit), in the page's order.

Each kind's builder returns the title's suffix and its sections and may add to the page's
embedded data (`data`); build_report puts them together. numpy comes with report.build.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from provenance.report import build, render, summaries
from provenance.report.sweep import sweep_matrix

TITLES = {"diverge": "divergence", "repeat": "repeatability", "comparison": "comparison",
          "run": "run", "sweep": "sweep", "invariance": "batch invariance"}

Sections = tuple[str, list[str]]


def _pair(ld, data: dict[str, Any], model: Path | None, target: str) -> Sections:
    """A divergence, or a comparison that carries per-position arrays."""
    doc = ld.doc
    sections = [render.section("Summary", render.table(build.diverge_rows(doc)), "summary")]
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
    return (f" — {build.spec(doc['engines'][0])} vs {build.spec(doc['engines'][1])}",
            sections)


def _repeat(ld, data: dict[str, Any], model: Path | None, target: str) -> Sections:
    doc = ld.doc
    return (f" — {build.spec(doc['engines'][0])} × {len(doc.get('runs') or [])}",
            [render.section("Summary", render.table(build.repeat_rows(doc)), "summary")])


def _invariance(ld, data: dict[str, Any], model: Path | None, target: str) -> Sections:
    doc = ld.doc
    return (f" — {build.spec(doc['engines'][0])}: {doc['summary']['verdict']}",
            [render.section("Summary", render.table(build.invariance_rows(doc)), "summary"),
             render.section("Probes (bitwise, per position)",
                            render.table(build.invariance_probe_rows(doc),
                                         build.INVARIANCE_HEAD), "probes")])


def _run(ld, data: dict[str, Any], model: Path | None, target: str) -> Sections:
    rec = next(iter(ld.records.values()))
    return (f" {rec.get('run_id')}",
            [render.section("Run", render.table(build.run_rows(rec)), "summary"),
             render.section("Engine and what the run read",
                            render.facts_section(build.inside_rows(rec)), "engine"),
             render.section("Outputs and logs", render.outputs_section(build.output_rows(rec)),
                            "outputs")])


def _sweep(ld, data: dict[str, Any], model: Path | None, target: str) -> Sections:
    doc = ld.doc
    rows = [("spec digest", doc.get("spec_digest", "-")), ("cells", len(doc["cells"])),
            ("reference", doc["reference"]),
            ("flagged by the gate", sum(1 for c in doc["cells"] if c.get("flagged")))]
    return (f" — {doc.get('name') or target}",
            [render.section("Summary", render.table(rows), "summary"),
             render.section("Cells against the reference",
                            render.sweep_section(sweep_matrix(doc)), "sweep")])


_BY_KIND: dict[str, Callable[..., Sections]] = {
    "diverge": _pair, "repeat": _repeat, "invariance": _invariance, "run": _run,
    "sweep": _sweep}


def kind_sections(ld, data: dict[str, Any], model: Path | None, target: str) -> Sections:
    """The title's suffix and the sections of this kind of result (a comparison without
    per-position arrays has none of its own: only the sections every kind may carry)."""
    kind = "diverge" if ld.kind == "comparison" and ld.arrays else ld.kind
    builder = _BY_KIND.get(kind)
    return builder(ld, data, model, target) if builder else ("", [])


def common_sections(ld, data: dict[str, Any], sbom: Path | None,
                    audit: Path | None) -> list[str]:
    """What any kind may carry: hidden-state heatmap, the gate, disclosure, policy, SBOM."""
    sections: list[str] = []
    heat = build.heatmap_for(ld)
    if heat:
        data["heatmap"] = heat
        sections.append(render.section("Hidden-state divergence (layer × block digests)",
                                       render.heatmap_section(heat), "heatmap"))
    sections += _gate_sections(ld)
    doc = ld.doc
    if "disclosure" in doc:
        sections.append(render.section(render.disclosure_title(doc["disclosure"]),
                                       render.disclosure_section(doc["disclosure"]),
                                       "disclosure"))
    if isinstance(doc.get("policy"), dict):
        cells = doc.get("cells") if ld.kind == "sweep" else None
        sections.append(render.section(render.policy_title(doc["policy"]),
                                       render.policy_section(doc["policy"], cells), "policy"))
    sb = _beside(summaries.sbom_summary, sbom, ld.path, "sbom*.json")
    au = _beside(summaries.audit_summary, audit, ld.path, "audit*.json")
    if sb or au:
        sections.append(render.section("SBOM and audit", render.sbom_section(sb, au), "sbom"))
    return sections


def _gate_sections(ld) -> list[str]:
    if ld.kind == "repeat":
        return [render.section(
            "Gate: each repeat against run 0 (nothing declared to vary)",
            render.repeat_gate_section(build.repeat_gate_rows(ld.doc), ld.comparison,
                                       _context_changes(ld)), "comparison")]
    if ld.kind in ("diverge", "comparison"):
        return [render.section(
            "Comparison: declared variables and manifest diff",
            render.comparison_section(ld.comparison, ld.doc.get("comparison"),
                                      _context_changes(ld)), "comparison")]
    return []


def _beside(summary: Callable[[Path], Any], given: Path | None, result: Path,
            pattern: str) -> Any:
    """The summary of the file given, else of one found beside the result, else None."""
    path = given or summaries.find_beside(result, pattern)
    return summary(path) if path else None


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
