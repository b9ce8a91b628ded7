"""The markdown page of bench/gpu/invariance.py's JSON."""

from __future__ import annotations

from typing import Any


def _first(p: dict[str, Any] | None) -> str:
    f = (p or {}).get("first_difference")
    return f"{f['pair']}: {f['where']} {f['position']}" if f else "-"


def _invariance(res: dict[str, Any]) -> list[str]:
    rows = res.get("invariance") or {}
    out = ["## Invariance probes", "", "| configuration | verdict | control | run-to-run | "
           "needle | batch 1 vs N | prefix cache | chunked prefill | served 1 vs 16 | tok/s |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for key, r in rows.items():
        if "verdict" not in r:
            out.append(f"| {key} | not run: {str(r.get('error'))[:120]!r} |||||||")
            continue
        cells = []
        for probe in ("run_to_run", "needle", "batch_size", "prefix_cache", "chunked_prefill",
                      "served"):
            p = r["probes"].get(probe)
            cells.append("n/a" if p is None else "identical" if p["identical"] else
                         f"differs ({_first(p)}; max {p['max_abs_logprob_diff']:.2e})")
        c = r["control"]
        ctl = "differed" if c["failed_as_required"] else "did NOT differ"
        tput = r["throughput"].get("tokens_per_s")
        rate = f"{tput:.0f}" if tput else "-"
        out.append(f"| {key} | **{r['verdict']}** | {ctl} | " + " | ".join(cells)
                   + f" | {rate} |")
    return out


def render(res: dict[str, Any]) -> str:
    lines = [f"# Batch invariance ({res.get('part')}), {res.get('device')}", "",
             f"started {res.get('started')}, {res.get('seconds')} s; env {res.get('env')}",
             f"sizes {res.get('sizes')}", ""]
    if res.get("cpu_standin"):
        lines += [f"> {res['cpu_standin']}", ""]
    model = (res.get("steps") or {}).get("model")
    if model:
        lines += [f"model: {model.get('weights', '')}: {model.get('model')}", ""]
    if res.get("invariance"):
        lines += _invariance(res) + [""]
    for b, t in (res.get("throughput_ratio") or {}).items():
        ratio = t.get("bi1_over_bi0")
        lines.append(f"- throughput {b}: bi1/bi0 = {ratio:.3f}" if ratio else
                     f"- throughput {b}: not measured")
    for b, g in (res.get("gate") or {}).items():
        lines.append(f"- prov compare {b} bi0 vs bi1: undeclared rc "
                     f"{g['undeclared']['rc']} (refused keys: {len(g['undeclared']['refused'])}),"
                     f" declared rc {g['declared']['rc']}"
                     + (f"; also differed: {g['also_differed']}" if g.get("also_differed")
                        else "") + f"; refused unless declared: {g['refused_unless_declared']}")
    if res.get("served"):
        lines += ["", "## Through `vllm serve` (16 concurrent clients)", "",
                  f"Model runner: {res['served'].get('runner')}", "",
                  "| setting | verdict | control | run-to-run | needle | served 1 vs 16 | "
                  "server run |", "|---|---|---|---|---|---|---|"]
        for name, st in (res["served"].get("settings") or {}).items():
            p = st.get("probe") or {}
            if "verdict" not in p:
                why = st.get("not_run") or st.get("failed") or p.get("error")
                lines.append(f"| {name} | not run: {str(why)[-160:]!r} ||||||")
                continue
            cells = [("identical" if q["identical"] else f"differs ({_first(q)})")
                     if (q := p["probes"].get(k)) else "n/a"
                     for k in ("run_to_run", "needle", "served")]
            ctl = "differed" if p["control"]["failed_as_required"] else "did NOT differ"
            lines.append(f"| {name} | **{p['verdict']}** | {ctl} | " + " | ".join(cells)
                         + f" | {(p.get('server') or {}).get('run_id')} |")
        lines.append("")
    if res.get("report"):
        lines.append(f"- prov report: {res['report']}")
    if res.get("big"):
        lines += ["", "## ~27B dummy-weight shape", "",
                  "Dummy weights: agreement figures say nothing about model quality.", ""]
        lines += [f"- {k}: {v}" for k, v in res["big"].items()]
    return "\n".join(lines) + "\n"
