"""An independent float64 recomputation of a divergence summary from the stored scores, with
numpy and scipy only (nothing of runners/ is imported): the oracle the engine tests and the
analysis tests hold `summary` to.

Definitions, from the anchors: llama.cpp's --kl-divergence (mean with the standard error of
the mean, scipy.stats.sem; percentiles by linear interpolation; "Same top p" with
sqrt(p (1 - p) / (n - 1)); RMS Delta-p with 0.5 / RMS * sem(Delta-p^2); PPL(Q)/PPL(base) with
the errors from the covariance of the two negative log-likelihoods) and exllamav3's
model_diff (ordered top-K lists equal; label in top-K; KL by the reference's top-1
probability). Ties in a top-K list: numpy's stable argsort (the lower id first).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

PCTS = {"p99.9": 99.9, "p99": 99, "p95": 95, "p90": 90, "p75": 75, "p50": 50, "median": 50,
        "p25": 25, "p10": 10, "p5": 5, "p1": 1, "p0.1": 0.1}
BUCKETS = {"[0,0.5)": (0, 0.5), "[0.5,0.9)": (0.5, 0.9), "[0.9,0.99)": (0.9, 0.99),
           "[0.99,1]": (0.99, 1.01)}


def logprobs(scores: np.ndarray) -> np.ndarray:
    """float64 log-probabilities: full rows renormalised, rows with NaN kept as returned."""
    x = scores.astype(np.float64)
    full = ~np.isnan(x).any(axis=1)
    x[full] = special.log_softmax(x[full], axis=1)
    return x


def kl(lp: np.ndarray, lq: np.ndarray) -> np.ndarray:
    """KL(P||Q) per row; rows with NaN: the ids both returned plus one residual bucket."""
    out = np.empty(len(lp))
    full = ~(np.isnan(lp).any(1) | np.isnan(lq).any(1))
    out[full] = special.rel_entr(np.exp(lp[full]), np.exp(lq[full])).sum(axis=1)
    t = ~full
    if t.any():
        kept = ~np.isnan(lp[t]) & ~np.isnan(lq[t])
        p = np.where(kept, np.exp(np.where(kept, lp[t], 0)), 0.0)
        q = np.where(kept, np.exp(np.where(kept, lq[t], 0)), 0.0)
        pr, qr = 1 - p.sum(1), 1 - q.sum(1)
        out[t] = special.rel_entr(p, q).sum(1) + special.rel_entr(np.clip(pr, 0, 1),
                                                                 np.clip(qr, 1e-300, 1))
    return out


def top_lists(scores: np.ndarray, k: int = 10) -> np.ndarray:
    x = np.where(np.isnan(scores), -np.inf, scores.astype(np.float64))
    return np.argsort(-x, axis=1, kind="stable")[:, :k]


def distribution(v: np.ndarray) -> dict:
    out = {"mean": v.mean(), "max": v.max(), "min": v.min(), "stderr": stats.sem(v)}
    out.update({k: np.percentile(v, p) for k, p in PCTS.items()})
    return out


def perplexity(lp_ref: np.ndarray, lp_cand: np.ndarray) -> dict:
    a, b = -lp_cand, -lp_ref  # llama.cpp's Q (candidate) and base (reference)
    n = len(a)
    sa, sb = stats.sem(a), stats.sem(b)
    ln = a.mean() - b.mean()
    pa, pb = math.exp(a.mean()), math.exp(b.mean())
    # llama.cpp: sqrt(sa^2 + sb^2 - 2 cov), cov = np.cov(a, b)[0, 1] / n, the covariance of
    # the two means; that is the standard error of the mean of a - b (resp. pa a - pb b),
    # which loses nothing to cancellation when the two sides nearly agree
    cov = np.cov(a, b)[0, 1] / n
    ln_err = stats.sem(a - b)
    # (llama.cpp's form agrees up to its cancellation: rounding of sa^2 + sb^2)
    assert math.isclose(ln_err ** 2, sa ** 2 + sb ** 2 - 2 * cov, rel_tol=1e-3,
                        abs_tol=1e-9 * (sa ** 2 + sb ** 2))
    return {"ref": (pb, pb * sb), "cand": (pa, pa * sa), "ln_ratio": (ln, ln_err),
            "ratio": (math.exp(ln), math.exp(ln) * ln_err),
            "difference": (pa - pb, stats.sem(pa * a - pb * b)),
            "cor_ln": stats.pearsonr(a, b)[0], "labels": n}


def expected(ref: np.ndarray, cand: np.ndarray, ids: np.ndarray, depth: dict | None = None
             ) -> dict:
    """The figures a summary must hold for these scores (depth: per side, None for the full
    vocabulary or how many top entries it returned)."""
    depth = depth or {"ref": None, "cand": None}
    nxt = np.asarray(ids[1:])
    rows = np.arange(len(ref))
    lp, lq = logprobs(ref), logprobs(cand)
    agree = top_lists(ref, 1)[:, 0] == top_lists(cand, 1)[:, 0]
    n = len(agree)
    tr, tc = top_lists(ref), top_lists(cand)
    same_run = np.cumprod(tr == tc, axis=1).sum(axis=1)
    known = {s: 10 ** 9 if d is None else d for s, d in depth.items()}
    p_top1 = np.exp(np.nanmax(lp, axis=1))
    kl_rc, kl_cr = kl(lp, lq), kl(lq, lp)
    dp = np.exp(lq[rows, nxt]) - np.exp(lp[rows, nxt])
    out = {
        "top1_agreement": agree.mean(),
        "same_top_p": {"value": agree.mean(), "stderr": math.sqrt(
            agree.mean() * (1 - agree.mean()) / (n - 1))},
        "topk_agreement": {str(k): (same_run >= k).mean() if min(known.values()) >= k
                           else None for k in (1, 5, 10)},
        "label_in_topk": {s: {str(k): (t[:, :k] == nxt[:, None]).any(1).mean()
                              if known[s] >= k else None for k in (1, 5, 10)}
                          for s, t in (("ref", tr), ("cand", tc))},
        "kl_ref_cand": distribution(kl_rc), "kl_cand_ref": distribution(kl_cr),
        "kl_by_confidence": {}, "arrays": {"kl_ref_cand": kl_rc, "kl_cand_ref": kl_cr,
                                           "delta_p": dp, "ref_p_top1": p_top1},
    }
    if not np.isnan(dp).any():
        d = distribution(dp)
        rms = math.sqrt(np.mean(dp ** 2))
        out["delta_p"] = {**d, "rms": rms, "rms_stderr": 0.5 / rms * stats.sem(dp ** 2)}
        out["perplexity"] = perplexity(lp[rows, nxt], lq[rows, nxt])
    for name, (lo, hi) in BUCKETS.items():
        m = (p_top1 >= lo) & (p_top1 < hi)
        out["kl_by_confidence"][name] = {
            "count": int(m.sum()), "share": m.mean(),
            "kl_ref_cand": (kl_rc[m].mean(), np.median(kl_rc[m])) if m.any() else None}
    return out


def noise(ref: np.ndarray, repeat: np.ndarray, ids: np.ndarray) -> dict:
    """The noise floor's figures: every position compared, bytes first."""
    same = np.array([a.tobytes() == b.tobytes() for a, b in zip(ref, repeat, strict=True)])
    lp, lq = logprobs(ref), logprobs(repeat)
    kl_rc, kl_cr = kl(lp, lq), kl(lq, lp)
    both = ~np.isnan(ref) & ~np.isnan(repeat)
    delta = np.abs(np.where(both, ref.astype(np.float64) - repeat, 0.0)).max()
    agree = top_lists(ref, 1)[:, 0] == top_lists(repeat, 1)[:, 0]
    return {"bit_identical_positions": int(same.sum()), "bit_identical": bool(same.all()),
            "kl_ref_cand": {"mean": kl_rc.mean(), "max": kl_rc.max(),
                            "p99": np.percentile(kl_rc, 99)},
            "kl_cand_ref": {"mean": kl_cr.mean(), "max": kl_cr.max()},
            "top1_agreement": agree.mean(), "max_abs_logit_delta": delta}


def close(got, want, what: str, rel: float = 1e-7, abs_: float = 1e-12) -> None:
    assert isinstance(got, int | float) and not isinstance(got, bool), (what, got)
    assert math.isclose(got, want, rel_tol=rel, abs_tol=abs_), (what, got, want)


def check_summary(s: dict, e: dict, rel: float = 1e-7, abs_: float = 1e-12) -> None:
    """Every figure of summary `s` against the oracle's `e`; a None in `e` must be the
    not-computable marker in `s`."""
    close(s["top1_agreement"], e["top1_agreement"], "top1_agreement", 0, 0)
    for k in ("value", "stderr"):
        close(s["same_top_p"][k], e["same_top_p"][k], f"same_top_p.{k}", 1e-12)
    for k, v in e["topk_agreement"].items():
        if v is None:
            assert "not_computable" in s["topk_agreement"][k], k
        else:
            close(s["topk_agreement"][k], v, f"topk_agreement.{k}", 0, 0)
    for side, per in e["label_in_topk"].items():
        for k, v in per.items():
            if v is None:
                assert "not_computable" in s["label_in_topk"][side][k], (side, k)
            else:
                close(s["label_in_topk"][side][k], v, f"label_in_topk.{side}.{k}", 0, 0)
    for key in ("kl_ref_cand", "kl_cand_ref", "delta_p"):
        if key not in e:
            assert "not_computable" in s[key], key
            continue
        for stat, v in e[key].items():
            close(s[key][stat], v, f"{key}.{stat}", rel, abs_)
    for name, b in e["kl_by_confidence"].items():
        got = s["kl_by_confidence"][name]
        assert got["count"] == b["count"], (name, got, b)
        close(got["share"], b["share"], f"share {name}", 1e-12)
        if b["kl_ref_cand"] is None:
            assert "not_computable" in got["kl_ref_cand"]
        else:
            close(got["kl_ref_cand"]["mean"], b["kl_ref_cand"][0], f"mean {name}", rel, abs_)
            close(got["kl_ref_cand"]["median"], b["kl_ref_cand"][1], f"median {name}", rel,
                  abs_)
    if "perplexity" not in e:
        assert "not_computable" in s["perplexity"]
        return
    ppl = e["perplexity"]
    assert s["perplexity"]["labels"] == ppl["labels"]
    for k in ("ref", "cand", "ln_ratio", "ratio", "difference"):
        close(s["perplexity"][k]["value"], ppl[k][0], f"perplexity.{k}", 1e-9, 1e-12)
        close(s["perplexity"][k]["stderr"], ppl[k][1], f"perplexity.{k}.stderr", 1e-6, 1e-12)
    close(s["perplexity"]["cor_ln"], ppl["cor_ln"], "cor_ln", 1e-6)


def check_arrays(arrays: dict, e: dict, abs_: float = 1e-12) -> None:
    """The result's per-position arrays against the oracle's."""
    for k, v in e["arrays"].items():
        got = np.asarray(arrays[k], dtype=np.float64)
        assert got.shape == v.shape, k
        same_nan = np.isnan(got) == np.isnan(v)
        assert same_nan.all(), k
        err = np.abs(np.nan_to_num(got) - np.nan_to_num(v)).max() if len(v) else 0.0
        assert err <= abs_, (k, err)
