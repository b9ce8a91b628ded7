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


# ---- every figure of the summary against the float64 oracle (tests/runners/oracle.py) ------

def _tied_pair(t=700, v=300, seed=3):
    """Logits on a coarse grid (many ties, across the 10th place too) and a candidate that
    moves some of them by one step."""
    rng = np.random.default_rng(seed)
    ref = rng.integers(-12, 12, size=(t, v)).astype(np.float32) / 4
    cand = ref + (rng.random((t, v)) < 0.05) * np.float32(0.25)
    return ref, cand.astype(np.float32), rng.integers(0, v, t + 1)


@pytest.mark.parametrize("pair", [_pair, _tied_pair])
def test_every_figure_matches_the_float64_oracle(pair):
    from tests.runners import oracle

    ref, cand, ids = pair()
    summary, arrays = analyse(ref, cand, ids)
    e = oracle.expected(ref, cand, ids)
    oracle.check_summary(summary, e)
    oracle.check_arrays(arrays, e, abs_=1e-12)
    tr, tc = oracle.top_lists(ref), oracle.top_lists(cand)
    assert np.array_equal(arrays["top_agree_depth"], np.cumprod(tr == tc, 1).sum(1))
    assert summary["kl_lower_bound"] is False
    assert summary["noise_floor"] == {"not_computable": "no repeat of the reference was "
                                                        "analysed"}
    for key in ("kl_ref_cand_mean", "kl_cand_ref_mean"):
        ci = summary["ci"][key]
        assert ci["lo"] <= summary[key[:-5]]["mean"] <= ci["hi"]


@pytest.mark.parametrize("vocab", [300, 3072, 4000])
def test_the_tie_rule_is_the_stable_order(vocab):
    """Exact lists where ties across the 10th place are common (logits on a 1/16 grid, as
    bf16 holds them near 10): without the block prefilter (300 ids: fewer than 23 blocks of
    128), with it (3,072 = 24 blocks), with a partial last block (4,000 = 31 x 128 + 32),
    rows all equal (where the prefilter gives up and does the whole row) and rows an engine
    returned only partly (NaN: unfilled slots -1)."""
    from runners.analysis.topk import BLOCK, _prefilter, top_ids

    rng = np.random.default_rng(vocab)
    x = (np.round(rng.normal(size=(200, vocab)) * 48) / 16).astype(np.float32)
    x[:3] = 1.0
    x[3:6, 5:] = np.nan
    full = np.where(np.isnan(x), -np.inf, x)
    want = np.argsort(-full, axis=1, kind="stable")[:, :11]
    top = np.take_along_axis(full, want, axis=1)
    tied = top[:, 9] == top[:, 10]
    if vocab // BLOCK > 22:  # the prefilter held for the tied rows, and gave up on others
        _, whole = _prefilter(full, 10, vocab // BLOCK)
        assert (tied[6:] & ~whole[6:]).sum() > 20 and whole[:3].all()
    want = want[:, :10]
    want[3:6, 5:] = -1  # only 5 entries returned there
    assert np.array_equal(top_ids(x, 10), want)


def test_the_tie_rule_on_a_coarse_grid():
    ref, _, _ = _tied_pair()
    from runners.analysis.topk import top_ids

    srt = -np.sort(-ref, axis=1)
    assert (srt[:, 9] == srt[:, 10]).sum() > 100
    assert np.array_equal(top_ids(ref, 10), np.argsort(-ref, axis=1, kind="stable")[:, :10])


def test_truncated_side_marks_what_it_cannot_give():
    """A vLLM-style candidate: its top 8 plus the actual next token, NaN elsewhere."""
    from tests.runners import oracle

    ref, cand, ids = _pair(t=60, v=200)
    lq = special.log_softmax(cand.astype(np.float64), axis=1)
    tq = np.full_like(lq, np.nan)
    rows = np.arange(len(lq))
    top = np.argsort(-lq, axis=1, kind="stable")[:, :8]
    tq[rows[:, None], top] = lq[rows[:, None], top]
    tq[rows, ids[1:]] = lq[rows, ids[1:]]
    tq = tq.astype(np.float32)
    summary, arrays = analyse(ref, tq, ids, topk=(None, 8))
    e = oracle.expected(ref, tq, ids, depth={"ref": None, "cand": 8})
    oracle.check_summary(summary, e)
    oracle.check_arrays(arrays, e)
    assert summary["topk_agreement"]["10"] == {"not_computable": (
        "the candidate returned only its top 8 log-probabilities per position (top-k "
        "storage): its top-10 list is unknown")}
    assert "not_computable" in summary["label_in_topk"]["cand"]["10"]
    assert isinstance(summary["label_in_topk"]["ref"]["10"], float)
    assert summary["kl_lower_bound"] is True and summary["truncated_positions"] == 60
    # without the configured k: the fewest entries returned less one (8 or 9 returned here)
    s2, _ = analyse(ref, tq, ids)
    assert "top 7 log-probabilities" in s2["topk_agreement"]["10"]["not_computable"]
    # the actual next token missing somewhere: no Delta-p, no perplexity, never a guess
    tq[5, ids[6]] = np.nan
    s3, a3 = analyse(ref, tq, ids, topk=(None, 8))
    assert "missing at 1 of 60 positions" in s3["delta_p"]["not_computable"]
    assert "at 1 of 60 positions" in s3["perplexity"]["not_computable"]
    assert np.isnan(a3["delta_p"][5]) and not np.isnan(np.delete(a3["delta_p"], 5)).any()


def test_noise_floor_is_zero_for_a_bit_identical_repeat_and_measured_otherwise():
    from tests.runners import oracle

    ref, _, ids = _pair()
    s, _ = analyse(ref, ref, ids, repeat=ref.copy())
    nf = s["noise_floor"]
    assert nf["bit_identical"] and nf["bit_identical_positions"] == len(ref)
    assert nf["kl_ref_cand"] == {"mean": 0.0, "p99": 0.0, "max": 0.0}
    assert (nf["top1_agreement"], nf["max_abs_logit_delta"]) == (1.0, 0.0)
    rep = ref.copy()
    rng = np.random.default_rng(9)
    moved = rng.choice(len(ref), 40, replace=False)
    rep[moved] += rng.normal(size=(40, ref.shape[1])).astype(np.float32) * 0.3
    s, _ = analyse(ref, ref, ids, repeat=rep)
    nf, want = s["noise_floor"], oracle.noise(ref, rep, ids)
    assert nf["bit_identical_positions"] == want["bit_identical_positions"] == len(ref) - 40
    assert not nf["bit_identical"] and nf["positions"] == len(ref)
    for side in ("kl_ref_cand", "kl_cand_ref"):
        for k, v in want[side].items():
            oracle.close(nf[side][k], v, f"{side}.{k}", 1e-7, 1e-13)
    oracle.close(nf["top1_agreement"], want["top1_agreement"], "top1", 0, 0)
    oracle.close(nf["max_abs_logit_delta"], want["max_abs_logit_delta"], "delta", 0, 0)
    assert nf["kl_ref_cand"]["max"] > 0


def test_few_positions_have_no_standard_error():
    ref, cand, ids = _pair(t=8, v=50)
    s, _ = analyse(ref, cand, ids)
    assert "needs more than 10" in s["kl_ref_cand"]["stderr"]["not_computable"]
    assert "not_computable" in s["perplexity"]["ratio"]["stderr"]
    assert isinstance(s["perplexity"]["ratio"]["value"], float)


def test_the_statistics_the_policy_reference_names_resolve_in_a_summary():
    """docs/reference/policy.md's divergence table: every full dotted name in it resolves to
    a number or boolean in a real summary (the names a user copies into a policy)."""
    import re
    from pathlib import Path

    from provenance.model.policy import resolve

    page = (Path(__file__).resolve().parents[2] / "docs/reference/policy.md").read_text()
    table = page[page.index("### Divergence statistics"):page.index("## Verdicts")]
    rows = [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| `")]
    names = [n for row in rows for n in re.findall(r"`([a-z_0-9.\[\],()]+)`", row)
             if not n.startswith(".")]
    assert len(names) > 20
    ref, cand, ids = _pair()
    summary, _ = analyse(ref, cand, ids, repeat=ref.copy())
    for name in names:
        v = resolve(summary, name)
        assert isinstance(v, int | float | bool), (name, v)
