"""The page: one HTML file with its CSS, script and data inline; nothing is fetched.

The markup lives in jinja2 templates (`templates/`, autoescape on); the functions here
compute what each template shows and return its HTML as `Markup`.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup, escape

from provenance.model.disclosure import ITEMS, DisclosureError, LegacyCard, read_card


def _written(v: Any) -> Any:
    """What a template writes for a value: strings as they are (escaped by jinja2), anything
    else as JSON (`null`, `true`, `[1, 2]`), as the report has always written them."""
    if isinstance(v, str | jinja2.Undefined):
        return v
    return json.dumps(v, sort_keys=True)


@cache
def env() -> jinja2.Environment:
    class _CompactLoader(jinja2.PackageLoader):
        """Templates are indented for reading; their line breaks and the indentation after
        each are dropped, so the page is one line of HTML (templates/README.md)."""

        def get_source(self, environment, template):
            source, path, uptodate = super().get_source(environment, template)
            return re.sub(r"\n\s*", "", source), path, uptodate

    return jinja2.Environment(loader=_CompactLoader("provenance.report", "templates"),
                              autoescape=True, finalize=_written)


def html(template: str, **values: Any) -> Markup:
    """A template rendered with `values`, as markup (already escaped)."""
    return Markup(env().get_template(template).render(**values))


def _macro(name: str):
    return getattr(env().get_template("macros.html").module, name)


def esc(v: Any) -> str:
    """One value escaped as the templates write it (for text built outside a template)."""
    return str(escape(_written(v)))


def asset(name: str) -> str:
    return resources.files("provenance.report").joinpath("assets", name).read_text()


def table(rows: list[tuple[Any, ...]], head: tuple[str, ...] | None = None,
          cls: str = "") -> str:
    return _macro("table")(rows, head, cls)


def section(title: str, body: str, sid: str) -> str:
    return _macro("section")(title, body, sid)


def series_section(s: dict[str, Any]) -> str:
    note = (f"{s['n']} positions; KL drawn from {len(s['kl']['x'])} points (each bucket's "
            "minimum and maximum kept, so no peak is lost)" if s["downsampled"] else
            f"{s['n']} positions, every one drawn")
    marks = f"{s['marks_total']} disagreements" + (
        f" (first {len(s['marks'])} marked)" if len(s["marks"]) < s["marks_total"] else "")
    return html("series.html", note=note, marks=marks, kl_floor=f"{s['kl_floor']:.0e}",
                bucket=s["rate"]["bucket"])


def text_section(source: str, text: str, clusters: list[dict], limit: int = 50) -> str:
    """The highlighted text, where it came from, and the first `limit` clusters; with a
    segment column when the text had segments."""
    seg = any("segment_type" in c for c in clusters)
    rows = [(f"{c['start']}–{c['end']}", c["disagreements"], f"{c['mean_kl']:.2e}",
             *((c.get("segment_type", ""),) if seg else ()),
             c.get("text", "")[:40], c.get("context", "")[:90]) for c in clusters[:limit]]
    head = ("positions", "disagreements", "mean KL", *(("segment",) if seg else ()), "tokens",
            "in context")
    return html("text_section.html", source=source, text=text, clusters=rows,
                clusters_head=head, more=max(len(clusters) - limit, 0))


def segments_table(segments: dict[str, Any]) -> str:
    """Per text segment type: positions, disagreements (rate), mean KL, clusters starting
    there."""
    rows = [(t, v["positions"], f"{v['disagreements']} ({v['disagreement_rate']:.3%})",
             f"{v['mean_kl_ref_cand']:.3e}", v["clusters"])
            for t, v in sorted(segments["by_type"].items(),
                               key=lambda kv: -kv[1]["disagreement_rate"])]
    return html("segments.html", count=segments["count"], rows=rows)


def heatmap_section(heat: dict[str, Any]) -> str:
    return html("heatmap.html", heat=heat)


def facts_section(rows: list[tuple[str, str]]) -> str:
    return html("facts.html", rows=rows)


def outputs_section(rows: list[tuple[str, str, str, str]]) -> str:
    return html("outputs.html", rows=rows)


def comparison_section(rec: dict[str, Any] | None, inline: dict[str, Any] | None,
                       context_changes: list | None) -> str:
    sides = diff = inline_rows = None
    if rec is not None:
        sides = [(s.upper(), d.get("run_id") or d.get("ref"), d.get("name", ""),
                  d.get("manifest_digest")) for s, d in ((s, rec.get(s, {})) for s in "ab")]
        diff = []
        for spec, v in (rec.get("varied") or {}).items():
            diff += [(f"--vary {spec}", key, *_sides(ch)) for key, ch in
                     (v.get("keys") or {}).items()]
        diff += [("ignored", key, *_sides(ch)) for key, ch in (rec.get("ignored") or {}).items()]
        diff += [("REFUSED", key, *_sides(ch)) for key, ch in (rec.get("refused") or {}).items()]
    elif inline:
        inline_rows = [(spec, k) for spec, keys in (inline.get("varied_keys") or {}).items()
                       for k in keys]
    context = [(c.key, c.change, c.a, c.b) for c in context_changes or []]
    return html("comparison.html", rec=rec, inline=inline, sides=sides, diff=diff,
                vary=(rec or {}).get("vary") or [], inline_rows=inline_rows, context=context)


def repeat_gate_section(rows: list[tuple[str, str, str, str]], rec: dict[str, Any] | None,
                        context_changes: list | None) -> str:
    """Each repeat's gate; then the first pair's stored comparison record, when found."""
    detail = comparison_section(rec, None, context_changes) if rec is not None else None
    return html("repeat_gate.html", rows=rows, detail=detail)


def _sides(ch: dict[str, Any]) -> tuple[Any, Any, Any]:
    change = ch.get("change")
    return (change, "(absent)" if change == "added" else ch.get("a"),
            "(absent)" if change == "removed" else ch.get("b"))


def _not_strict(card: dict[str, Any]) -> list[str] | None:
    """None for a strict card; else the items that are not (a legacy card)."""
    try:
        read = read_card(card)
    except DisclosureError as exc:
        return [str(exc)]
    return list(read.problems) if isinstance(read, LegacyCard) else None


def disclosure_title(card: dict[str, Any]) -> str:
    return "Disclosure card" if _not_strict(card) is None else \
        "Disclosure card (legacy: free text, not checked)"


def _item_text(v: Any) -> Any:
    if isinstance(v, dict) and len(v) == 1 and ("not_applicable" in v or "none" in v):
        key = next(iter(v))
        return f"{key.replace('_', ' ')}: {v[key]}"
    return v


def disclosure_section(card: dict[str, Any]) -> str:
    rows = [(k.replace("_", " "), _item_text(card[k])) for k in ITEMS if k in card]
    return html("disclosure.html", rows=rows, legacy=_not_strict(card))


POLICY_HEAD = ("statistic", "condition", "observed", "outcome", "reason")


def policy_title(block: dict[str, Any]) -> str:
    return f"Acceptance policy: {block.get('verdict', '-')}"


def policy_section(block: dict[str, Any], cells: list[dict[str, Any]] | None = None) -> str:
    """The policy's file and digest, then each check as recorded (a sweep: each cell's
    verdict); the verdict is the policy's, separate from the gate's comparability."""
    if cells is not None:
        rows = [(c.get("label", "-"), c["policy"]["verdict"], "; ".join(
                    f"{k['statistic']} {k['outcome']}" for k in c["policy"]["checks"]
                    if k["outcome"] != "pass") or "-")
                for c in cells if "policy" in c]
        return html("policy.html", block=block, rows=rows,
                    head=("cell", "verdict", "checks not passed"))
    rows = [(c["statistic"], _condition(c), "-" if c.get("observed") is None else c["observed"],
             c["outcome"].replace("_", " "), c.get("reason") or c.get("note") or "")
            for c in block.get("checks", [])]
    return html("policy.html", block=block, rows=rows, head=POLICY_HEAD)


def _condition(check: dict[str, Any]) -> str:
    parts = [f"{k} {check[k]!r}" for k in ("min", "max", "equals", "one_of") if k in check]
    return ", ".join(parts) or "-"


def sbom_section(sbom: dict | None, audit: dict | None) -> str:
    sbom_rows = audit_rows = findings = None
    if sbom:
        types = ", ".join(f"{k}: {v}" for k, v in sbom["by_type"].items())
        sbom_rows = [("SBOM", sbom["file"]), ("subject", sbom.get("subject") or "-"),
                     ("CycloneDX", sbom.get("spec_version")),
                     ("components", f"{sbom['components']} ({types})"),
                     ("serial", sbom.get("serial") or "-")]
    if audit:
        audit_rows = [("audit", audit["file"]), ("backend", audit.get("backend")),
                      ("packages", audit.get("packages")), ("audited", audit.get("audited")),
                      ("not audited", audit.get("not_audited")),
                      ("findings", len(audit["findings"]))]
        findings = [(f["name"], f["version"], f["id"], ", ".join(f.get("fix_versions") or []))
                    for f in audit["findings"]]
    return html("sbom.html", sbom=sbom_rows, audit=audit_rows, findings=findings)


def sweep_section(m: dict[str, Any]) -> str:
    rows = [{"value": row["value"],
             "cells": [None if c is None else _sweep_cell(c, m["reference"])
                       for c in row["cells"]]} for row in m["rows"]]
    return html("sweep.html", m=m, rows=rows)


def _sweep_cell(c: dict[str, Any], reference: str) -> dict[str, Any]:
    """A cell's class and the lines under its id and status, each a plain string."""
    is_ref = c["id"] == reference
    cls = ["num", *(["cell-ref"] if is_ref else []), *(["cell-flag"] if c.get("flagged") else [])]
    lines = ["reference"] if is_ref else []
    if c.get("top1_agreement") is not None:
        lines.append(f"agree {c['top1_agreement']:.4%}")
    if c.get("kl_mean") is not None:
        lines.append(f"KL {c['kl_mean']:.2e} (max {c.get('kl_max') or 0:.1e})")
    if c.get("kl_rev_mean") is not None:
        lines.append(f"KL(cell‖ref) {c['kl_rev_mean']:.2e} (p99 {c.get('kl_rev_p99') or 0:.1e})")
    if c.get("first_disagreement") is not None:
        lines.append(f"first disagreement at {c['first_disagreement']}")
    for key, label in (("resolved", "ran "), ("reason", ""), ("repeat", "repeat: "),
                       ("invariance", "invariance: "), ("node", "node ")):
        if c.get(key):
            lines.append(label + _written(c[key])[:300 if key == "reason" else None])
    if c.get("flagged"):
        lines.append("FLAGGED: " + ", ".join(c.get("flag_keys") or []))
    return {"id": c["id"], "status": c.get("status", ""), "cls": " ".join(cls), "lines": lines}


def page(title: str, target: str, generated: str, version: str, sections: list[str],
         data: dict[str, Any]) -> str:
    blob = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return str(html("page.html", title=title, target=target, generated=generated,
                    version=version, sections=sections, data=Markup(blob),
                    css=Markup(asset("report.css")), js=Markup(asset("report.js"))))
