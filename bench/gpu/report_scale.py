"""`prov report` at the study's length: page size, build time and time until headless Chromium
has drawn the plots, for a 131,072-position divergence over the segmented workstream-like text.

    python bench/gpu/report_scale.py --json OUT [--tokens 131072] [--loads 3]

The text, tokenizer and segments are the scale run's (bench/gpu/divergence.py eval_text); the
per-position values are synthetic (no engine runs here): 2 % near-tie disagreements spread
over the text, as the H200's random-init flash~cuDNN pair had, plus four stretches of large
KL. Built by the runners' own summarise/add_segments and write_result, rendered by
provenance.report. Needs Debian's chromium and chromedriver and selenium (test extra).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def synthetic_pair(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    ref = rng.integers(0, 512, n)
    cand = np.where(rng.random(n) < 0.02, (ref + 1) % 512, ref)
    kl = rng.lognormal(np.log(3e-5), 0.2, n)
    for s in (5_000, 40_000, 41_500, 100_000):
        if s + 64 <= n:
            kl[s:s + 64] *= 100
            cand[s:s + 64] = (ref[s:s + 64] + 2) % 512
    return {"ref_top1": ref, "cand_top1": cand, "margin": rng.random(n) * 0.01,
            "kl_ref_cand": kl, "kl_cand_ref": kl * rng.lognormal(0, 0.05, n),
            "delta_p": rng.normal(0, 1e-4, n)}


def build_result(work: Path, tokens: int) -> tuple[Path, Path]:
    from bench.gpu.divergence import eval_text
    from runners import api
    from runners.diverge import add_segments, summarise
    from runners.prepare import prepare

    model = work / "model"
    model.mkdir(parents=True)
    eval_text(model, tokens, segmented=True)
    (model / "config.json").write_text("{}")  # the tokenizer is all a report reads
    prep = prepare(model, model / "eval.txt", tokens)
    floor = {"storage_dtype": "synthetic", "ref": {"max": 0.0}, "cand": {"max": 0.0}}
    summary, arrays = summarise(synthetic_pair(len(prep.ids) - 1), prep.ids, floor,
                                prep.decode)
    add_segments(summary, arrays, prep)
    card = api.DisclosureCard.not_applicable("synthetic per-position values over the scale "
                                           "text (bench/gpu/report_scale.py)")
    meta = {"engines": [{"engine": "synthetic"}, {"engine": "synthetic"}],
            "model_digest": prep.model_digest, "tokenizer_digest": prep.tokenizer_digest,
            "text_digest": prep.text_digest,
            "positions": {"n_tokens": len(prep.ids), "scored": len(prep.ids) - 1},
            "summary": summary, "comparison": {"gate": "not run (synthetic)"},
            "runs": {"reference": None, "candidate": None}}
    return api.write_result(work / "result", "diverge", meta, arrays, card), model


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=131072)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args()
    from provenance.report import write_report
    from tests.provenance.report.browser import (
        PLOTS_READY,
        chromium,
        console_errors,
        open_file,
    )

    with tempfile.TemporaryDirectory() as tmp:
        result, model = build_result(Path(tmp), a.tokens)
        t0 = time.perf_counter()
        page = write_report(str(result), Path(tmp) / "report.html", model=model)
        build_s = time.perf_counter() - t0
        html = page.read_text()
        with chromium() as drv:
            ready = [open_file(drv, page, PLOTS_READY, timeout=60) for _ in range(a.loads)]
            errors = console_errors(drv)
        doc = json.loads((result / "result.json").read_text())
        res = {"positions": doc["positions"]["scored"], "bytes": page.stat().st_size,
               "build_s": build_s, "plots_ready_s": ready, "console_errors": len(errors),
               "segments_table": "id=\"segments\"" in html,
               "disagreements": doc["summary"]["disagreements"],
               "clusters": len(doc["summary"]["clusters"]),
               "segments_by_type": doc["summary"]["segments"]["by_type"],
               "machine": "the development machine (2 shared cores), Debian chromium headless"}
    a.json.write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if k != "segments_by_type"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
