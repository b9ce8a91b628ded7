"""`prov report` on real results, stored comparisons and runs, sweeps; size; bad input.

The browser checks are in test_browser.py; here the page's content is read back from the
HTML and its embedded JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from html import unescape

import numpy as np
import pytest

from tests.runners.clihelp import prov

MAX_BYTES = 10 * 1000 * 1000


def page_data(html: str) -> dict:
    m = re.search(r"<script type='application/json' id='prov-data'>(.*?)</script>", html, re.S)
    assert m, "no embedded data"
    return json.loads(m.group(1).replace("<\\/", "</"))


def assert_offline(html: str) -> None:
    assert "default-src 'none'" in html  # the page's own CSP forbids every fetch
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html, re.I)


def test_real_divergence_report(real_diverge, tmp_path):
    from runners import api

    result, store, cwd, stdout = real_diverge
    doc, arrays = api.read_result(result)
    out = tmp_path / "r.html"
    p = prov("report", str(result), "--out", str(out), store=store, cwd=cwd)
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    assert_offline(html)
    data = page_data(html)
    s = data["series"]
    assert s["n"] == doc["summary"]["positions"] and not s["downsampled"]
    assert s["marks"] == np.flatnonzero(~arrays["agree"]).tolist()
    assert max(s["kl"]["ref_cand"]) == pytest.approx(doc["summary"]["kl_ref_cand"]["max"],
                                                     rel=1e-3)
    # every disagreeing position of every cluster is highlighted over the decoded text
    spans = re.findall(r'<span class="hl dis" data-p="(\d+)">', html)
    assert sorted(map(int, spans)) == np.flatnonzero(~arrays["agree"]).tolist()
    for j in spans:
        tip = data["tips"][j]
        assert tip[0] is False and tip[1] == pytest.approx(float(arrays["margin"][int(j)]),
                                                           rel=1e-3, abs=1e-12)
    assert "decoded with the tokenizer of" in html
    # the comparison record's declared variable and the keys it covered
    assert "--vary attention-backend" in html
    assert "runtime.transformers.models.0.attn_implementation" in html
    # the layer x block heatmap from the two workers' digests: embeddings agree, logits not
    heat = data["heatmap"]
    assert heat["layers"][0] == "hidden.0" and heat["layers"][-1] == "logits"
    assert all(v == 0 for v in heat["values"][0]) and all(v == 1 for v in heat["values"][-1])
    for item in ("kl direction", "vocabulary truncation", "calibration data"):
        assert item in html
    # the summary shows every figure the result holds, as recorded (llama.cpp's, exllamav3's,
    # the noise floor of the reference against its repeat)
    import html as html_lib

    rows = {html_lib.unescape(k): html_lib.unescape(v) for k, v in
            re.findall(r"<tr><td>([^<]+)</td><td>([^<]*)</td></tr>", html)}
    summ = doc["summary"]
    n = summ["positions"]
    assert rows["noise floor (reference vs its repeat)"] == \
        f"0 (bit-identical repeat: {n}/{n} positions bit-identical)"
    assert rows["top-5 agreement (exllamav3)"] == f"{summ['topk_agreement']['5']:.4%}"
    assert rows["top-10 agreement (exllamav3)"] == f"{summ['topk_agreement']['10']:.4%}"
    ratio = summ["perplexity"]["ratio"]
    assert rows["PPL(cand)/PPL(ref)"].startswith(f"{ratio['value']:.6f} ± "
                                                 f"{ratio['stderr']:.6f}")
    assert rows["top-1 agreement (llama.cpp: same top p)"].startswith(
        f"{summ['top1_agreement']:.4%} ± {summ['same_top_p']['stderr']:.4%}")
    for name, b in summ["kl_by_confidence"].items():
        assert rows[f"KL(ref‖cand) where ref p(top-1) in {name}"].startswith(
            f"{b['share']:.1%} of positions ({b['count']})")
    assert rows["RMS Δp"].startswith(f"{summ['delta_p']['rms']:.3e} ± ")
    assert "noise floor (reference vs its repeat)" in stdout  # `prov run diverge`'s table
    # `prov run diverge` printed the sparkline under its table
    n_dis = int((~arrays["agree"]).sum())
    assert f"top-1 disagreement along the context (767 positions, {n_dis} disagree): " in stdout


def test_stored_comparison_and_sparkline(real_diverge, tmp_path):
    result, store, cwd, _ = real_diverge
    doc = json.loads((result / "result.json").read_text())
    ref, cand = doc["runs"]["reference"], doc["runs"]["candidate"]
    p = prov("compare", ref, cand, "--vary", "attention-backend", store=store, cwd=cwd,
             env={"COLUMNS": "200"})
    assert p.returncode == 0, p.stderr
    n_dis = doc["summary"]["disagreements"]
    assert f"top-1 disagreement along the context (767 positions, {n_dis} disagree): " \
        in p.stdout
    rec = doc["comparison"]["comparison_record"]
    out = tmp_path / "c.html"
    p = prov("report", rec[7:19], "--out", str(out), store=store, cwd=cwd)
    assert p.returncode == 0, p.stderr
    data = page_data(out.read_text())
    # the stored comparison of two worker runs is analysed again from their scores
    assert len(data["series"]["marks"]) == n_dis
    p = prov("report", ref, "--out", str(tmp_path / "run.html"), store=store, cwd=cwd)
    assert p.returncode == 0 and ref in (tmp_path / "run.html").read_text()


def test_100k_positions_stay_under_10_mb(synthetic_100k, tmp_path):
    from runners import api

    doc, arrays = api.read_result(synthetic_100k)
    out = tmp_path / "big.html"
    from provenance.report import write_report

    old_umask = os.umask(0o022)
    try:
        write_report(str(synthetic_100k), out)
    finally:
        os.umask(old_umask)
    # a page the user asked for: 0666 less the umask, not the temp file's private 0600
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    size = out.stat().st_size
    print(f"100k-position report: {size / 1e6:.2f} MB")
    assert size < MAX_BYTES
    data = page_data(out.read_text())
    s = data["series"]
    assert s["n"] == 100_000 and s["downsampled"] and len(s["kl"]["x"]) < 13_000
    top = int(np.argmax(arrays["kl_ref_cand"]))
    assert top in s["kl"]["x"]  # the largest spike is kept, at its true position
    assert s["marks"] == np.flatnonzero(~arrays["agree"]).tolist()
    assert "no tokenizer found" in out.read_text()


def sweep_doc() -> dict:
    cells = []
    for i, (backend, kv) in enumerate([(b, k) for b in ("FLASH_ATTN", "FLASHINFER")
                                       for k in ("auto", "fp8")]):
        cells.append({"id": f"c{i}", "config": {"attention_backend": backend,
                                                "kv_cache_dtype": kv},
                      "status": "complete", "node": "n1" if i < 3 else "n2",
                      "run_ids": [f"{i:016x}"], "top1_agreement": 1.0 - i * 0.01,
                      "kl_mean": i * 1e-4, "kl_max": i * 1e-2, "repeat": "bit-identical",
                      "flagged": i == 3, "flag_keys": ["env.NCCL_ALGO"] if i == 3 else []})
    return {"format": "prov-sweep/1", "name": "backends-x-kv", "spec_digest": "sha256:00",
            "axes": {"attention_backend": ["FLASH_ATTN", "FLASHINFER"],
                     "kv_cache_dtype": ["auto", "fp8"]}, "reference": "c0", "cells": cells}


def test_sweep_matrix(tmp_path):
    (tmp_path / "sweep.json").write_text(json.dumps(sweep_doc()))
    out = tmp_path / "s.html"
    p = prov("report", str(tmp_path), "--out", str(out), store=tmp_path / "nostore",
             cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    table = html[html.index("<table class='sweep'>"):]
    table = table[:table.index("</table>")]
    assert table.count("<td class=") == 4
    assert "kv_cache_dtype=fp8" in table and "cell-ref" in table
    assert "FLAGGED: env.NCCL_ALGO" in table and table.count("cell-flag") == 1
    assert "agree 97.0000%" in table


@pytest.mark.parametrize("case", ["missing", "bad-sweep", "tampered"])
def test_bad_input_one_line_nothing_written(case, tmp_path, synthetic_100k):
    import shutil

    target = tmp_path / "t"
    if case == "bad-sweep":
        doc = sweep_doc()
        doc["reference"] = "nope"
        target.write_text(json.dumps(doc))
        target = target.rename(tmp_path / "t.json")
    elif case == "tampered":
        shutil.copytree(synthetic_100k, target)
        with open(target / "arrays.npz", "r+b") as fh:
            fh.seek(100)
            fh.write(b"X")
    out = tmp_path / "out.html"
    p = prov("report", str(target), "--out", str(out), store=tmp_path / "nostore",
             cwd=tmp_path)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("prov: error: ")
    assert not out.exists() and not list(tmp_path.glob(".out.html*"))


def test_repeat_report_heatmap(demo_model_dir, tmp_path):
    """A real repeatability result: the layer x block heatmap of digests. Two CPU processes
    are usually bit-identical but not always (this suite has seen sdpa repeats differ by
    8e-4 on a busy machine: the machine's doing, not prov's), so the page is checked
    against the digests the result holds, whichever way they came out."""
    p = prov("run", "repeat", "--engine", "transformers:attn=sdpa", "--model",
             str(demo_model_dir), "--text", str(demo_model_dir / "eval.txt"), "--n", "2",
             "--max-tokens", "300", "--block", "64", "--out", str(tmp_path / "rep"),
             store=tmp_path / "store", cwd=tmp_path)
    doc = json.loads((tmp_path / "rep" / "result.json").read_text())
    base, other = doc["runs"][0]["digests"], doc["runs"][1]["digests"]
    identical = base == other
    assert p.returncode == (0 if identical else 1), p.stderr[-2000:]  # 1: not repeatable
    assert doc["summary"]["verdict"] == ("bit-identical" if identical else "differs")
    out = tmp_path / "rep.html"
    p = prov("report", str(tmp_path / "rep"), "--out", str(out), store=tmp_path / "store",
             cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    heat = page_data(html)["heatmap"]
    assert sorted(heat["layers"]) == sorted(base)
    assert heat["blocks"] == 5 and heat["block"] == 64  # 299 positions in blocks of 64
    expected = [[int(other[layer][b] != d) for b, d in enumerate(base[layer])]
                for layer in heat["layers"]]
    assert heat["values"] == expected  # one repeat: 1 where its digest differs from run 0
    assert ("bit-identical" in html) is identical and "repeatability" in html
    # `prov run repeat` gated run 1 against run 0: the page says so, with the record it stored
    gate = html[html.index('<section id="comparison">'):]
    gate = gate[:gate.index("</section>")]
    record = doc["comparisons"][0]["comparison_record"]
    assert "not gated" not in gate and f"<td>passed</td><td>{record}</td>" in gate
    assert "verdict: comparable" in gate  # the stored record, read back from the store


def test_stored_sweep_record(tmp_path):
    """A `prov.sweep` record as the sweep driver (branch sweep) stores it, named by digest."""
    from provenance.store import open_store
    from provenance.store.records import encode

    rows = []
    for i, (attn, dtype) in enumerate([(a, d) for a in ("eager", "sdpa")
                                       for d in ("float32", "bfloat16")]):
        values = {"attn": attn, "dtype": dtype}
        gate = ({"gate": "reference"} if i == 0 else
                {"gate": "flagged", "differing": {"env.OMP_NUM_THREADS": {"reference": "1",
                                                                          "cell": "2"}}}
                if i == 3 else {"gate": "passed", "comparison_record": "sha256:00"})
        rows.append({"label": f"attn={attn},dtype={dtype}", "values": values,
                     "reference": i == 0, "state": "complete", "node": {"hostname": f"n{i}"},
                     "runs": [f"{i:016x}"], "gate": gate, "verdict": None,
                     "summary": {"top1_agreement": 0.99, "kl_ref_cand_mean": 1e-5,
                                 "kl_ref_cand_max": 1e-3} if gate["gate"] == "passed" else None})
    record = {"kind": "prov.sweep", "schema_version": 1, "name": "demo-2x2",
              "spec_digest": "sha256:ab", "axes": {"attn": ["eager", "sdpa"],
                                                   "dtype": ["float32", "bfloat16"]},
              "reference": "attn=eager,dtype=float32", "cells": rows}
    store = open_store(tmp_path / "store")
    digest = store.put_bytes(encode(record), "sweep")
    out = tmp_path / "sw.html"
    p = prov("report", digest[7:20], "--out", str(out), store=tmp_path / "store", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    table = html[html.index("<table class='sweep'>"):]
    table = table[:table.index("</table>")]
    assert table.count("<td class=") == 4 and table.count("agree 99.0000%") == 2
    assert "FLAGGED: env.OMP_NUM_THREADS" in table and "node n3" in table
    assert "demo-2x2" in html


def test_sweep_cells_not_run_show_why_and_passed_cells_what_ran(tmp_path):
    """A cell the spec skips or the budget left out carries its reason onto the page; a
    passed cell shows KL both ways, its first disagreement and what the engine resolved."""
    from provenance.store import open_store
    from provenance.store.records import encode

    ref = {"label": "kv=auto", "values": {"kv": "auto"}, "reference": True,
           "state": "complete", "runs": ["0" * 16], "gate": {"gate": "reference"}}
    ran = {"label": "kv=fp8", "values": {"kv": "fp8"}, "reference": False, "state": "complete",
           "runs": ["1" * 16], "gate": {"gate": "passed"},
           "runtime": {"attention_backend": {"resolved": "FLASH_ATTN", "flash_attn_version": "3"},
                       "kv_cache_dtype": {"resolved": "uint8", "cache_config": "fp8"}},
           "summary": {"top1_agreement": 0.97, "kl_ref_cand_mean": 2e-3, "kl_ref_cand_max": 0.5,
                       "kl_cand_ref_mean": 3e-3, "kl_cand_ref_p99": 4e-2,
                       "first_disagreement": 17}}
    skipped = {"label": "kv=int4", "values": {"kv": "int4"}, "reference": False,
               "state": "not run", "runs": [], "reason": "FLASH_ATTN has no int4 KV cache",
               "declared": True}
    # what the probe records of a transformers load, and an engine's sdpa kernel block
    probed = {**ran, "label": "kv=bf16", "values": {"kv": "bf16"}, "runtime": {"models": {"0": {
        "attn_implementation": "sdpa", "dtype": "bfloat16", "quantization": "none"}}}}
    kernel = {**ran, "label": "kv=fp16", "values": {"kv": "fp16"}, "runtime": {
        "attention_backend": {"resolved": "sdpa", "sdpa_kernel": {
            "forced": "none", "resolved": ["FLASH_ATTENTION", "MATH"]}}}}
    failed = {**skipped, "label": "kv=fp4", "values": {"kv": "fp4"}, "state": "failed",
              "reason": None, "error": {"attempt": 1, "why": "worker died"}}
    record = {"kind": "prov.sweep", "schema_version": 1, "name": "kv",
              "axes": {"kv": ["auto", "fp8", "int4", "bf16", "fp16", "fp4"]},
              "reference": "kv=auto", "cells": [ref, ran, skipped, probed, kernel, failed]}
    store = open_store(tmp_path / "store")
    digest = store.put_bytes(encode(record), "sweep")
    out = tmp_path / "sw.html"
    p = prov("report", digest[7:20], "--out", str(out), store=tmp_path / "store", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    table = out.read_text().split("<table class='sweep'>", 1)[1].split("</table>", 1)[0]
    assert table.count("<td class=") == 6
    assert "not run" in table and "FLASH_ATTN has no int4 KV cache" in table
    assert "KL(cell‖ref) 3.00e-03 (p99 4.0e-02)" in table
    assert "first disagreement at 17" in table
    assert "ran FLASH_ATTN FA3 / uint8 (fp8)" in table
    assert "ran sdpa bfloat16<" in table  # the probe's transformers model
    assert "ran sdpa (kernel FLASH_ATTENTION, MATH)<" in table
    assert "attempt 1, why worker died" in table
    assert "{" not in unescape(table) and "[" not in unescape(table)  # no dict, no list



def _segmented_result(path, n: int = 600):
    """A divergence result whose text had segments: disagreements only in code."""
    from types import SimpleNamespace

    from runners import api
    from runners.demo.segments import generate_segmented
    from runners.diverge import add_segments, summarise

    text, segs = generate_segmented(3 * (n + 1), seed=2)
    offsets = [(3 * i, 3 * i + 3) for i in range(n + 1)]
    kinds = [next((s["type"] for s in segs if s["start"] <= o[0] < s["end"]), "-")
             for o in offsets[1:]]
    top = np.zeros(n, dtype=np.int64)
    cand = np.array([1 if k == "code" and j % 7 == 0 else 0 for j, k in enumerate(kinds)])
    per = {"ref_top1": top, "cand_top1": cand, "margin": np.full(n, 0.3),
           "kl_ref_cand": np.where(cand > 0, 1e-2, 1e-6), "kl_cand_ref": np.full(n, 1e-6),
           "delta_p": np.zeros(n)}
    ids = np.arange(n + 1) % 50
    summary, arrays = summarise(per, ids, {"storage_dtype": "synthetic", "ref": {"max": 0.0},
                                           "cand": {"max": 0.0}})
    add_segments(summary, arrays, SimpleNamespace(offsets=offsets, segments=segs))
    card = api.DisclosureCard.not_applicable("synthetic: segmented test result")
    meta = {"engines": [{"engine": "synthetic"}, {"engine": "synthetic"}],
            "model_digest": "none", "tokenizer_digest": "none", "text_digest": "none",
            "positions": {"n_tokens": n + 1, "scored": n}, "summary": summary,
            "comparison": {"gate": "not run (synthetic)"},
            "runs": {"reference": None, "candidate": None}}
    return api.write_result(path, "diverge", meta, arrays, card), summary


def test_report_summarises_disagreements_by_segment_type(tmp_path):
    from provenance.report import build_report

    result, summary = _segmented_result(tmp_path / "res")
    html = build_report(str(result))
    section = html[html.index("<section id=\"segments\">"):]
    section = section[:section.index("</section>")]
    code = summary["segments"]["by_type"]["code"]
    assert code["disagreements"] > 0 and summary["segments"]["by_type"]["prose"][
        "disagreements"] == 0
    # one row per type, the code row first (highest rate) with its counts
    rows = re.findall(r"<tr><td>([^<]+)</td><td>(\d+)</td><td>(\d+) \(", section)
    assert rows[0] == ("code", str(code["positions"]), str(code["disagreements"]))
    assert {r[0] for r in rows} == set(summary["segments"]["by_type"])
    # the clusters table names each cluster's segment type
    text = html[html.index("<section id=\"text\">"):]
    assert "<th>segment</th>" in text and "<td>code</td>" in text


def _section(page: str, sid: str) -> str:
    part = page[page.index(f'<section id="{sid}">'):]
    return part[:part.index("</section>")]


def test_run_report_of_a_user_script(user_run, demo_model_dir, tmp_path):
    """`prov report RUN` of a user's own script that loaded the demo model: the engine block
    (what transformers and torch resolved), the model files and the declared output, each
    digest checked against the file itself."""
    store, cwd, run_id = user_run
    out = tmp_path / "run.html"
    p = prov("report", run_id[:8], "--out", str(out), store=store, cwd=cwd)
    assert p.returncode == 0, p.stderr
    page = unescape(out.read_text())
    engine = _section(page, "engine")
    assert "Qwen3ForCausalLM" in engine and "attn sdpa (requested sdpa)" in engine
    assert "dtype float32" in engine and "quantization none" in engine
    assert re.search(r"sdpa kernel [A-Z_]+: cpu/float32/", engine)  # the kernel torch chose
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        digest = hashlib.sha256((demo_model_dir / name).read_bytes()).hexdigest()
        assert f"<td>model file</td><td>{name}  sha256:{digest}" in engine
    outputs = _section(page, "outputs")
    written = (cwd / "out.txt").read_bytes()
    assert (f"<td>output (file)</td><td>out.txt</td><td>sha256:"
            f"{hashlib.sha256(written).hexdigest()}</td><td>{len(written)} bytes</td>") in outputs
    assert "<td>log</td><td>stdout</td>" in outputs and "<td>log</td><td>stderr</td>" in outputs
