"""Peak-keeping decimation, bucket rates and the terminal sparkline."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from provenance.report.series import bucket_rate, peak_indices
from provenance.report.sparkline import BARS, sparkline


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(1, 5000),
              elements=st.floats(0, 1e3, allow_nan=False)), st.integers(2, 400))
def test_peaks_kept(values, max_points):
    keep = peak_indices(values, max_points)
    assert len(keep) <= max(max_points, 2) + 2
    assert np.all(np.diff(keep) > 0)
    assert values[keep].max() == values.max()  # the global peak survives
    assert values[keep].min() == values.min()
    if len(values) <= max_points:
        assert len(keep) == len(values)


def test_every_bucket_keeps_its_maximum():
    rng = np.random.default_rng(1)
    v = rng.random(100_000)
    keep = peak_indices(v, 2000)
    size = -(-len(v) // 1000)
    for b in range(0, len(v), size):
        assert b + int(np.argmax(v[b:b + size])) in set(keep.tolist())


def test_bucket_rate_matches_direct_means():
    rng = np.random.default_rng(2)
    f = rng.random(10_001) < 0.05
    starts, rate = bucket_rate(f, 100)
    size = starts[1] - starts[0]
    for s, r in zip(starts, rate, strict=True):
        assert r == f[s:s + size].mean()


def test_sparkline_marks_any_disagreement():
    d = np.zeros(1000, dtype=bool)
    assert sparkline(d, 50) == BARS[0] * 50
    d[500] = True
    line = sparkline(d, 50)
    assert len(line) == 50 and line.count(BARS[0]) == 49 and line[25] != BARS[0]
    assert sparkline(np.ones(10, dtype=bool), 10) == BARS[-1] * 10
    assert sparkline(np.zeros(3, dtype=bool), 60) == BARS[0] * 3  # never wider than the data


def test_top1_streamed_matches_argmax(tmp_path):
    from provenance.report.sparkline import top1_streamed

    rng = np.random.default_rng(3)
    scores = rng.standard_normal((1001, 37)).astype(np.float32)
    for compress in (np.savez, np.savez_compressed):
        compress(tmp_path / "s.npz", scores=scores, ids=np.arange(1002))
        # tiny chunks: many partial reads, a last short chunk
        got = top1_streamed(tmp_path / "s.npz", chunk_bytes=37 * 4 * 7)
        assert np.array_equal(got, np.argmax(scores, axis=-1))
