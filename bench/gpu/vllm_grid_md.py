"""grid.md from grid.json (bench/gpu/vllm_grid.py): the grid table, the gate checks, the #17
checks, and every cell or step that did not run with its reason."""

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
           "(from the engine) | s |", "|" + "---|" * 11]
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
                   + f" | {_resolved(r.get('resolved') or {})} | {_e(r.get('seconds'))} |")
    return out


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
    lines = [f"# vLLM grid ({res.get('device')}), {res.get('started')}", "",
             f"Environment: {res.get('env')}. Whole call: {res.get('seconds')} s.", "",
             "## Grid (one `prov sweep`; every cell vs BF16 weights + FLASH_ATTN + auto KV)", ""]
    lines += grid_table(res.get("grid") or []) or ["(no grid: see the sweep step below)"]
    lines += ["", "## Gate checks (`prov compare` on the sweep's runs)", ""]
    lines += _checks(st.get("gates") or {})
    ev = (st.get("gates") or {}).get("evidence_reference_runs", {}).get("evidence") or {}
    for run, e in ev.items():
        lines.append(f"- reference run {run}: torch fp32 precision flags as recorded "
                     f"{e.get('fp32_precision')}")
    d = st.get("diverge") or {}
    lines += ["", "## `prov run diverge` FLASH_ATTN vs TRITON_ATTN, --vary attention-backend",
              "", f"{d}"[:1500], "", "## #17 on the GPU", ""]
    for key in ("exec_libraries", "exec_sdpa"):
        v = st.get(key) or {"not_run": "not part of this run"}
        lines.append(f"- {key}: {({k: x for k, x in v.items() if k != 'stderr'})}"[:1500])
    lines += ["", "## Weight checkpoints (compressed-tensors, written by runners/checkpoints.py)",
              ""]
    for name, w in (st.get("wna16") or {}).items():
        if "not_run" in w:
            lines.append(f"- {name}: not run: {w['not_run']}")
            continue
        if "write" in w:
            lines.append(f"- {name}: checkpoint not written: {str(w['write'])[-400:]}")
            continue
        s = w.get("summary") or {}
        lines.append(f"- {name}: repeat {w.get('verdict')} (exit {w.get('repeat_rc')}); gate "
                     f"{(w.get('gate') or {}).get('rc')} with --vary weights --vary "
                     f"quantization; quantization {w.get('quantization')}; top-1 "
                     f"{_e(s.get('top1_agreement'), pct=True)}, first disagreement "
                     f"{_e(s.get('first_disagreement'))}, KL(ref‖cell) mean "
                     f"{_e(s.get('kl_ref_cand_mean'))} p99 {_e(s.get('kl_ref_cand_p99'))} max "
                     f"{_e(s.get('kl_ref_cand_max'))}; KL(cell‖ref) mean "
                     f"{_e(s.get('kl_cand_ref_mean'))}"
                     + (f"; error: {str(w.get('stderr'))[-300:]}" if w.get("stderr") else ""))
    lines += ["", "## Not in the grid", ""]
    lines += [f"- {k}: {v}" for k, v in (res.get("not_in_grid") or {}).items()]
    lines += ["", "## Steps", ""]
    for k, v in st.items():
        if k in ("gates",):
            continue
        short = {x: y for x, y in v.items() if x in ("rc", "seconds", "not_run", "budget_s",
                                                       "bytes", "verdict")}
        lines.append(f"- {k}: {short}")
    return "\n".join(lines) + "\n"
