"""grid.md / rest.md from grid.json / rest.json (bench/gpu/vllm_grid.py): the grid table and
its gate checks, or the second call's diverge pairs, long context, weight checkpoints and
replay; every cell or step that did not run, with its reason."""

from __future__ import annotations

from typing import Any


def _e(x: Any, pct: bool = False) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{100 * x:.2f} %" if pct else f"{x:.2e}"
    return str(x)


def _resolved(r: dict[str, Any]) -> str:
    ab = r.get("attention_backend") or {}
    kv = r.get("kv_cache_dtype") or {}
    q = r.get("quantization") or {}
    mr = r.get("model_runner") or {}
    if not ab:
        return "-"
    fa = ab.get("flash_attn_version")
    lin = (q.get("linear") or {}).get("kernel")
    return (f"{ab.get('resolved')}{' FA' + fa if fa and fa != 'none' else ''}; KV "
            f"{kv.get('cache_config')} as {kv.get('resolved')}; weights "
            f"{q.get('resolved')}{' (' + lin + ')' if lin and lin != 'none' else ''}; "
            f"runner {mr.get('version')}")


def _repeat(row: dict[str, Any]) -> str:
    v = row.get("repeat") or "-"
    d = row.get("repeat_detail") or {}
    if d.get("block") is not None:
        return f"{v} (run {d.get('run')}, {d.get('layer')} block {d['block']})"
    return v


def grid_table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| weights | backend | KV cache | state | repeat | top-1 agree | first disagree | "
           "KL(ref‖cell) mean / p99 / max | KL(cell‖ref) mean / p99 / max | resolved "
           "(from the engine) | run 0 / run 1 s |", "|" + "---|" * 11]
    for r in rows:
        v, s = r["values"], r.get("summary") or {}
        if r["reference"]:
            figs = ["reference", "-", "-", "-"]
        elif r["state"] != "complete":
            figs = [f"{r['state']}: {r.get('reason') or ''}"[:220], "", "", ""]
        elif r.get("gate") != "passed":
            figs = [f"gate {r.get('gate')}: {', '.join(r.get('flagged') or [])[:200]}", "",
                    "", ""]
        else:
            figs = [_e(s.get("top1_agreement"), pct=True), _e(s.get("first_disagreement")),
                    " / ".join(_e(s.get(f"kl_ref_cand_{k}")) for k in ("mean", "p99", "max")),
                    " / ".join(_e(s.get(f"kl_cand_ref_{k}")) for k in ("mean", "p99", "max"))]
        state = "ran" if r["state"] == "complete" else r["state"]
        out.append(f"| {v.get('quantization')} | {v.get('attention_backend')} | "
                   f"{v.get('kv_cache_dtype')} | {state} | "
                   f"{_repeat(r) if r['state'] == 'complete' else '-'} | " + " | ".join(figs)
                   + f" | {_resolved(r.get('resolved') or {})} | {_secs(r)} |")
    return out


def _secs(row: dict[str, Any]) -> str:
    took = [t for t in row.get("run_seconds") or [] if t is not None]
    return " / ".join(f"{t:.0f}" for t in took) or "-"


def _kl(s: dict[str, Any], key: str) -> str:
    d = s.get(key) or {}
    return " / ".join(_e(d.get(k)) for k in ("mean", "p99", "max"))


def _pair(name: str, d: dict[str, Any]) -> str:
    if "not_run" in d:
        return f"- {name}: not run: {d['not_run']}"
    s = d.get("summary") or {}
    gate = (d.get("comparison") or {}).get("gate")
    head = (f"- {name}: `{d.get('ref')}` vs `{d.get('cand')}`, --vary "
            f"{' '.join(d.get('vary') or []) or '(none)'}: exit {d.get('rc')}, gate {gate}")
    if not s:
        return head + f"; {str(d.get('stderr') or '')[-400:]}"
    return (head + f"; {s.get('positions')} positions; top-1 "
            f"{_e(s.get('top1_agreement'), pct=True)}; first disagreement "
            f"{s.get('first_disagreement')}; KL(ref‖cand) mean / p99 / max "
            f"{_kl(s, 'kl_ref_cand')}; KL(cand‖ref) {_kl(s, 'kl_cand_ref')}; truncated "
            f"positions {s.get('truncated_positions')}; {d.get('seconds')} s")


def render_rest(res: dict[str, Any]) -> list[str]:
    rest = res.get("rest") or {}
    dv = rest.get("diverge") or {}
    lines = ["## `prov run diverge` pairs (full vocabulary)", ""]
    for key in ("backend_pair", "kv_pair"):
        lines.append(_pair(key, dv.get(key) or {"not_run": "not part of this call"}))
    lines += ["", "### `prov compare` of those runs", ""]
    checks = {k: {**v, "runs": v.get("runs") or []} for k, v in (dv.get("compare") or {}).items()}
    lines += _checks(checks) if checks else ["(not run: a diverge above did not complete)"]
    lo = rest.get("long_context") or {"not_run": "not part of this call"}
    lines += ["", "## Longest context (prompt logprobs top-k)", "", _pair("long", lo)]
    for side, r in (lo.get("residual_mass") or {}).items():
        lines.append(f"  - {side}: residual mass outside the stored ids {r}")
    if lo.get("vocabulary"):
        lines.append(f"  - disclosure: {lo['vocabulary']}")
    lines += ["", "## Weight checkpoints (compressed-tensors, runners/checkpoints.py)", ""]
    lines += _checkpoints(rest["wna16"]) if "wna16" in rest else ["not part of this call"]
    rp = rest.get("replay")
    lines += ["", "## Tool-call replay under real KV quantisation (vLLM CUDA, TRITON_ATTN)", ""]
    lines += _replay(rp) if rp is not None else ["not part of this call"]
    return lines


def _checkpoints(wn: dict[str, Any]) -> list[str]:
    ref = wn.get("reference") or {}
    lines = [f"- reference BF16 FLASH_ATTN repeat: {ref.get('verdict')} (exit "
             f"{ref.get('rc')}, {ref.get('seconds')} s)"]
    for name in ("w8a16", "w4a16", "nvfp4a16", "awq"):
        w = wn.get(name) or {"not_run": "not part of this call"}
        if "write" in w or "not_run" in w:
            lines.append(f"- {name}: {str(w)[:400]}")
            continue
        s = w.get("summary") or {}
        q = w.get("quantization") or {}
        lines.append(f"- {name}: repeat {w.get('verdict')} (exit {w.get('rc')}); gate exit "
                     f"{(w.get('gate') or {}).get('rc')} (refused "
                     f"{(w.get('gate') or {}).get('refused')}); vLLM {q.get('resolved')} "
                     f"{(q.get('linear') or {}).get('kernel')}; top-1 "
                     f"{_e(s.get('top1_agreement'), pct=True)}, first disagreement "
                     f"{_e(s.get('first_disagreement'))}, KL(ref‖w) mean / p99 / max "
                     + " / ".join(_e(s.get(f"kl_ref_cand_{k}")) for k in ("mean", "p99", "max"))
                     + f"; KL(w‖ref) mean {_e(s.get('kl_cand_ref_mean'))}"
                     + (f"; error: {str(w.get('stderr'))[-300:]}" if w.get("stderr") else ""))
    return lines


def _replay(rp: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if rp.get("configs"):
        lines += ["| config | KV as the engine holds it | gate | open loop turns | closed loop "
                  "turns | first failure (closed) | recovered |", "|---|---|---|---|---|---|---|"]
        for c in rp["configs"]:
            kv = c.get("kv_cache") or {}
            cl, ol = c.get("closed_loop") or {}, c.get("open_loop") or {}
            gate = c.get("gate")
            gate = gate.get("gate") if isinstance(gate, dict) else gate
            lines.append(f"| `{c.get('config')}` | {kv.get('cache_config')} as "
                         f"{kv.get('resolved')} | {gate} | {', '.join(ol.get('turns') or [])} | "
                         f"{', '.join(cl.get('turns') or [])} | {cl.get('first_failure')} | "
                         f"{cl.get('recovered')} |")
    else:
        lines.append(f"not complete: {str(rp)[:800]}")
    return lines


def _checks(checks: dict[str, Any]) -> list[str]:
    out = ["| check | runs | --vary | exit | expected | as expected | refused keys |",
           "|---|---|---|---|---|---|---|"]
    for name, c in checks.items():
        if "evidence" in c:
            continue
        if "not_run" in c:
            out.append(f"| {name} | - | - | - | - | not run: {c['not_run']} | - |")
            continue
        refused = ", ".join(c.get("refused") or [])[:300] or "-"
        out.append(f"| {name} | {' vs '.join(c['runs'])} | {' '.join(c['vary']) or '-'} | "
                   f"{c['rc']} | {c['expected_rc']} | {c['as_expected']} | {refused} |")
    return out


def render(res: dict[str, Any]) -> str:
    st = res.get("steps", {})
    lines = [f"# vLLM grid, part {res.get('part')} ({res.get('device')}), {res.get('started')}",
             "", f"Environment: {res.get('env')}. Whole call: {res.get('seconds')} s.", ""]
    if res.get("part") == "rest":
        lines += render_rest(res) + ["", "## Steps", ""]
        lines += [f"- {k}: {({x: y for x, y in v.items() if x in ('rc', 'seconds')})}"
                  for k, v in st.items()]
        return "\n".join(lines) + "\n"
    lines += ["## Grid (one `prov sweep`; every cell vs BF16 weights + FLASH_ATTN + auto KV)",
              ""]
    lines += grid_table(res.get("grid") or []) or ["(no grid: see the sweep step below)"]
    lines += ["", "## Gate checks (`prov compare` on the sweep's runs)", ""]
    lines += _checks(st.get("gates") or {})
    ev = (st.get("gates") or {}).get("evidence_reference_runs", {}).get("evidence") or {}
    for run, e in ev.items():
        lines.append(f"- reference run {run}: torch fp32 precision flags as recorded "
                     f"{e.get('fp32_precision')}")
    lines += ["", "## Not in the grid", ""]
    lines += [f"- {k}: {v}" for k, v in (res.get("not_in_grid") or {}).items()]
    lines += ["", "## Steps", ""]
    for k, v in st.items():
        if not isinstance(v, dict):  # flagged_keys: a list
            lines.append(f"- {k}: {v}")
            continue
        if k == "gates":
            continue
        short = {x: y for x, y in v.items() if x in ("rc", "seconds", "not_run", "budget_s",
                                                       "bytes", "verdict", "jobs", "declared",
                                                       "cells_reused")}
        lines.append(f"- {k}: {short}")
    return "\n".join(lines) + "\n"
