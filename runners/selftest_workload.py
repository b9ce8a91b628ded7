"""The fixed selftest workload, run under `prov exec`: `python -m runners.selftest_workload`.

Two parts, each with bitwise digests of what it computed:
- model: the demo model's teacher-forced logits and every hidden state, through the
  runners' transformers engine (the same code `prov run` uses);
- kernels: plain torch matmul, reductions, denormal arithmetic and numpy (BLAS matmul,
  pairwise sum, SIMD transcendental functions) on seeded inputs.

Settings a script makes inside its own process (threads, oneDNN, flush-denormal, TF32) are
applied here on request, and reported, as the runners do, through run facts
(`runtime.transformers.*`, `runtime.torch.*`). The digests go to OUT/digests.json with the
run id, so the selftest never has to guess which run produced them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any


def _digest(*arrays: Any) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(a.tobytes())
    return "sha256:" + h.hexdigest()


def _tensor_bytes(t):
    import torch

    t = t.detach().contiguous().cpu()
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.view(width).numpy()


def apply_settings(args: argparse.Namespace) -> None:
    """In-process settings: what a training/eval script might do after start-up."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.no_mkldnn:
        torch.backends.mkldnn.enabled = False
    if args.flush_denormal:
        torch.set_flush_denormal(True)
    if args.tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("high")


def kernels(dtype_name: str, device: str) -> dict[str, str]:
    import numpy as np
    import torch

    dtype = getattr(torch, dtype_name)
    g = torch.Generator().manual_seed(1234)
    a = torch.randn(384, 512, generator=g).to(device=device, dtype=dtype)
    b = torch.randn(512, 320, generator=g).to(device=device, dtype=dtype)
    v = torch.randn(1 << 20, generator=g).to(device=device, dtype=dtype)
    out: dict[str, str] = {}
    out["matmul"] = _digest(_tensor_bytes(a @ b))
    # reductions: the summation order follows the thread count and the vector width
    red = torch.stack([v.sum(), (v * v).sum().sqrt(), v.abs().max(), torch.logsumexp(v, 0)])
    out["reduction"] = _digest(_tensor_bytes(red.float()))
    # denormals: products below FLT_MIN survive unless flush-to-zero/denormals-are-zero is on
    tiny = (torch.rand(4096, generator=g) * 1e-30).to(device=device, dtype=torch.float32)
    den = torch.stack([(tiny * 1e-8).sum(), (tiny * 1e-9).max(), (tiny @ (tiny * 1e-8))])
    out["denormal"] = _digest(_tensor_bytes(den))
    rng = np.random.default_rng(1234)
    x = rng.standard_normal((256, 256))
    y = rng.standard_normal(1 << 18).astype(np.float32)
    z = rng.uniform(-20, 20, 1 << 16)
    out["numpy"] = _digest(
        x @ x.T, np.asarray(y.sum()), np.sin(y), np.exp(y), np.tanh(y), np.log1p(np.abs(y)),
        np.sin(z), np.cos(z), np.exp(z * 0.5), np.arctan(z),
    )
    return out


def model(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, Any]]:
    import numpy as np

    from runners.engines import EngineConfig, load_engine
    from runners.prepare import prepare

    opts = [f"attn={args.attn}", f"dtype={args.dtype}", f"device={args.device}"]
    if args.sdpa_kernel:
        opts.append(f"sdpa_kernel={args.sdpa_kernel}")
    config = EngineConfig.parse("transformers:" + ",".join(opts))
    prep = prepare(Path(args.model), Path(args.model) / "eval.txt", args.tokens)
    res = load_engine(config).score(str(args.model), [int(i) for i in np.asarray(prep.ids)], 64)
    hidden = {k: v for k, v in res.digests.items() if k.startswith("hidden.") or k == "final_norm"}
    def of(doc: Any) -> str:
        return "sha256:" + hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    digests = {"logits": of(res.digests["logits"]), "hidden": of(hidden)}
    return digests, res.runtime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m runners.selftest_workload")
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--tokens", type=int, default=192)
    ap.add_argument("--attn", default="sdpa")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sdpa-kernel", default="")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--no-mkldnn", action="store_true")
    ap.add_argument("--flush-denormal", action="store_true")
    ap.add_argument("--tf32", action="store_true")
    args = ap.parse_args(argv)

    import torch  # noqa: F401  (settings before any computation)

    apply_settings(args)
    digests = kernels(args.dtype, args.device)
    model_digests, _runtime = model(args)  # what ran is read by prov exec's probe
    digests.update(model_digests)
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"run_id": os.environ.get("PROV_RUN_ID"), "digests": digests,
           "numpy": __import__("numpy").__version__, "pid": os.getpid()}
    from provenance.model.atomic import write_atomic

    write_atomic(args.out / "digests.json", json.dumps(doc, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
