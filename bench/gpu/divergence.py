"""Backend divergence on one GPU: model build, cross-pair analysis of repeat runs, tables.

    python bench/gpu/divergence.py build MODEL_DIR --layers 28 --vocab 8192 --tokens 16384
    python bench/gpu/divergence.py pairs --work W --results R --backends flash,math,...
    python bench/gpu/divergence.py table --results R

`run_h200.sh` runs `prov run repeat` once per backend (two worker processes each, every one a
recorded `prov exec` run); `pairs` then compares run 0 of every two backends through the same
gate as `prov run diverge` (it must refuse without --vary and pass with
`--vary attention-backend`) and the same analysis and result format, without re-running the
engines (each pair would otherwise cost two more 16k-token runs).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SPECS = {
    "flash": "transformers:attn=sdpa,sdpa_kernel=FLASH_ATTENTION,dtype=bfloat16,device={dev}",
    "cudnn": "transformers:attn=sdpa,sdpa_kernel=CUDNN_ATTENTION,dtype=bfloat16,device={dev}",
    "efficient": "transformers:attn=sdpa,sdpa_kernel=EFFICIENT_ATTENTION,dtype=bfloat16,"
                 "device={dev}",
    "math": "transformers:attn=sdpa,sdpa_kernel=MATH,dtype=bfloat16,device={dev}",
    "eager": "transformers:attn=eager,dtype=bfloat16,device={dev}",
}


YARN = {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
        "original_max_position_embeddings": 32768}  # Qwen3's long-context setting


def eval_text(out: Path, tokens: int, segmented: bool) -> tuple[str, int]:
    """The evaluation text (at least tokens + 1 tokens) and its token count; segmented: a
    workstream-like text of tool-call JSON, code and prose with TEXT.segments.json beside."""
    from tokenizers import Tokenizer

    from runners.demo.build import train_tokenizer
    from runners.demo.corpus import generate
    from runners.demo.segments import generate_segmented, write_segmented

    if segmented:
        text, segs = generate_segmented(n_chars=tokens * 3, seed=7)
    else:
        text = generate(n_paragraphs=max(400, tokens // 12), seed=7)
    train_tokenizer(text[:2_000_000], out)
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    n = len(tok.encode(text).ids)
    while n < tokens + 1:  # long enough for `tokens` positions
        if segmented:
            text, segs = generate_segmented(n_chars=int(len(text) * 1.3 * (tokens + 1) / n),
                                            seed=7)
        else:
            text += "\n" + generate(n_paragraphs=400, seed=n)
        n = len(tok.encode(text).ids)
    if segmented:
        write_segmented(out / "eval.txt", text, segs)
    else:
        (out / "eval.txt").write_text(text, encoding="utf-8")
    return text, n


def build(out: Path, layers: int, vocab: int, tokens: int, hidden: int, train_steps: int = 0,
          train_seconds: float = 120.0, yarn: bool = False, segmented: bool = False) -> None:
    """Qwen3-0.6B's shape (hidden 1024, 16 query / 8 KV heads of 128, MLP 3072, RoPE 1e6,
    tied head) with `layers` layers and `vocab` outputs, init from seed 0, bf16; yarn: RoPE
    scaled as Qwen3 configures it for long contexts (YaRN, factor 4 over 32,768 original
    positions: 131,072); with train_steps, briefly trained first (see train)."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    from runners.demo.build import VOCAB_SIZE

    out.mkdir(parents=True, exist_ok=True)
    _, n = eval_text(out, tokens, segmented)
    small = hidden < 1024
    rope = dict(YARN) if yarn else {"rope_type": "default", "rope_theta": 1000000.0}
    cfg = Qwen3Config(
        vocab_size=max(vocab, VOCAB_SIZE), hidden_size=hidden,
        intermediate_size=3 * hidden, num_hidden_layers=layers,
        num_attention_heads=4 if small else 16, num_key_value_heads=2 if small else 8,
        head_dim=32 if small else 128,
        # YaRN: exactly factor x original (transformers warns on any other ratio)
        max_position_embeddings=max(131072 if yarn else 40960, tokens),
        rope_parameters=rope, rms_norm_eps=1e-6, tie_word_embeddings=True,
        use_sliding_window=False, dtype="bfloat16")
    torch.manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if train_steps:
        with torch.device(dev):
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
        trained = train(model, out, train_steps, train_seconds, segmented=segmented)
        (out / "train.json").write_text(json.dumps(trained, indent=1))
        model = model.to(torch.bfloat16)
    else:
        with torch.device(dev):  # init on the GPU: seconds, not minutes, at 151,936 outputs
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        trained = {"steps": 0}
    model.save_pretrained(out, safe_serialization=True)
    print(json.dumps({"model": str(out), "layers": layers, "vocab": cfg.vocab_size,
                      "hidden": hidden, "text_tokens": n, "training": trained,
                      "rope": rope, "max_positions": cfg.max_position_embeddings,
                      "params": sum(p.numel() for p in model.parameters())}))


def train(model, out: Path, steps: int, max_seconds: float, seq: int = 1024,
          batch: int = 16, segmented: bool = False) -> dict:
    """A brief training run so the distributions are not flat: next-token loss on a text of
    the same grammar generated with another seed (the evaluation text is never trained on),
    AdamW 3e-4 with 20 warm-up steps, fp32 weights under bf16 autocast on the model's device,
    at most `steps` steps or `max_seconds`. Returns the steps taken and the loss curve ends."""
    import torch
    from tokenizers import Tokenizer

    from runners.demo.corpus import generate
    from runners.demo.segments import generate_segmented

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device).train()
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    text = generate_segmented(2_000_000, seed=11)[0] if segmented else \
        generate(n_paragraphs=16000, seed=11)
    ids = torch.tensor(tok.encode(text).ids, dtype=torch.long)
    seq = min(seq, len(ids) // 2)
    gen = torch.Generator().manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / 20))
    losses, t0 = [], time.time()
    for _ in range(steps):
        starts = torch.randint(0, len(ids) - seq - 1, (batch,), generator=gen)
        x = torch.stack([ids[s:s + seq] for s in starts]).to(device)
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if time.time() - t0 > max_seconds:
            break
    model.eval()
    return {"steps": len(losses), "seconds": round(time.time() - t0, 1), "seq": seq,
            "batch": batch, "train_tokens": int(len(ids)), "loss_first": losses[0],
            "loss_last": losses[-1], "loss_last10_mean": sum(losses[-10:]) / len(losses[-10:])}


def _load_run(work: Path, result: Path):
    """Run 0 of a repeat as the WorkerRun that run_diverge would have produced."""
    import numpy as np

    from runners.engines import EngineConfig
    from runners.execute import WorkerRun

    meta = json.loads((work / "run0" / "run.json").read_text())
    res = json.loads((result / "result.json").read_text())
    meta["runtime"] = res["runtime"]  # the probe's reading, kept in the result (repeat.py)
    with np.load(work / "run0" / "scores.npz") as z:
        scores = z["scores"]
        hidden = z["final_hidden"] if "final_hidden" in z.files else None
    cfg = EngineConfig.parse(meta["spec"])
    return WorkerRun(cfg, meta, scores, hidden, res["runs"][0]["run_id"], {})


def pairs(work: Path, results: Path, backends: list[str], model: Path, tokens: int,
          deadline: float) -> dict:
    import runners.analysis.summary as rs
    import runners.diverge as rd
    from provenance.cli.gating import gate_check as _gate
    from provenance.model.errors import ProvError
    from runners.diverge import diverge_card
    from runners.prepare import prepare
    from runners.results import write_result

    # The storage self-KL floor depends on one run's scores only: compute it once per run,
    # not once per pair (each call is several full float64 passes over 16k x vocab).
    floor = rs.self_kl_floor
    memo: dict = {}
    rs.self_kl_floor = lambda scores, dtype: memo.setdefault(
        (id(scores), dtype), floor(scores, dtype))
    prep = prepare(model, model / "eval.txt", tokens)
    runs = {}
    for b in backends:
        try:
            runs[b] = _load_run(work / b, results / f"repeat-{b}")
        except (OSError, KeyError, ValueError) as exc:
            print(f"pairs: no run for {b}: {exc}", file=sys.stderr)
    doc: dict = {"pairs": {}, "gate_without_vary": None}
    names = list(runs)
    if len(names) >= 2:
        try:
            _gate([])(runs[names[0]], runs[names[1]])
            doc["gate_without_vary"] = "PASSED (unexpected)"
        except ProvError as exc:
            doc["gate_without_vary"] = f"refused: {str(exc)[:300]}"
    for a, b in itertools.combinations(names, 2):
        if time.time() > deadline:
            doc["pairs"][f"{a}~{b}"] = {"skipped": "time budget"}
            continue
        t0 = time.time()
        ref, cand = runs[a], runs[b]
        try:
            comparison = _gate(["attention-backend"])(ref, cand)
        except ProvError as exc:
            doc["pairs"][f"{a}~{b}"] = {"gate": f"refused: {exc}"}
            continue
        # the same analysis as `prov run diverge` (hidden-state runs: rebuilt on the GPU)
        summary, arrays, facts = rd.analyse_pair(
            ref, cand, prep, results / f".work-{a}-{b}", run_dirs=(work / a / "run0",
                                                                  work / b / "run0"))
        meta = rd.diverge_meta(ref, cand, prep, comparison, summary, facts)
        path = write_result(results / f"diverge-{a}-{b}", "diverge", meta, arrays,
                            diverge_card(ref, cand, prep, summary))
        stored = json.loads((path / "result.json").read_text())
        doc["pairs"][f"{a}~{b}"] = {
            "result": str(path), "arrays_sha256": stored.get("arrays_sha256"),
            "gate": comparison.get("gate"), "comparison_record": comparison.get(
                "comparison_record"), "seconds": round(time.time() - t0, 1),
            **{k: summary[k] for k in ("positions", "top1_agreement", "disagreements",
                                       "near_tie_disagreements", "first_disagreement")},
            "kl_ref_cand": {k: summary["kl_ref_cand"][k] for k in ("mean", "max", "p99")},
            "kl_cand_ref_mean": summary["kl_cand_ref"]["mean"],
            "analysis": facts, "self_kl_floor": summary["self_kl_floor"],
            "segments_by_type": (summary.get("segments") or {}).get("by_type"),
            "clusters": len(summary["clusters"]),
            "first_clusters": [{k: c.get(k) for k in ("start", "end", "disagreements",
                                                      "segment_type", "text")}
                               for c in summary["clusters"][:5]]}
        print(f"pair {a}~{b}: {doc['pairs'][f'{a}~{b}']['top1_agreement']:.4f} agreement, "
              f"{time.time() - t0:.1f}s", flush=True)
    return doc


def table(results: Path) -> str:
    lines = ["| backend | tokens | repeat (2 processes) | layers x blocks | first differing "
             "layer/block | runtime kernel |", "|---|---|---|---|---|---|"]
    for d in sorted(results.glob("repeat-*")):
        try:
            r = json.loads((d / "result.json").read_text())
        except OSError:
            continue
        s = r["summary"]
        # the kernel(s) torch's sdpa chose, as the probe saw them; eager calls no sdpa
        kernels = (r["runtime"].get("torch") or {}).get("sdpa_kernels") or {}
        kern = ", ".join(sorted(set(kernels.values()))) or "none (no sdpa call)"
        where = f"{s.get('layer')} / {s.get('block')}" if s["verdict"] != "bit-identical" else "-"
        grid = f"{s.get('layers')} x {s.get('blocks')}"
        lines.append(f"| {d.name[7:]} | {r.get('positions', {}).get('n_tokens')} "
                     f"| {s['verdict']} | {grid} | {where} | {kern} |")
    pf = results / "pairs.json"
    if pf.is_file():
        doc = json.loads(pf.read_text())
        lines += ["", f"gate without --vary: {doc.get('gate_without_vary')}", "",
                  "| pair (ref~cand) | top-1 agreement | disagreements (near-ties) | first "
                  "| mean KL(r||c) | max KL | p99 KL | mean KL(c||r) | clusters | gate |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for k, p in doc["pairs"].items():
            if "top1_agreement" not in p:
                lines.append(f"| {k} | {p} |")
                continue
            kl = p["kl_ref_cand"]
            lines.append(f"| {k} | {p['top1_agreement']:.4%} | {p['disagreements']} "
                         f"({p['near_tie_disagreements']}) | {p['first_disagreement']} "
                         f"| {kl['mean']:.3e} | {kl['max']:.3e} | {kl['p99']:.3e} "
                         f"| {p['kl_cand_ref_mean']:.3e} | {p['clusters']} | {p['gate']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("out", type=Path)
    b.add_argument("--layers", type=int, default=28)
    b.add_argument("--vocab", type=int, default=8192)
    b.add_argument("--tokens", type=int, default=16384)
    b.add_argument("--hidden", type=int, default=1024)
    b.add_argument("--train-steps", type=int, default=0, help="0: random init")
    b.add_argument("--train-seconds", type=float, default=120.0, help="stop training after")
    b.add_argument("--yarn", action="store_true", help="RoPE with YaRN (131,072 positions)")
    b.add_argument("--segmented", action="store_true",
                   help="a workstream-like eval text (tool JSON, code, prose) + segments")
    s = sub.add_parser("specs")
    s.add_argument("--device", default="cuda")
    s.add_argument("backends")
    p = sub.add_parser("pairs")
    for name in ("work", "results", "model"):
        p.add_argument(f"--{name}", type=Path, required=True)
    p.add_argument("--backends", required=True)
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--budget", type=float, default=1e9, help="seconds before pairs are skipped")
    t = sub.add_parser("table")
    t.add_argument("--results", type=Path, required=True)
    a = ap.parse_args()
    if a.cmd == "build":
        build(a.out, a.layers, a.vocab, a.tokens, a.hidden, a.train_steps, a.train_seconds,
              a.yarn, a.segmented)
    elif a.cmd == "specs":
        for name in a.backends.split(","):
            print(f"{name} {SPECS[name].format(dev=a.device)}")
    elif a.cmd == "pairs":
        doc = pairs(a.work, a.results, a.backends.split(","), a.model, a.tokens,
                    time.time() + a.budget)
        (a.results / "pairs.json").write_text(json.dumps(doc, indent=1))
    else:
        print(table(a.results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
