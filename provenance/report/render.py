"""The page: one HTML file with its CSS, script and data inline; nothing is fetched."""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

from provenance.model.disclosure import ITEMS, DisclosureError, LegacyCard, read_card


def esc(v: Any) -> str:
    return html.escape(v if isinstance(v, str) else json.dumps(v, sort_keys=True))


def asset(name: str) -> str:
    return resources.files("provenance.report").joinpath("assets", name).read_text()


def table(rows: list[tuple[Any, ...]], head: tuple[str, ...] | None = None,
          cls: str = "") -> str:
    out = [f'<table class="{cls}">']
    if head:
        out.append("<tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>")
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>")
    return "".join(out) + "</table>"


def section(title: str, body: str, sid: str) -> str:
    return f'<section id="{sid}"><h2>{esc(title)}</h2>{body}</section>'


def series_section(s: dict[str, Any]) -> str:
    note = (f"{s['n']} positions; KL drawn from {len(s['kl']['x'])} points (each bucket's "
            "minimum and maximum kept, so no peak is lost)" if s["downsampled"] else
            f"{s['n']} positions, every one drawn")
    marks = f"{s['marks_total']} disagreements" + (
        f" (first {len(s['marks'])} marked)" if len(s["marks"]) < s["marks_total"] else "")
    return (f'<p class="hint">{esc(note)}; red ticks: {esc(marks)}; KL ≤ {s["kl_floor"]:.0e} '
            "drawn on the floor. Drag to zoom, wheel to zoom, double-click to reset "
            "(both plots move together).</p>"
            '<div class="plot" id="plot-kl"></div>'
            f'<p class="hint">top-1 disagreement rate per bucket of {s["rate"]["bucket"]} '
            "position(s)</p>"
            '<div class="plot" id="plot-dis"></div>')


def clusters_table(clusters: list[dict], limit: int = 50) -> str:
    """The first `limit` clusters; with a segment column when the text had segments."""
    seg = any("segment_type" in c for c in clusters)
    rows = [(f"{c['start']}–{c['end']}", c["disagreements"], f"{c['mean_kl']:.2e}",
             *((c.get("segment_type", ""),) if seg else ()),
             c.get("text", "")[:40], c.get("context", "")[:90]) for c in clusters[:limit]]
    more = f"<p class='hint'>… {len(clusters) - limit} more</p>" if len(clusters) > limit else ""
    head = ("positions", "disagreements", "mean KL", *(("segment",) if seg else ()), "tokens",
            "in context")
    return table(rows, head) + more


def segments_table(segments: dict[str, Any]) -> str:
    """Per text segment type: positions, disagreements (rate), mean KL, clusters starting
    there."""
    rows = [(t, v["positions"], f"{v['disagreements']} ({v['disagreement_rate']:.3%})",
             f"{v['mean_kl_ref_cand']:.3e}", v["clusters"])
            for t, v in sorted(segments["by_type"].items(),
                               key=lambda kv: -kv[1]["disagreement_rate"])]
    return (f"<p class='hint'>{segments['count']} segments of the text "
            "(TEXT.segments.json); a position belongs to the segment of the token it "
            "predicts.</p>" + table(rows, ("segment type", "positions", "disagreements (rate)",
                                          "mean KL(ref‖cand)", "clusters")))


def comparison_section(rec: dict[str, Any] | None, inline: dict[str, Any] | None,
                       context_changes: list | None) -> str:
    if rec is None and not inline:
        return "<p>No comparison record (the runs were not gated).</p>"
    parts = []
    if rec is not None:
        sides = [(s, rec.get(s, {})) for s in ("a", "b")]
        parts.append(table([(s.upper(), d.get("run_id") or d.get("ref"), d.get("name", ""),
                             d.get("manifest_digest")) for s, d in sides],
                           ("side", "run / ref", "name", "identity digest")))
        vary = rec.get("vary") or []
        parts.append(f"<p><b>declared variables</b> (--vary): "
                     f"{esc(', '.join(vary) or '(none)')} · verdict: "
                     f"{'comparable' if rec.get('comparable') else 'refused'}"
                     f"{' (identical identity)' if rec.get('identical') else ''}</p>")
        rows = []
        for spec, v in (rec.get("varied") or {}).items():
            rows += [(f"--vary {spec}", key, *_sides(ch)) for key, ch in
                     (v.get("keys") or {}).items()]
        rows += [("ignored", key, *_sides(ch)) for key, ch in (rec.get("ignored") or {}).items()]
        rows += [("REFUSED", key, *_sides(ch)) for key, ch in (rec.get("refused") or {}).items()]
        parts.append("<p><b>manifest diff (identity keys)</b></p>" + (
            table(rows, ("covered by", "key", "change", "A", "B"), "diff") if rows
            else "<p>no identity key differs</p>"))
        if rec.get("unused_vary"):
            parts.append(f"<p class='hint'>--vary that covered nothing: "
                         f"{esc(', '.join(rec['unused_vary']))}</p>")
    elif inline:
        parts.append(f"<p><b>declared variables</b>: {esc(', '.join(inline.get('vary') or []))}"
                     f" · gate: {esc(inline.get('gate', '?'))} (comparison record "
                     f"{esc(inline.get('comparison_record', '-'))} not in any store found)</p>")
        rows = [(spec, k) for spec, keys in (inline.get("varied_keys") or {}).items()
                for k in keys]
        parts.append(table(rows, ("--vary", "key")))
    if context_changes:
        rows = [(c.key, c.change, c.a, c.b) for c in context_changes]
        parts.append(f"<details><summary>{len(rows)} context key(s) differ (not numerics-"
                     f"relevant)</summary>{table(rows, ('key', 'change', 'A', 'B'))}</details>")
    return "".join(parts)


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
    legacy = _not_strict(card)
    note = "" if legacy is None else (
        "<p class='hint'>A legacy card: written before prov's typed card, its items are "
        "free text, shown as written and not checked; <code>prov publish</code> refuses it. "
        f"Not strict: {esc('; '.join(legacy))}</p>")
    return note + table(rows, ("item", "disclosed"), "card")


POLICY_HEAD = ("statistic", "condition", "observed", "outcome", "reason")


def policy_title(block: dict[str, Any]) -> str:
    return f"Acceptance policy: {block.get('verdict', '-')}"


def policy_section(block: dict[str, Any], cells: list[dict[str, Any]] | None = None) -> str:
    """The policy's file and digest, then each check as recorded (a sweep: each cell's
    verdict); the verdict is the policy's, separate from the gate's comparability."""
    where = (f"<p class='hint'>Policy <code>{esc(block.get('path', '-'))}</code> (sha256 "
             f"<code>{esc(block.get('sha256', '-'))}</code>). The verdict judges the "
             "statistics against the policy's thresholds; comparability is the gate's.</p>")
    if cells is not None:
        rows = [(c.get("label", "-"), c["policy"]["verdict"], "; ".join(
                    f"{k['statistic']} {k['outcome']}" for k in c["policy"]["checks"]
                    if k["outcome"] != "pass") or "-")
                for c in cells if "policy" in c]
        return where + table(rows, ("cell", "verdict", "checks not passed"), "policy")
    rows = [(c["statistic"], _condition(c), "-" if c.get("observed") is None else c["observed"],
             c["outcome"].replace("_", " "), c.get("reason") or c.get("note") or "")
            for c in block.get("checks", [])]
    return where + table(rows, POLICY_HEAD, "policy")


def _condition(check: dict[str, Any]) -> str:
    parts = [f"{k} {check[k]!r}" for k in ("min", "max", "equals", "one_of") if k in check]
    return ", ".join(parts) or "-"


def sbom_section(sbom: dict | None, audit: dict | None) -> str:
    parts = []
    if sbom:
        types = ", ".join(f"{k}: {v}" for k, v in sbom["by_type"].items())
        parts.append(table([("SBOM", sbom["file"]), ("subject", sbom.get("subject") or "-"),
                            ("CycloneDX", sbom.get("spec_version")),
                            ("components", f"{sbom['components']} ({types})"),
                            ("serial", sbom.get("serial") or "-")]))
    if audit:
        head = table([("audit", audit["file"]), ("backend", audit.get("backend")),
                      ("packages", audit.get("packages")), ("audited", audit.get("audited")),
                      ("not audited", audit.get("not_audited")),
                      ("findings", len(audit["findings"]))])
        rows = [(f["name"], f["version"], f["id"], ", ".join(f.get("fix_versions") or []))
                for f in audit["findings"]]
        parts.append(head + (table(rows, ("package", "version", "id", "fixed in"))
                             if rows else ""))
    return "".join(parts)


def sweep_section(m: dict[str, Any]) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in m["columns"])
    out = [f"<table class='sweep'><tr><th>{esc(m['row_axis'])} \\ "
           f"{esc(', '.join(m['col_axes']) or '')}</th>{head}</tr>"]
    for row in m["rows"]:
        out.append(f"<tr><th>{esc(row['value'])}</th>")
        for c in row["cells"]:
            if c is None:
                out.append("<td class='cell-missing'>(no cell)</td>")
                continue
            cls = ["num"]
            if c["id"] == m["reference"]:
                cls.append("cell-ref")
            if c.get("flagged"):
                cls.append("cell-flag")
            lines = [f"<b>{esc(c['id'])}</b> {esc(c.get('status', ''))}"]
            if c["id"] == m["reference"]:
                lines.append("reference")
            if c.get("top1_agreement") is not None:
                lines.append(f"agree {c['top1_agreement']:.4%}")
            if c.get("kl_mean") is not None:
                lines.append(f"KL {c['kl_mean']:.2e} (max {c.get('kl_max') or 0:.1e})")
            if c.get("kl_rev_mean") is not None:
                lines.append(f"KL(cell‖ref) {c['kl_rev_mean']:.2e} "
                             f"(p99 {c.get('kl_rev_p99') or 0:.1e})")
            if c.get("first_disagreement") is not None:
                lines.append(f"first disagreement at {c['first_disagreement']}")
            if c.get("resolved"):
                lines.append(f"ran {esc(c['resolved'])}")
            if c.get("reason"):
                lines.append(esc(str(c["reason"])[:300]))
            if c.get("repeat"):
                lines.append(f"repeat: {esc(c['repeat'])}")
            if c.get("invariance"):
                lines.append(f"invariance: {esc(c['invariance'])}")
            if c.get("node"):
                lines.append(f"node {esc(c['node'])}")
            if c.get("flagged"):
                lines.append("FLAGGED: " + esc(", ".join(c.get("flag_keys") or [])))
            out.append(f"<td class='{' '.join(cls)}'>{'<br>'.join(lines)}</td>")
        out.append("</tr>")
    return "".join(out) + "</table>"


def page(title: str, meta: str, sections: list[str], data: dict[str, Any]) -> str:
    blob = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
            "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">"
            f"<title>{esc(title)}</title><style>{asset('report.css')}</style></head><body>"
            f"<h1>{esc(title)}</h1><p class='meta'>{meta}</p>{''.join(sections)}"
            f"<script type='application/json' id='prov-data'>{blob}</script>"
            f"<script>{asset('report.js')}</script></body></html>")
