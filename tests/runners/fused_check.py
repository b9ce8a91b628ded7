"""Child-process check for test_fused.py: the Triton kernels (TRITON_INTERPRET=1 on CPU)
against their references; prints one JSON document. Run as a script, never imported by
pytest (torch stays out of the pytest process)."""

import json
import math
import sys

import numpy as np
import torch

from bench.gpu.variants import analyse_torch  # the torch reference (bench-only code)
from runners.gpu.digest import digest_many, digest_numpy, digest_triton
from runners.gpu.fused import analyse_fused as _analyse_fused

# argv: [seed] [device]: "cpu" under TRITON_INTERPRET=1 (CI), "cuda" on a GPU (the bench
# machine): the kernels run on DEVICE, the references and comparisons on the host
DEVICE = sys.argv[2] if len(sys.argv) > 2 else "cpu"


def analyse_fused(r, c, nxt, **kw) -> dict:
    out = _analyse_fused(r.to(DEVICE), c.to(DEVICE), nxt.to(DEVICE), **kw)
    return {k: v.cpu() for k, v in out.items()}


def on_device(fn, x, *args, **kw):
    return fn(x.to(DEVICE), *args, **kw)


VARIANTS = [("online", {})]  # the runner's one kernel (the bench times the baselines)


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


def neg_inf_case(g) -> list:
    """Masked vocabulary (-inf in both at the same ids), a -inf only in the candidate where
    the reference has mass (KL(r||c) = inf), and a row with a single finite logit: every
    variant must give what the torch reference gives, infinities included."""
    n, v = 4, 700
    r = torch.randn(n, v, generator=g).to(torch.bfloat16)
    c = (r.float() + 0.1 * torch.randn(n, v, generator=g)).to(torch.bfloat16)
    r[:, 600:] = float("-inf")
    c[:, 600:] = float("-inf")
    c[1, 5] = float("-inf")
    r[2, :] = float("-inf")
    r[2, 300] = 1.0
    r[3, :50] = float("-inf")
    nxt = torch.randint(0, 600, (n,), generator=g)
    ref = analyse_torch(r, c, nxt)
    cases = []
    for variant, kw in VARIANTS:
        fused = analyse_fused(r, c, nxt, block_v=256, num_warps=4, **kw)
        close = {k: bool(torch.allclose(fused[k].double(), ref[k].double(), rtol=1e-4,
                                        atol=1e-5, equal_nan=True))
                 for k in ("lse_ref", "lse_cand", "kl_ref_cand", "kl_cand_ref", "margin",
                           "delta_p")}
        cases.append({"variant": variant, "close": close,
                      "kl_inf": bool(torch.isinf(fused["kl_ref_cand"][1])),
                      "top1_equal": bool(torch.equal(fused["ref_top1"], ref["ref_top1"])
                                         and torch.equal(fused["cand_top1"], ref["cand_top1"]))})
    return cases


def main() -> None:
    g = torch.Generator().manual_seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    report = {"stats": [], "digest": []}
    # vocab not a multiple of the block, ties in bf16, one identical row, one row whose
    # maximum sits in the last partial block, one row of many exact ties
    # (the last: a vocabulary smaller than one block, so only the masked tail runs)
    for n, v, block_v, scale, noise in [(7, 1000, 256, 3.0, 0.05), (5, 3001, 512, 8.0, 0.5),
                                        (4, 4096, 4096, 1.0, 0.01), (4, 100, 256, 2.0, 0.1)]:
        r = (torch.randn(n, v, generator=g) * scale).to(torch.bfloat16)
        c = (r.float() + torch.randn(n, v, generator=g) * noise).to(torch.bfloat16)
        c[1] = r[1]
        r[2, v - 1] = r[2].float().max() + 1  # maximum in the last (partial) block
        r[3, :] = torch.round(r[3].float())  # many exact ties
        nxt = torch.randint(0, v, (n,), generator=g)
        ref = analyse_torch(r, c, nxt, chunk_rows=3)
        t64 = truth64(r, c, nxt.numpy())
        for variant, kw in VARIANTS:
            fused = analyse_fused(r, c, nxt, block_v=block_v, num_warps=4, **kw)
            report["stats"].append(compare(fused, ref, t64, r, v, block_v, variant))
    report["neg_inf"] = neg_inf_case(g)
    # shapes: 16-bit words per block even (the kernel reads the tensor in place), odd (a
    # zero-padded copy: 33 x 16 rows, 3 x 3 rows, one lone value), fp32 words
    for shape, dtype, block, splits, chunk in [((70, 33), torch.bfloat16, 16, 3, 64),
                                               ((70, 34), torch.bfloat16, 16, 3, 64),
                                               ((10, 7), torch.float32, 4, 2, 16),
                                               ((8, 3), torch.bfloat16, 3, 2, 16),
                                               ((1, 1), torch.float16, 8, 4, 16)]:
        x = torch.randn(*shape, generator=g).to(dtype)
        raw = x.view({2: torch.int16, 4: torch.int32}[x.element_size()]).numpy()
        host = digest_numpy(raw, block)
        dev = on_device(digest_triton, x, block, splits=splits, chunk=chunk)
        y = x.clone()
        y.view(torch.int16).view(-1)[-1] ^= 1  # flip the lowest bit of the last word
        flipped = on_device(digest_triton, y, block, splits=splits, chunk=chunk)
        many = digest_many([x.to(DEVICE), y.to(DEVICE)], block, splits=splits, chunk=chunk)
        default = digest_many([x.to(DEVICE)], block)[0]  # default splits, chunk, warps
        report["digest"].append({"shape": list(shape), "equal": host == dev == default,
                                 "n": len(dev), "many_equal": many == [dev, flipped],
                                 "flip_changes_last_only": flipped[:-1] == dev[:-1]
                                 and flipped[-1] != dev[-1]})
    # a strided (transposed) tensor is digested as its contiguous copy
    x = torch.randn(12, 6, generator=g).to(torch.bfloat16).t()
    report["digest_strided_equal"] = on_device(digest_triton, x, 4) == digest_numpy(
        x.contiguous().view(torch.int16).numpy(), 4)
    report["device"] = DEVICE
    print(json.dumps(report))


if __name__ == "__main__":
    main()
