"""`prov demo`: build a tiny model, then a repeatability check and an attention divergence.

Everything runs on CPU with transformers: a byte-level BPE trained on generated text, a
Qwen3-shaped model trained for a few seconds, then sdpa x 2 (bit-identical?) and eager vs
sdpa in float32 and bfloat16 (how far apart?).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import typer

from provenance.cli import app
from provenance.model.errors import ProvError

REPEATS = 2  # sdpa run twice: bit-identical?
DTYPES = ("float32", "bfloat16")  # eager vs sdpa in each: the reference, the candidate and
ENGINE_RUNS = REPEATS + 3 * len(DTYPES)  # a repeat of the reference (the noise floor)


@app.command()
def demo(
    workdir: Path = typer.Option(Path.home() / ".cache" / "prov" / "demo",
                                 help="where the demo model and results go"),
    steps: int = typer.Option(120, min=1, max=10**6, help="training steps for the tiny model"),
    max_tokens: int = typer.Option(768, help="tokens of evaluation text to score"),
    as_json: bool = typer.Option(False, "--json", help="print the figures as JSON"),
) -> None:
    """Run the embedded demo on CPU: a tiny model built once, a repeat and two divergences
    (several minutes)."""
    from provenance.cli.gating import gate_check, launcher
    from provenance.cli.output import console, print_json
    from provenance.cli.run_cmd import render_diverge, render_repeat
    from runners import api

    blocked = next((p for p in (workdir, *workdir.parents) if p.exists()), None)
    if blocked is not None and not blocked.is_dir():
        raise ProvError(f"--workdir {workdir}: {blocked} exists and is not a directory")
    con = console(stderr=as_json)
    con.print(f"the demo builds a tiny model (first time only), then {ENGINE_RUNS} engine runs, "
              "each a fresh process: several minutes on CPU", markup=False, highlight=False)
    t0 = time.time()
    try:
        model = api.ensure_demo_model(workdir / "model", steps=steps)
    except ImportError as exc:
        raise ProvError(f"the demo needs torch, transformers and tokenizers: {exc}") from exc
    built = time.time() - t0
    con.print(f"[bold]model[/bold] {model}  ({built:.1f} s)")
    prep = api.prepare(model, model / "eval.txt", max_tokens)
    res_dir = workdir / "results"
    from provenance.store import open_store

    # every engine run is a recorded `prov exec` run; the demo keeps its own store
    store = open_store(os.environ.get("PROV_STORE") or workdir / "store")
    launcher = launcher(store=store)
    figures: dict = {"model": str(model), "model_digest": prep.model_digest,
                     "tokens": int(len(prep.ids)), "build_seconds": round(built, 1)}
    try:
        rep = api.run_repeat(api.EngineConfig.parse("transformers:attn=sdpa"), prep, REPEATS,
                             res_dir / ".work-repeat", res_dir / "repeat-sdpa",
                             launcher=launcher, check=gate_check([], store))
        if not as_json:
            render_repeat(rep.verdict, "transformers:attn=sdpa", REPEATS, rep.result_path, con)
        figures["repeat"] = rep.verdict
        for dtype in DTYPES:
            ref = api.EngineConfig.parse(f"transformers:attn=eager,dtype={dtype}")
            cand = api.EngineConfig.parse(f"transformers:attn=sdpa,dtype={dtype}")
            div = api.run_diverge(ref, cand, prep, res_dir / f".work-{dtype}",
                                  res_dir / f"diverge-eager-sdpa-{dtype}", launcher=launcher,
                                  check=gate_check(["attention-backend"], store),
                                  repeat_check=gate_check([], store))
            if not as_json:
                render_diverge(div.summary, ref.spec, cand.spec, div.result_path, con)
            s = div.summary
            figures[f"diverge_{dtype}"] = {
                "top1_agreement": s["top1_agreement"], "first_disagreement":
                s["first_disagreement"], "mean_kl": s["kl_ref_cand"]["mean"],
                "max_kl": s["kl_ref_cand"]["max"], "clusters": len(s["clusters"]),
                "noise_floor_max_kl": s["noise_floor"]["kl_ref_cand"]["max"],
                "result": str(div.result_path)}
    except (api.LaunchError, api.EngineError, api.DisclosureError) as exc:
        raise ProvError(str(exc), 3) from exc
    figures["seconds"] = round(time.time() - t0, 1)
    figures["store"] = str(store.root)
    if as_json:
        print_json(figures)
    else:
        con.print(f"demo done in {figures['seconds']} s; results under {res_dir}")
