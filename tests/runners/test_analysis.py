"""The vectorised analysis against an independent scipy computation on the same numbers."""

import numpy as np
import pytest
from scipy import special, stats

from runners.analysis import block_bootstrap_ci, find_clusters, position_stats, self_kl_floor
from runners.diverge import analyse


def _pair(t=700, v=300, noise=0.4, seed=1):
    rng = np.random.default_rng(seed)
    ref = (rng.normal(size=(t, v)) * 3).astype(np.float32)
    cand = (ref + rng.normal(size=(t, v)) * noise).astype(np.float32)
    ids = rng.integers(0, v, t + 1)
    return ref, cand, ids


def test_matches_scipy():
    ref, cand, ids = _pair()
    st = position_stats(ref, cand, ids[1:])
    lp = special.log_softmax(ref.astype(np.float64), axis=1)
    lq = special.log_softmax(cand.astype(np.float64), axis=1)
    p, q = np.exp(lp), np.exp(lq)
    assert np.allclose(st.kl_ref_cand, stats.entropy(p, q, axis=1), atol=1e-9, rtol=0)
    assert np.allclose(st.kl_cand_ref, stats.entropy(q, p, axis=1), atol=1e-9, rtol=0)
    assert np.array_equal(st.agree, ref.argmax(1) == cand.argmax(1))
    rows = np.arange(len(ref))
    assert np.allclose(st.delta_p, q[rows, ids[1:]] - p[rows, ids[1:]], atol=1e-12)
    top = np.sort(p, axis=1)
    assert np.allclose(st.margin, top[:, -1] - top[:, -2], atol=1e-12)


def test_summary_percentiles_and_first():
    ref, cand, ids = _pair()
    summary, arrays = analyse(ref, cand, ids)
    agree = ref.argmax(1) == cand.argmax(1)
    assert summary["first_disagreement"] == int(np.flatnonzero(~agree)[0])
    assert summary["top1_agreement"] == pytest.approx(agree.mean(), abs=1e-12)
    kl = arrays["kl_ref_cand"]
    assert summary["kl_ref_cand"]["p99"] == pytest.approx(np.percentile(kl, 99))
    ci = summary["ci"]["kl_ref_cand_mean"]
    assert ci["lo"] <= kl.mean() <= ci["hi"]


def test_identical_inputs():
    ref, _, ids = _pair()
    summary, _ = analyse(ref, ref.copy(), ids)
    assert summary["first_disagreement"] is None and summary["clusters"] == []
    assert summary["kl_ref_cand"]["max"] == 0.0


def test_truncated_topk_is_lower_bound_with_residual_bucket():
    ref, cand, ids = _pair(t=50, v=200)
    lp = special.log_softmax(ref.astype(np.float64), axis=1)
    lq = special.log_softmax(cand.astype(np.float64), axis=1)
    full = position_stats(lp, lq, ids[1:]).kl_ref_cand
    k = 20
    tp, tq = np.full_like(lp, np.nan), np.full_like(lq, np.nan)
    for i in range(len(lp)):
        top = np.argsort(-lp[i])[:k]
        tp[i, top], tq[i, top] = lp[i, top], lq[i, top]
    st = position_stats(tp, tq, ids[1:])
    assert st.truncated.all()
    # independent: the k stored ids plus one bucket for the rest, on each side
    p_rest = 1 - np.nansum(np.exp(tp), axis=1)
    q_rest = 1 - np.nansum(np.exp(tq), axis=1)
    head = np.nansum(np.exp(tp) * (tp - tq), axis=1)
    expect = head + p_rest * np.log(p_rest / q_rest)
    assert np.allclose(st.kl_ref_cand, expect, atol=1e-12)
    assert (st.kl_ref_cand <= full + 1e-12).all()


def test_clusters_merge_across_small_gaps():
    agree = np.ones(100, dtype=bool)
    agree[[10, 12, 15, 40, 41, 90]] = False
    kl = np.arange(100, dtype=float)
    cl = find_clusters(agree, kl, gap=4, decode=lambda a, b: f"{a}:{b}")
    assert [(c.start, c.end, c.disagreements) for c in cl] == [(10, 15, 3), (40, 41, 2),
                                                               (90, 90, 1)]
    assert cl[0].text == "11:17" and cl[0].mean_kl == pytest.approx(np.mean(kl[10:16]))


def test_block_bootstrap_ci_widens_with_correlation():
    rng = np.random.default_rng(0)
    iid = rng.normal(size=4096)
    corr = np.repeat(rng.normal(size=128), 32)  # runs of 32 equal values
    a = block_bootstrap_ci(iid, block=32)
    b = block_bootstrap_ci(corr, block=32)
    assert a["lo"] < iid.mean() < a["hi"]
    assert (b["hi"] - b["lo"]) > 3 * (a["hi"] - a["lo"])


def test_self_kl_floor():
    ref, _, _ = _pair(t=20)
    assert self_kl_floor(ref, "float32") == {"mean": 0.0, "max": 0.0}
    assert self_kl_floor(ref, "float16")["max"] > 0
