"""Summary figures from per-position values, as the anchors define them.

llama.cpp's --kl-divergence (tools/perplexity/perplexity.cpp): the mean with its standard
error (`mean_and_uncertainty`: sqrt(var / (n - 1)), var the population variance, reported
only for n > 10), "Same top p" with its binomial error sqrt(p (1 - p) / (n - 1)), RMS
Delta-p with error 0.5 / RMS * stderr(Delta-p^2), and the perplexity statistics over the
actual next tokens (PPL(Q) = the candidate's, PPL(base) = the reference's). exllamav3's
model_diff (eval/model_diff.py): top-K agreement (the ordered top-K id lists equal), the
label in each side's top-K, and KL by how confident the reference is.

What the evidence cannot give is `{"not_computable": REASON}` (the policy's marker), never
an estimate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from provenance.model.policy import not_computable
from runners.analysis.agreement import percentiles

TOP_K = (1, 5, 10)  # exllamav3's model_diff prints K = 1 .. topk_max; these three here
# the reference's top-1 probability: [lo, hi) buckets, the last one closed
CONFIDENCE = ((0.0, 0.5), (0.5, 0.9), (0.9, 0.99), (0.99, 1.0))
MIN_FOR_ERROR = 11  # llama.cpp reports an uncertainty only for count > 10


def _label(lo: float, hi: float) -> str:
    return f"[{lo:g},{hi:g}]" if hi == 1.0 else f"[{lo:g},{hi:g})"


CONFIDENCE_LABELS = tuple(_label(lo, hi) for lo, hi in CONFIDENCE)


def stderr(v: np.ndarray) -> float | dict[str, str]:
    """llama.cpp's uncertainty of the mean: sqrt(var / (n - 1)), var = mean((v - mean)^2)
    (computed in two passes; the same quantity as its sum-of-squares form)."""
    n = len(v)
    if n < MIN_FOR_ERROR:
        return not_computable(f"{n} positions: llama.cpp's standard error needs more than 10")
    var = float(np.mean((v - v.mean()) ** 2))
    return math.sqrt(var / (n - 1))


def distribution(values: np.ndarray) -> dict[str, Any]:
    """Percentile table (agreement.percentiles) plus the standard error of the mean."""
    v = np.asarray(values, dtype=np.float64)
    return {**percentiles(v), "stderr": stderr(v)}


def delta_p(dp: np.ndarray) -> dict[str, Any]:
    """llama.cpp's token probability statistics: Delta-p = p_cand(next) - p_ref(next)."""
    bad = int(np.isnan(dp).sum())
    if bad:
        return not_computable(f"the actual next token's probability is missing at {bad} of "
                              f"{len(dp)} positions (top-k storage)")
    out = distribution(dp)
    rms = math.sqrt(float(np.mean(dp ** 2)))
    mse_err = stderr(dp ** 2)
    out["rms"] = rms
    out["rms_stderr"] = mse_err if isinstance(mse_err, dict) else (
        0.5 / rms * mse_err if rms > 0 else 0.0)
    return out


def same_top_p(agree: np.ndarray) -> dict[str, Any]:
    """llama.cpp's "Same top p": the share of positions whose top tokens are the same (the
    quantity `top1_agreement` is), with the binomial error sqrt(p (1 - p) / (n - 1))."""
    n = len(agree)
    p = float(np.mean(agree))
    err = math.sqrt(p * (1 - p) / (n - 1)) if n > 1 else not_computable(
        "one position: no error")
    return {"value": p, "stderr": err, "count": n, "same": int(np.sum(agree))}


SIDES = {"ref": "reference", "cand": "candidate"}


def _short(side: str, depth: int | None, k: int, vocab: int) -> str | None:
    """Why `side`'s top-k list is unknown, or None when it is known. depth: how many of its
    top entries per position a truncated side returned; None for the full vocabulary."""
    if depth is None:
        return None if vocab >= k else f"the vocabulary has {vocab} tokens, fewer than {k}"
    if depth >= k:
        return None
    return (f"the {SIDES[side]} returned only its top {depth} log-probabilities per position "
            f"(top-k storage): its top-{k} list is unknown")


def topk_agreement(depth_arr: np.ndarray, depth: dict[str, int | None], vocab: int
                   ) -> dict[str, Any]:
    """K -> share of positions whose ordered top-K id lists are equal (exllamav3's "Top-K
    agreement"); depth_arr: per position, how many leading slots agree."""
    out: dict[str, Any] = {}
    for k in TOP_K:
        why = next((w for s in SIDES if (w := _short(s, depth[s], k, vocab))), None)
        out[str(k)] = float(np.mean(depth_arr >= k)) if why is None else not_computable(why)
    return out


def label_in_topk(ranks: dict[str, np.ndarray], depth: dict[str, int | None], vocab: int
                  ) -> dict[str, Any]:
    """side -> K -> share of positions whose actual next token is in that side's top-K
    (exllamav3's "label in top-K")."""
    out: dict[str, Any] = {}
    for side in SIDES:
        out[side] = {}
        for k in TOP_K:
            why = _short(side, depth[side], k, vocab)
            out[side][str(k)] = float(np.mean(ranks[side] < k)) if why is None \
                else not_computable(why)
    return out


def by_confidence(p_top1: np.ndarray, kl_rc: np.ndarray, kl_cr: np.ndarray
                  ) -> dict[str, Any]:
    """KL split by the reference's top-1 probability (exllamav3's model_diff: the mean is
    dominated by positions where the reference is undecided)."""
    n = len(p_top1)
    out: dict[str, Any] = {}
    for (lo, hi), name in zip(CONFIDENCE, CONFIDENCE_LABELS, strict=True):
        m = (p_top1 >= lo) & ((p_top1 < hi) if hi < 1.0 else np.ones(n, bool))
        c = int(m.sum())
        entry: dict[str, Any] = {"count": c, "share": c / n if n else 0.0}
        for key, kl in (("kl_ref_cand", kl_rc), ("kl_cand_ref", kl_cr)):
            entry[key] = ({"mean": float(kl[m].mean()), "median": float(np.median(kl[m]))}
                          if c else not_computable("no position in this bucket"))
        out[name] = entry
    return out


def _value(v: float, err: float | dict) -> dict[str, Any]:
    return {"value": v, "stderr": err}


def perplexity(lp_ref: np.ndarray, lp_cand: np.ndarray) -> dict[str, Any]:
    """llama.cpp's perplexity statistics over the actual next tokens (teacher forcing: the
    next token is the label): each side's PPL, PPL(cand)/PPL(ref) and its logarithm, the
    difference, each with llama.cpp's error, and Cor(ln PPL(cand), ln PPL(ref)): its
    covariance of the two means over the product of their standard errors, which is the
    Pearson correlation of the two sides' per-position negative log-likelihoods."""
    n = len(lp_ref)
    for side, lp in (("reference", lp_ref), ("candidate", lp_cand)):
        miss = int(np.isnan(lp).sum())
        if miss:
            return not_computable(f"the {side} did not return the actual next token's "
                                  f"log-probability at {miss} of {n} positions (top-k storage)")
        if np.isinf(lp).any():
            return not_computable(f"the {side} gives the actual next token probability 0 "
                                  "somewhere: the perplexity is infinite")
    a, b = -np.asarray(lp_cand, np.float64), -np.asarray(lp_ref, np.float64)  # Q, base
    ma, mb = float(a.mean()), float(b.mean())
    out: dict[str, Any] = {"labels": n,
                           "ref": _value(math.exp(mb), 0.0), "cand": _value(math.exp(ma), 0.0),
                           "ln_ratio": _value(ma - mb, 0.0), "ratio": _value(math.exp(ma - mb),
                                                                             0.0)}
    ea, eb = stderr(a), stderr(b)
    if isinstance(ea, dict) or isinstance(eb, dict):
        for k in ("ref", "cand", "ln_ratio", "ratio"):
            out[k]["stderr"] = ea
        out["difference"] = _value(out["cand"]["value"] - out["ref"]["value"], ea)
        out["cor_ln"] = ea
        return out
    cov = float(np.mean((a - ma) * (b - mb))) / (n - 1)  # llama.cpp's `covariance`
    ppl_a, ppl_b = math.exp(ma), math.exp(mb)
    # llama.cpp's sqrt(ea^2 + eb^2 - 2 cov) is the standard error of the mean of a - b:
    # computed so, without the cancellation when the two sides nearly agree (cov ~ ea eb)
    ln_err = stderr(a - b)
    out["ref"]["stderr"], out["cand"]["stderr"] = ppl_b * eb, ppl_a * ea
    out["ln_ratio"]["stderr"] = ln_err
    out["ratio"]["stderr"] = out["ratio"]["value"] * ln_err
    out["difference"] = _value(ppl_a - ppl_b, stderr(ppl_a * a - ppl_b * b))
    out["cor_ln"] = cov / (ea * eb) if ea > 0 and eb > 0 else not_computable(
        "a side's negative log-likelihood does not vary: no correlation")
    return out
