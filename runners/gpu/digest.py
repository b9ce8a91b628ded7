"""Per-block digests of raw tensor bits, computed on the GPU (Triton) or on the host (numpy).

Digest of one block of rows: the block's raw bytes, row-major, are read as little-endian
32-bit words w_i (i = word index in the block; a block whose size is not a multiple of 4
bytes gets one zero half-word at its end). Each word is keyed k_i = (i << 32) | w_i and the
block's digest is two 64-bit lanes, lane_j = sum_i splitmix64(k_i + SEED_j) mod 2^64.
Integer addition is associative, so any reduction order (GPU tree, host loop) gives the same
bits.

Collision odds: splitmix64's finaliser is a bijection with full avalanche. Modelling it as a
random function, two different blocks collide in one lane with probability 2^-64 (the
difference of the sums is a sum of independent uniform values mod 2^64), in both lanes
2^-128. Not cryptographic: an adversary who knows the function can build collisions; it
tells accidental numeric differences apart (one flipped bit anywhere changes both lanes).
The digest string also carries the block's shape (rows x 16-bit words per row), so blocks of
different lengths never compare equal.

Version 2 keys 32-bit words (version 1 keyed 16-bit words): half the mixing per byte, the
cost that bounded the kernel (it is arithmetic-bound, not memory-bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

ALGO = "prov-splitmix128/2"
SEEDS = (0x9E3779B97F4A7C15, 0xD1B54A32D192ED03)
M1 = 0xBF58476D1CE4E5B9
M2 = 0x94D049BB133111EB
MASK64 = (1 << 64) - 1


def _halfwords(raw: np.ndarray) -> np.ndarray:
    """Rows of 16-bit words (uint16) over the raw bytes of a 2-D array."""
    raw = np.ascontiguousarray(raw)
    if raw.ndim == 1:
        raw = raw.reshape(len(raw), 1)
    raw = raw.reshape(raw.shape[0], -1)
    if raw.dtype.itemsize % 2:
        raise ValueError("digest needs an element size that is a multiple of 2 bytes")
    return raw.view(np.uint16).reshape(raw.shape[0], -1)


def block_words(halfwords: np.ndarray) -> np.ndarray:
    """A block's 16-bit words (flat) as 32-bit words: w_i = h[2i] | h[2i+1] << 16."""
    h = halfwords.reshape(-1).astype(np.uint32)
    if len(h) % 2:
        h = np.append(h, np.uint32(0))
    return h[0::2] | (h[1::2] << np.uint32(16))


def _splitmix(z: np.ndarray) -> np.ndarray:
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(M1)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(M2)
    return z ^ (z >> np.uint64(31))


def _fmt(rows: int, width: int, lanes: tuple[int, int]) -> str:
    return f"{rows}x{width}:{lanes[0] & MASK64:016x}{lanes[1] & MASK64:016x}"


def digest_numpy(raw: np.ndarray, block: int) -> list[str]:
    """Host reference: one digest per block of `block` rows (rows = positions)."""
    halves = _halfwords(raw)
    n_rows, width = halves.shape
    out = []
    with np.errstate(over="ignore"):
        for s in range(0, max(n_rows, 1), block):
            part = halves[s : s + block]
            w = block_words(part).astype(np.uint64)
            keys = (np.arange(len(w), dtype=np.uint64) << np.uint64(32)) | w
            lanes = tuple(int(_splitmix(keys + np.uint64(seed)).sum(dtype=np.uint64))
                          for seed in SEEDS)
            out.append(_fmt(len(part), width, lanes))  # type: ignore[arg-type]
    return out


def _padded_words(halves, block: int):
    """A zero-padded int32 copy for blocks of an odd number of 16-bit words (rare: small
    tensors): (words [n_blocks * words_per_block], words per block, total valid words)."""
    import torch

    rows, width = halves.shape
    n_blocks = max(1, -(-rows // block))
    per_block16 = block * width
    per_block = (per_block16 + 1) // 2
    padded = torch.zeros((n_blocks, per_block * 2), dtype=torch.int16, device=halves.device)
    flat = halves.reshape(-1)
    for b in range(n_blocks):
        part = flat[b * per_block16:(b + 1) * per_block16]
        padded[b, :len(part)] = part
    last16 = rows * width - (n_blocks - 1) * per_block16
    valid = (n_blocks - 1) * per_block + (last16 + 1) // 2
    return padded.reshape(-1).view(torch.int32), per_block, valid


def _words_address(t, block: int):
    """(address of the int32 words, words per block, valid words, rows, 16-bit width,
    blocks, buffer to keep alive). A contiguous tensor whose blocks are whole 32-bit words
    is read where it lies (no torch op: each costs host time, and a launch over every layer
    would pay it per layer); a strided one is made contiguous first; odd blocks are padded."""
    import torch

    if t.element_size() % 2:
        raise ValueError("digest needs an element size that is a multiple of 2 bytes")
    if not t.is_contiguous():
        t = t.contiguous()
    shape = tuple(t.shape) or (1,)
    rows = shape[0]
    width = (t.numel() // rows if rows else int(np.prod(shape[1:], dtype=np.int64))) \
        * t.element_size() // 2
    n_blocks = max(1, -(-rows // block))
    ptr = t.data_ptr()
    if (block * width) % 2 == 0 and (rows * width) % 2 == 0 and ptr % 4 == 0:
        return ptr, block * width // 2, rows * width // 2, rows, width, n_blocks, t
    halves = t.reshape(rows, -1).view(torch.int16).reshape(rows, width)
    words, per_block, valid = _padded_words(halves, block)
    return words.data_ptr(), per_block, valid, rows, width, n_blocks, words


def _block_table(tensors, block: int):
    """Per block of every tensor: the address of its first int32 word and its word count,
    plus (rows, 16-bit width, blocks) per tensor and the word buffers to keep alive."""
    bases, lens, shapes, keep = [], [], [], []
    for t in tensors:
        addr, per_block, valid, rows, width, n_blocks, buf = _words_address(t.detach(), block)
        if per_block >= 2**31:
            raise ValueError("digest blocks must hold fewer than 2^31 words")
        keep.append(buf)
        starts = np.arange(n_blocks, dtype=np.int64) * per_block
        bases.append(addr + 4 * starts)
        lens.append(np.clip(valid - starts, 0, per_block))
        shapes.append((rows, width, n_blocks))
    return np.concatenate(bases), np.concatenate(lens), shapes, keep


@dataclass
class PendingDigests:
    """Digest kernels launched, not yet waited for: `result()` copies the partial sums to
    the host (the one synchronisation) and formats the digest strings."""

    partials: Any  # [blocks, splits, 2] uint64 on the device
    shapes: list[tuple[int, int, int]]  # (rows, 16-bit width, blocks) per tensor
    block: int
    keep: list = field(default_factory=list)  # word buffers the kernel reads
    launch: tuple = ()  # (block addresses, block lengths, aligned) on the device

    def run_kernel(self, chunk: int = 2048, num_warps: int = 8) -> None:
        """(Re)launch the kernel over the table (the bench times this alone)."""
        from runners.gpu.kernels import digest_kernel

        base_t, len_t, aligned = self.launch
        n_blocks, splits = self.partials.shape[:2]
        digest_kernel[(n_blocks, splits)](base_t, len_t, self.partials, splits, SEEDS[0],
                                          SEEDS[1], CHUNK=chunk, ALIGNED=aligned,
                                          num_warps=num_warps)

    def result(self) -> list[list[str]]:
        import torch

        host = self.partials.cpu().view(dtype=torch.int64).numpy().view(np.uint64)
        self.keep.clear()  # the copy synchronised: the kernel is done with them
        with np.errstate(over="ignore"):
            lanes = host.sum(axis=1, dtype=np.uint64)
        # 32 hex digits per block (both lanes, big-endian), formatted by numpy at once
        hexes = lanes.astype(">u8").tobytes().hex()
        out, at = [], 0
        for rows, width, n_blocks in self.shapes:
            # every block but the last holds `block` rows
            full = f"{self.block}x{width}:"
            last = f"{rows - (n_blocks - 1) * self.block if rows else 0}x{width}:"
            digests = [full + hexes[i:i + 32] for i in range(32 * at, 32 * (at + n_blocks - 1), 32)]
            digests.append(last + hexes[32 * (at + n_blocks - 1):32 * (at + n_blocks)])
            out.append(digests)
            at += n_blocks
        return out


def launch_digests(tensors, block: int, splits: int | None = None, chunk: int = 2048,
                   num_warps: int = 8) -> PendingDigests:
    """Launch one kernel over every block of every tensor (e.g. each layer's hidden state):
    a table gives each block's address and length. `splits` programs share a block; by
    default enough for about 512 programs (one wave of 8-warp programs on an H200), at
    least 1. Per-tensor launches would cost more host time than GPU time."""
    import torch

    device = tensors[0].device
    if any(t.device != device for t in tensors):
        raise ValueError("digest tensors must all be on one device")
    bases, lens, shapes, keep = _block_table(tensors, block)
    if splits is None:
        splits = max(1, min(64, round(512 / len(bases))))
    table = torch.from_numpy(np.stack([bases, lens])).to(device)
    aligned = bool((bases % 16 == 0).all() and (lens % 4 == 0).all())
    out = torch.empty((len(bases), splits, 2), dtype=torch.uint64, device=device)
    pend = PendingDigests(out, shapes, block, keep,
                          (table[0], table[1].to(torch.int32), aligned))
    pend.run_kernel(chunk, num_warps)
    return pend


def digest_many(tensors, block: int, splits: int | None = None, chunk: int = 2048,
                num_warps: int = 8) -> list[list[str]]:
    """Digests of several device tensors, each list identical to digest_numpy's."""
    if not tensors:
        return []
    return launch_digests(tensors, block, splits, chunk, num_warps).result()


def digest_triton(t, block: int, splits: int | None = None, chunk: int = 2048,
                  num_warps: int = 8) -> list[str]:
    """Digests of a (device) tensor, identical to digest_numpy over the same bytes."""
    return digest_many([t], block, splits, chunk, num_warps)[0]
