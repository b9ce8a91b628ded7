"""Loaded target -> the page's data: summary rows, series, heatmap, tables, text.

Everything numeric the page plots goes into one JSON document embedded in the page;
the highlighted text is laid out by textview.py; the markup is in templates/ (render.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.inputs import read_json
from provenance.report import series as ser
from provenance.report import textview
from provenance.report.sources import Loaded

KL_FLOOR = 1e-20  # KL at or below this (0, or -1e-17 from rounding) is drawn on the floor


def kl_series(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    n = len(arrays["kl_ref_cand"])
    keep = np.union1d(ser.peak_indices(arrays["kl_ref_cand"]),
                      ser.peak_indices(arrays["kl_cand_ref"]))
    dis = np.flatnonzero(~arrays["agree"].astype(bool))
    starts, rate = ser.bucket_rate(~arrays["agree"].astype(bool))
    return {
        "n": n,
        "downsampled": bool(len(keep) < n),
        "kl": {"x": keep.tolist(),
               "ref_cand": ser.round_sig(np.maximum(arrays["kl_ref_cand"][keep], KL_FLOOR)),
               "cand_ref": ser.round_sig(np.maximum(arrays["kl_cand_ref"][keep], KL_FLOOR))},
        "rate": {"x": starts.tolist(), "y": ser.round_sig(rate),
                 "bucket": int(starts[1] - starts[0]) if len(starts) > 1 else 1},
        "marks": dis[: ser.MAX_MARKS].tolist(),
        "marks_total": int(len(dis)),
        "kl_floor": KL_FLOOR,
    }


def _layer_key(name: str) -> tuple[int, int, str]:
    if name.startswith("hidden.") and name.split(".")[1].isdigit():
        return (0, int(name.split(".")[1]), name)
    return (1, 0 if name == "final_norm" else 1, name)


def digest_heatmap(base: dict[str, list[str]], others: list[dict[str, list[str]]],
                   block: int, label: str) -> dict[str, Any] | None:
    """layers x blocks: how many of `others` differ from `base` in that block's digest."""
    if not base:
        return None
    layers = sorted(base, key=_layer_key)
    values = []
    for layer in layers:
        row = []
        for b, d in enumerate(base[layer]):
            row.append(sum(1 for o in others
                           if (o.get(layer) or [None] * (b + 1))[b:b + 1] != [d]))
        values.append(row)
    return {"layers": layers, "blocks": max(len(r) for r in values), "block": block,
            "values": values, "max": max(1, len(others)), "label": label}


def _worker_meta(loaded: Loaded, side: str, run_id: str | None) -> dict | None:
    """A divergence run's worker run.json: the declared output its record hashed, else the
    default work directory beside the result."""
    from provenance.report.declared import declared_output

    rec = loaded.records.get(run_id or "")
    found = declared_output(rec, "run.json") if rec else None
    if found is not None:
        return read_json(found, "json")
    if loaded.path is not None:
        p = loaded.path.parent / f".{loaded.path.name}.work" / side / "run.json"
        if p.is_file():
            return read_json(p, "json")
    return None


def heatmap_for(loaded: Loaded) -> dict[str, Any] | None:
    doc = loaded.doc
    if loaded.kind == "repeat":
        runs = doc.get("runs") or []
        if len(runs) < 2:
            return None
        return digest_heatmap(runs[0]["digests"], [r["digests"] for r in runs[1:]],
                              doc["positions"].get("block", 0),
                              "repeats whose digest differs from run 0")
    if loaded.kind in ("diverge", "comparison"):
        runs = doc.get("runs") or {}
        ref = _worker_meta(loaded, "ref", runs.get("reference"))
        cand = _worker_meta(loaded, "cand", runs.get("candidate"))
        if ref and cand:
            return digest_heatmap(ref["digests"], [cand["digests"]], ref.get("block", 0),
                                  "candidate digest differs from the reference")
    return None


def spec(engine: dict[str, Any]) -> str:
    """An engine configuration as its spec string (ENGINE:key=value,...)."""
    if engine.get("spec"):
        return str(engine["spec"])
    opts = engine.get("options") or {}
    items = opts.items() if isinstance(opts, dict) else opts
    tail = ",".join(f"{k}={v}" for k, v in items)
    return f"{engine.get('engine', '?')}{':' + tail if tail else ''}"


def _pct(x: float) -> str:
    return f"{x:.4%}"


def _marker(v: Any) -> str | None:
    """The reason of a `{"not_computable": REASON}` figure, else None."""
    return f"not computable: {v['not_computable']}" if isinstance(v, dict) and \
        "not_computable" in v else None


def _err(v: Any, fmt: str) -> str:
    return "" if not isinstance(v, int | float) else f" ± {v:{fmt}}"


def diverge_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    s = doc["summary"]
    return [("reference", spec(doc["engines"][0])), ("candidate", spec(doc["engines"][1])),
            *figure_rows(s), *_storage_rows(doc),
            ("gate", (doc.get("comparison") or {}).get("gate", "?"))]


def figure_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    """A divergence summary's figures as (label, text) rows: the report's summary table and
    `prov run diverge`'s. Results written before a figure existed show the rows they have."""
    ci = s["ci"]
    first = s["first_disagreement"]
    top1 = s["top1_agreement"]
    same = s.get("same_top_p") or {}
    rows = [("positions", str(s["positions"])),
            ("top-1 agreement (llama.cpp: same top p)", _marker(top1) or (
                f"{_pct(top1)}{_err(same.get('stderr'), '.4%')} "
                f"[{_pct(ci['top1_agreement']['lo'])}, {_pct(ci['top1_agreement']['hi'])}]"))]
    topk = s.get("topk_agreement") or {}
    if _marker(topk):
        rows.append(("top-K agreement (exllamav3)", _marker(topk)))
    else:
        rows += [(f"top-{k} agreement (exllamav3)", _marker(v) or _pct(v))
                 for k, v in topk.items() if k != "1"]
    rows += [("disagreements (near-ties)",
              f"{s['disagreements']} ({s['near_tie_disagreements']})"),
             ("first disagreement", "none" if first is None else
              f"{first} {json.dumps(s.get('first_disagreement_text'))}")]
    for key, name in (("kl_ref_cand", "KL(ref‖cand)"), ("kl_cand_ref", "KL(cand‖ref)")):
        kl, c = s[key], ci.get(f"{key}_mean")
        band = f" [{c['lo']:.3e}, {c['hi']:.3e}]" if c else ""
        rows.append((f"mean {name}", f"{kl['mean']:.3e}{_err(kl.get('stderr'), '.1e')}{band}"))
        rows += [(f"{name} {p}", f"{kl[p]:.3e}") for p in ("max", "p99.9", "p99", "p90",
                                                            "median") if p in kl]
    rows += _confidence_rows(s.get("kl_by_confidence"))
    rows += _label_rows(s)
    rows += [("self-KL floor (storage)", storage_floor_text(s["self_kl_floor"])),
             ("noise floor (reference vs its repeat)", noise_floor_text(s.get("noise_floor"))),
             ("truncated positions", str(s.get("truncated_positions", 0))
              + ("; KL is a lower bound there" if s.get("kl_lower_bound") else "")),
             ("clusters", str(len(s["clusters"])))]
    return rows


def _confidence_rows(by: Any) -> list[tuple[str, str]]:
    if not isinstance(by, dict) or _marker(by):
        return [] if by is None else [("KL by reference confidence", _marker(by) or "?")]
    out = []
    for name, b in by.items():
        kl = b["kl_ref_cand"]
        out.append((f"KL(ref‖cand) where ref p(top-1) in {name}",
                    f"{b['share']:.1%} of positions ({b['count']})" + (
                        "" if _marker(kl) else f", mean {kl['mean']:.3e}, median "
                                               f"{kl['median']:.3e}")))
    return out


def _label_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    dp = s["delta_p"]
    if _marker(dp):
        out.append(("Δp (p_cand − p_ref of the next token)", _marker(dp)))
    else:
        if "stderr" in dp:
            out.append(("mean Δp", f"{dp['mean']:.3e}{_err(dp['stderr'], '.1e')}"))
        out.append(("RMS Δp", f"{dp['rms']:.3e}{_err(dp.get('rms_stderr'), '.1e')}"))
    ppl = s.get("perplexity")
    if ppl is not None:
        out.append(("PPL(cand)/PPL(ref)", _marker(ppl) or (
            f"{ppl['ratio']['value']:.6f}{_err(ppl['ratio']['stderr'], '.6f')} (ln ratio "
            f"{ppl['ln_ratio']['value']:.3e}{_err(ppl['ln_ratio']['stderr'], '.1e')}; PPL ref "
            f"{ppl['ref']['value']:.4g}, cand {ppl['cand']['value']:.4g})")))
    lab = s.get("label_in_topk")
    if isinstance(lab, dict) and not _marker(lab):
        for side in ("ref", "cand"):
            parts = [f"top-{k} " + (_pct(v) if not _marker(v) else "n/c")
                     for k, v in lab[side].items()]
            out.append((f"next token in {side}'s top-K", ", ".join(parts)))
    return out


def noise_floor_text(nf: Any) -> str:
    """The noise floor as one line (the report's summary and `prov run diverge`)."""
    if nf is None:
        return "not measured (result written before the noise floor)"
    if _marker(nf):
        return _marker(nf)
    head = f"{nf['bit_identical_positions']}/{nf['positions']} positions bit-identical"
    if nf["bit_identical"]:
        return f"0 (bit-identical repeat: {head})"
    kl = nf["kl_ref_cand"]
    return (f"KL(ref‖repeat) mean {kl['mean']:.3e}, max {kl['max']:.3e}; top-1 agreement "
            f"{_pct(nf['top1_agreement'])}; max |Δ logit| {nf['max_abs_logit_delta']:.3e}; "
            f"{head}")


def storage_floor_text(floor: dict) -> str:
    """The reference side's storage floor, as the report and `prov run diverge` print it."""
    top = floor["ref"]["max"]
    if top is None:
        return "not computed: only top-k log-probabilities were stored"
    return f"{top:.1e} ({floor['storage_dtype']})"


def _storage_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """How the logits were obtained, for a hidden-state result (runners/hidden.py)."""
    st = (doc.get("storage") or {}).get("reference") or {}
    if st.get("kind") != "hidden":
        return []
    an = doc.get("analysis") or {}
    return [("stored", f"{st['hidden_dtype']} final hidden states {st['hidden_shape']} + "
                       f"output head sha256 {st['head']['sha256'][:16]}…"),
            ("analysis", f"logits rebuilt on {an.get('device', '?')} in chunks of "
                         f"{an.get('chunk_rows', '?')} rows; {an.get('kernel', '?')}")]


def repeat_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    v = doc["summary"]
    rows = [("engine", spec(doc["engines"][0])),
            ("runs", str(len(doc.get("runs") or []))), ("verdict", v["verdict"])]
    rows += [(k, str(v[k])) for k in ("layers", "blocks", "run", "layer", "block", "positions",
                                      "scores_max_abs_diff_in_block", "scores_max_abs_diff")
             if k in v]
    return rows


def repeat_gate_rows(doc: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(pair, gate, comparison record, identity) for each repeat gated against run 0."""
    runs = [r.get("run_id") or "?" for r in doc.get("runs") or []]
    rows = []
    for i, g in enumerate(doc.get("comparisons") or [], start=1):
        pair = f"run 0 vs run {i}" + (f" ({runs[0]} vs {runs[i]})" if i < len(runs) else "")
        same = g.get("identical")
        rows.append((pair, str(g.get("gate", "?")), g.get("comparison_record") or "-",
                     "-" if same is None else "identical" if same else "ignored keys differ"))
    return rows


INVARIANCE_HEAD = ("probe", "identical", "first difference", "top-1 agreement",
                   "max |Δ logprob|", "pairs differing")


def invariance_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    s = doc["summary"]
    c = s["control"]
    t = s.get("throughput") or {}
    rows = [("engine", spec(doc["engines"][0])), ("verdict", s["verdict"]),
            ("negative control", f"{c['op']}: "
             + ("differed, as it must" if c["failed_as_required"] else
                "did NOT differ: the probes proved nothing (unproven)")),
            ("run", str((doc.get("run") or {}).get("run_id"))),
            ("throughput (tokens/s, median timing round)",
             str(t.get("tokens_per_s", t.get("batched_tokens_per_s"))))]
    rows += [(k, why) for k, why in (s.get("not_applicable") or {}).items()]
    resolved = (s.get("knobs") or {}).get("resolved") or {}
    rows += [(f"knob {k}", f"{v['value']}  ({v['at']})") for k, v in sorted(resolved.items())]
    return rows


def invariance_probe_rows(doc: dict[str, Any]) -> list[tuple[str, ...]]:
    s = doc["summary"]
    out = []
    for name, p in [*s["probes"].items(), ("control (planted)", s["control"])]:
        f = p.get("first_difference")
        out.append((name, "yes" if p["identical"] else "no",
                    f"{f['pair']}: {f['where']} position {f['position']}" if f else "-",
                    f"{p['top1_agreement']:.4%}", f"{p['max_abs_logprob_diff']:.3e}",
                    f"{p.get('differing_pairs', 0)} of {p.get('pairs', 0)}"))
    return out


def run_rows(rec: dict[str, Any]) -> list[tuple[str, str]]:
    from provenance.model.redact import redact_argv, redact_command_text

    cmd = rec.get("command")  # redacted again: a record from an older store may not be
    cmd = redact_argv([str(a) for a in cmd]) if isinstance(cmd, list) else (
        redact_command_text(cmd) if isinstance(cmd, str) else cmd)
    return [(k, str(v)) for k, v in (
        ("run", rec.get("run_id")), ("name", rec.get("name")), ("state", rec.get("state")),
        ("command", " ".join(cmd) if isinstance(cmd, list) else cmd),
        ("exit status", rec.get("exit_status")), ("started", rec.get("started_at")),
        ("duration (s)", rec.get("duration_s")), ("manifest digest", rec.get("manifest_digest")),
        ("loaded libraries", len(rec.get("loaded_libraries") or [])),
        ("drift", (rec.get("drift") or {}).get("detected")),
    ) if v is not None]


def inside_rows(rec: dict[str, Any]) -> list[tuple[str, str]]:
    """What the run's processes resolved and read (the engine block: attention backend,
    KV-cache dtype, quantization, model; model and input files; the server a client talked
    to), as `prov show` prints it."""
    from provenance.exec import engine_rows, server_rows

    facts = rec.get("facts") or {}
    return engine_rows(facts) + server_rows(facts)


def output_rows(rec: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(what, path, digest, size) of the declared outputs, the run directory and the logs."""
    def size(f: dict[str, Any]) -> str:
        files = f" in {f['files']} files" if isinstance(f.get("files"), int) else ""
        return f"{f['size']} bytes{files}" if isinstance(f.get("size"), int) else "-"

    rows = [(f"output ({out.get('type', '?')})", path, out.get("digest") or "-", size(out))
            for path, out in sorted((rec.get("outputs") or {}).items())]
    rows += [("run directory", path, f.get("digest") or "-", size(f))
             for path, f in sorted((rec.get("run_dir") or {}).items())]
    rows += [("log", name, log.get("digest") or "-", size(log))
             for name, log in sorted((rec.get("logs") or {}).items())]
    return rows


def text_section(loaded: Loaded, model: Path | None) -> tuple[str, dict, str]:
    """(highlighted HTML, tooltip data, where the text came from)."""
    a = loaded.arrays
    clusters = loaded.doc["summary"]["clusters"]
    spans = textview.cluster_positions(clusters)
    model = model or textview.model_from_records(loaded.records)
    pieces = textview.token_pieces(model, a["ids"])
    if pieces is not None:
        body = textview.highlighted_html(pieces, a["agree"], spans)
        source = f"decoded with the tokenizer of {model}"
    else:
        pieces = [f"⟨{int(i)}⟩" for i in a["ids"]]
        body = textview.windows_html(pieces, a["agree"], spans)
        source = "no tokenizer found (pass --model DIR): token ids around each cluster"
    if len(clusters) > len(spans):
        source += f"; first {len(spans)} of {len(clusters)} clusters highlighted"
    return body, textview.tooltips(a, spans, pieces), source
