"""The GPU kernels (runners/gpu) against their references (bench/gpu/variants.py:analyse_torch,
the torch reference; digest_numpy, the host one).

The Triton kernels run under TRITON_INTERPRET=1 on CPU in a child process (torch stays out of
the pytest process); with PROV_FUSED_DEVICE=cuda the same tests run the compiled kernels on a
GPU (bench/gpu/run_h200.sh does), and bench/bench_gpu_analysis.py repeats the comparison at
full size there.

Tolerances: all sums are fp32. Pairwise/tree summation of n terms has a relative error
bound of about ceil(log2 n) * u (u = 2^-24, Higham 4.2); the fused kernel adds one rescale
per block (n / BLOCK_V more roundings) and the reference a log_softmax subtraction. KL and
logsumexp are sums of magnitude up to |lse| (logits of scale s give lse ~ s + log n), so
we allow 8 * (log2 n + n / BLOCK_V + 8) * u * (1 + max|lse|) absolute: a few 1e-5 here. Top-1
must match exactly (first index of the maximum in both), digests bit for bit.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runners.gpu.digest import M1, M2, MASK64, SEEDS, digest_numpy

ROOT = Path(__file__).resolve().parents[2]
U = 2.0 ** -24


def _splitmix_py(z: int) -> int:
    z &= MASK64
    z = ((z ^ (z >> 30)) * M1) & MASK64
    z = ((z ^ (z >> 27)) * M2) & MASK64
    return z ^ (z >> 31)


def _digest_py(halves: list[int], rows: int, width: int) -> str:
    """The documented algorithm in Python integers: the oracle for the numpy version.
    16-bit words pair into little-endian 32-bit words (a zero half pads an odd count)."""
    if len(halves) % 2:
        halves = halves + [0]
    words = [halves[j] | (halves[j + 1] << 16) for j in range(0, len(halves), 2)]
    lanes = [sum(_splitmix_py(((i << 32) | w) + seed) for i, w in enumerate(words)) & MASK64
             for seed in SEEDS]
    return f"{rows}x{width}:{lanes[0]:016x}{lanes[1]:016x}"


def test_numpy_digest_matches_python_integers():
    rng = np.random.default_rng(3)
    # 5 words per row: blocks of 4 rows hold 20 (even), the last block 1 row, 5 (odd)
    raw = rng.integers(-(2 ** 15), 2 ** 15, size=(9, 5), dtype=np.int16)
    got = digest_numpy(raw, 4)
    halves = raw.view(np.uint16)
    want = [_digest_py([int(w) for w in halves[s:s + 4].reshape(-1)], len(halves[s:s + 4]), 5)
            for s in range(0, 9, 4)]
    assert got == want and len(got) == 3


def test_digest_of_a_padded_block_differs_from_a_real_zero():
    # an odd block padded with a zero half-word must not equal the block with a real 0 appended
    a = np.array([[1], [2], [3]], dtype=np.uint16)
    b = np.array([[1], [2], [3], [0]], dtype=np.uint16)
    assert digest_numpy(a, 4)[0].split(":")[1] == digest_numpy(b, 4)[0].split(":")[1]
    assert digest_numpy(a, 4) != digest_numpy(b, 4)  # the shape prefix tells them apart


def test_numpy_digest_sees_every_bit_and_position():
    rng = np.random.default_rng(4)
    raw = rng.integers(0, 2 ** 16, size=(8, 16), dtype=np.uint16)
    base = digest_numpy(raw, 8)[0]
    seen = {base}
    for pos in range(raw.size):
        for bit in (0, 15):
            flipped = raw.copy().reshape(-1)
            flipped[pos] ^= np.uint16(1 << bit)
            seen.add(digest_numpy(flipped.reshape(raw.shape), 8)[0])
    swapped = raw.copy()
    swapped[0, [0, 1]] = swapped[0, [1, 0]]
    if raw[0, 0] != raw[0, 1]:
        seen.add(digest_numpy(swapped, 8)[0])
    # every single-bit flip (and a swap of two words) gives a digest of its own
    assert len(seen) == 1 + raw.size * 2 + int(raw[0, 0] != raw[0, 1])


def test_fp32_words_cover_both_halves():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = digest_numpy(x, 2)
    assert d[0].startswith("2x8:") and d[1].startswith("1x8:")
    y = x.copy()
    y.view(np.uint32)[2, 3] ^= np.uint32(1 << 31)  # the high half of the last float
    assert digest_numpy(y, 2)[1] != d[1] and digest_numpy(y, 2)[0] == d[0]


@pytest.fixture(scope="module")
def interpreted() -> dict:
    # a test dependency (pyproject [test]); looked up, not imported (it would pull torch in)
    assert importlib.util.find_spec("triton"), "triton missing: pip install -e '.[test]'"
    # PROV_FUSED_DEVICE=cuda runs the same checks with the compiled kernels on a GPU
    # (bench/gpu/run_h200.sh does); by default the Triton interpreter runs them on CPU
    device = os.environ.get("PROV_FUSED_DEVICE", "cpu")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run([sys.executable, str(ROOT / "tests/runners/fused_check.py"), "1",
                           device],
                          capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_fused_top1_exact(interpreted):
    assert {c["variant"] for c in interpreted["stats"]} == {"online"}
    for case in interpreted["stats"]:
        assert case["top1_equal"] and case["top1_equal_numpy"], case


def test_fused_identical_rows_have_zero_kl(interpreted):
    for case in interpreted["stats"]:
        assert case["identical_row_kl"] == [0.0, 0.0], case


def test_fused_within_fp32_bound(interpreted):
    for case in interpreted["stats"]:
        n = case["v"]
        lse = max(case["err"]["lse_ref"]["scale"], case["err"]["lse_cand"]["scale"])
        tol = 8 * (np.log2(n) + n / case["block_v"] + 8) * U * (1 + lse)
        for name, e in case["err"].items():
            # the reference itself sits inside the bound (the bound is not loose for it)...
            assert e["ref_vs_f64"] <= tol, (name, e, tol)
            # ...and the fused kernel agrees with both
            assert e["fused_vs_f64"] <= tol, (name, e, tol)
            assert e["fused_vs_ref"] <= 2 * tol, (name, e, tol)


def test_triton_digest_equals_host_digest(interpreted):
    assert len(interpreted["digest"]) == 5
    for case in interpreted["digest"]:
        assert case["equal"] and case["many_equal"] and case["flip_changes_last_only"], case
    assert interpreted["digest_strided_equal"]


def test_fused_handles_negative_infinity(interpreted):
    # masked vocabulary, a candidate zero where the reference has mass, one finite logit
    assert len(interpreted["neg_inf"]) == 1
    for case in interpreted["neg_inf"]:
        assert case["top1_equal"] and case["kl_inf"] and all(case["close"].values()), case
