"""Per-block digests of raw tensor bits, computed on the GPU (Triton) or on the host (numpy).

Digest of one block of rows: the raw bytes are read as 16-bit words w_i (i = word index in
the block, row-major); each word is keyed k_i = (i << 16) | w_i and the block's digest is two
64-bit lanes, lane_j = sum_i splitmix64(k_i + SEED_j) mod 2^64. Integer addition is
associative, so any reduction order (GPU tree, host loop) gives the same bits.

Collision odds: splitmix64's finaliser is a bijection with full avalanche. Modelling it as a
random function, two different blocks collide in one lane with probability 2^-64 (the
difference of the sums is a sum of independent uniform values mod 2^64), in both lanes
2^-128. Not cryptographic: an adversary who knows the function can build collisions; it
tells accidental numeric differences apart (one flipped bit anywhere changes both lanes).
The digest string also carries the block's shape in words.
"""

from __future__ import annotations

import numpy as np

ALGO = "prov-splitmix128/1"
SEEDS = (0x9E3779B97F4A7C15, 0xD1B54A32D192ED03)
M1 = 0xBF58476D1CE4E5B9
M2 = 0x94D049BB133111EB
MASK64 = (1 << 64) - 1


def _words(raw: np.ndarray) -> np.ndarray:
    """Rows of 16-bit words (uint16) over the raw bytes of a 2-D array."""
    raw = np.ascontiguousarray(raw)
    if raw.ndim == 1:
        raw = raw.reshape(len(raw), 1)
    raw = raw.reshape(raw.shape[0], -1)
    if raw.dtype.itemsize % 2:
        raise ValueError("digest needs an element size that is a multiple of 2 bytes")
    return raw.view(np.uint16).reshape(raw.shape[0], -1)


def _splitmix(z: np.ndarray) -> np.ndarray:
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(M1)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(M2)
    return z ^ (z >> np.uint64(31))


def _fmt(rows: int, words: int, lanes: tuple[int, int]) -> str:
    return f"{rows}x{words}:{lanes[0] & MASK64:016x}{lanes[1] & MASK64:016x}"


def digest_numpy(raw: np.ndarray, block: int) -> list[str]:
    """Host reference: one digest per block of `block` rows (rows = positions)."""
    words = _words(raw)
    n_rows, width = words.shape
    out = []
    with np.errstate(over="ignore"):
        for s in range(0, max(n_rows, 1), block):
            w = words[s : s + block].reshape(-1).astype(np.uint64)
            keys = (np.arange(len(w), dtype=np.uint64) << np.uint64(16)) | w
            lanes = tuple(int(_splitmix(keys + np.uint64(seed)).sum(dtype=np.uint64))
                          for seed in SEEDS)
            out.append(_fmt(len(w) // max(width, 1), width, lanes))  # type: ignore[arg-type]
    return out


def digest_partials(t, block: int, splits: int = 16, chunk: int = 1024):
    """Launch the digest kernel on a device tensor; returns (partials [blocks, splits, 2]
    uint64 on the device, words per row). Nothing but the partial sums leaves the device."""
    import torch

    t = t.detach()
    if t.dim() == 1:
        t = t.reshape(-1, 1)
    t = t.contiguous().reshape(t.shape[0], -1)
    if t.element_size() % 2:
        raise ValueError("digest needs an element size that is a multiple of 2 bytes")
    words = t.view(torch.int16).reshape(t.shape[0], -1)
    rows, width = words.shape
    n_blocks = max(1, -(-rows // block))
    out = torch.empty((n_blocks, splits, 2), dtype=torch.uint64, device=t.device)
    from runners.gpu.kernels import digest_kernel

    digest_kernel[(n_blocks, splits)](words, out, words.numel(), block * width, splits,
                                   SEEDS[0], SEEDS[1], CHUNK=chunk)
    return out, rows, width


def finish(partials, rows: int, width: int, block: int) -> list[str]:
    """Fold the per-program partial sums (host, a few KB) into digest strings."""
    p = partials.cpu().view(dtype=__import__("torch").int64).numpy().view(np.uint64)
    with np.errstate(over="ignore"):
        lanes = p.sum(axis=1, dtype=np.uint64)
    out = []
    for b in range(len(lanes)):
        n = min(block, rows - b * block) if rows else 0
        out.append(_fmt(n, width, (int(lanes[b, 0]), int(lanes[b, 1]))))
    return out


def digest_triton(t, block: int, splits: int = 16, chunk: int = 1024) -> list[str]:
    """Digests of a (device) tensor, identical to digest_numpy over the same bytes."""
    partials, rows, width = digest_partials(t, block, splits, chunk)
    return finish(partials, rows, width, block)
