"""Child-process check for test_fused.py: the Triton kernels (TRITON_INTERPRET=1 on CPU)
against their references; prints one JSON document. Run as a script, never imported by
pytest (torch stays out of the pytest process)."""

import json
import math
import sys

import numpy as np
import torch

from runners.gpu.digest import digest_numpy, digest_triton
from runners.gpu.stats import analyse_fused, analyse_torch


def truth64(r, c, nxt):
    """float64 ground truth (numpy) for the floating outputs."""
    r, c = r.double().numpy(), c.double().numpy()
    def lse(x):
        m = x.max(1, keepdims=True)
        return (m + np.log(np.exp(x - m).sum(1, keepdims=True)))[:, 0]
    lr, lc = r - lse(r)[:, None], c - lse(c)[:, None]
    p, q = np.exp(lr), np.exp(lc)
    rows = np.arange(len(r))
    top = np.sort(p, 1)
    return {"lse_ref": lse(r), "lse_cand": lse(c), "kl_ref_cand": (p * (lr - lc)).sum(1),
            "kl_cand_ref": (q * (lc - lr)).sum(1), "margin": top[:, -1] - top[:, -2],
            "delta_p": q[rows, nxt] - p[rows, nxt]}


def compare(fused, ref, t64, r, v, block_v, variant) -> dict:
    case = {"v": v, "block_v": block_v, "variant": variant,
            "top1_equal": bool(torch.equal(fused["ref_top1"], ref["ref_top1"])
                               and torch.equal(fused["cand_top1"], ref["cand_top1"])),
            "top1_equal_numpy": bool(np.array_equal(fused["ref_top1"].numpy(),
                                                    r.float().numpy().argmax(1))),
            "identical_row_kl": [float(fused["kl_ref_cand"][1]),
                                 float(fused["kl_cand_ref"][1])],
            "log2v": math.log2(v), "err": {}}
    for k, truth in t64.items():
        case["err"][k] = {
            "fused_vs_ref": float((fused[k].double() - ref[k].double()).abs().max()),
            "fused_vs_f64": float(np.abs(fused[k].double().numpy() - truth).max()),
            "ref_vs_f64": float(np.abs(ref[k].double().numpy() - truth).max()),
            "scale": float(np.abs(truth).max()),
        }
    return case


def main() -> None:
    g = torch.Generator().manual_seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    report = {"stats": [], "digest": []}
    # vocab not a multiple of the block, ties in bf16, one identical row, one row whose
    # maximum sits in the last partial block, one row of many exact ties
    for n, v, block_v, scale, noise in [(7, 1000, 256, 3.0, 0.05), (5, 3001, 512, 8.0, 0.5),
                                        (4, 4096, 4096, 1.0, 0.01)]:
        r = (torch.randn(n, v, generator=g) * scale).to(torch.bfloat16)
        c = (r.float() + torch.randn(n, v, generator=g) * noise).to(torch.bfloat16)
        c[1] = r[1]
        r[2, v - 1] = r[2].float().max() + 1  # maximum in the last (partial) block
        r[3, :] = torch.round(r[3].float())  # many exact ties
        nxt = torch.randint(0, v, (n,), generator=g)
        ref = analyse_torch(r, c, nxt, chunk_rows=3)
        t64 = truth64(r, c, nxt.numpy())
        for variant in ("block", "lanes"):
            fused = analyse_fused(r, c, nxt, block_v=block_v, num_warps=4, variant=variant)
            report["stats"].append(compare(fused, ref, t64, r, v, block_v, variant))
    for shape, dtype, block, splits, chunk in [((70, 33), torch.bfloat16, 16, 3, 64),
                                               ((10, 7), torch.float32, 4, 2, 16),
                                               ((1, 1), torch.float16, 8, 4, 16)]:
        x = torch.randn(*shape, generator=g).to(dtype)
        raw = x.view({2: torch.int16, 4: torch.int32}[x.element_size()]).numpy()
        host = digest_numpy(raw, block)
        dev = digest_triton(x, block, splits=splits, chunk=chunk)
        y = x.clone()
        y.view(torch.int16).view(-1)[-1] ^= 1  # flip the lowest bit of the last word
        flipped = digest_triton(y, block, splits=splits, chunk=chunk)
        report["digest"].append({"shape": list(shape), "equal": host == dev, "n": len(dev),
                                 "flip_changes_last_only": flipped[:-1] == dev[:-1]
                                 and flipped[-1] != dev[-1]})
    print(json.dumps(report))


if __name__ == "__main__":
    main()
