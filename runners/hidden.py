"""Hidden-state results: what a run stores when full logits would be too large.

Above HIDDEN_CELLS scored positions x vocabulary (2^28 cells: 1 GiB of fp32 scores; the
study's 131,072 x 151,936 would be 40 GB in bf16, 80 GB as fp32), a transformers run stores
the final post-norm hidden states in the dtype the model computed them in (positions x
hidden; 256 MiB at 131,072 x 1,024 in bf16) plus the output head's name, dtype and sha256,
and the engine's own logits at SAMPLE_ROWS evenly spaced positions. Analysis rebuilds the
logits in chunks with the output head read from the model directory (its digest checked
first) and measures the rebuild floor against the sampled engine logits.

Arrays are stored as raw bits (int16 for bf16/fp16: numpy has no bf16) with the dtype named
in the run's metadata. Imports nothing of `provenance` (workers use it) and torch only inside
the functions that take tensors.
"""

from __future__ import annotations

import hashlib

import numpy as np

HIDDEN_CELLS = 1 << 28
SAMPLE_ROWS = 64
STORE_MODES = ("auto", "logits", "hidden")
RAW = {"bfloat16": np.int16, "float16": np.int16, "float32": np.int32}


def store_mode(option: str | None, positions: int, vocab: int) -> str:
    """'hidden' or 'logits' for a run of `positions` scored rows over `vocab` outputs."""
    mode = option or "auto"
    if mode not in STORE_MODES:
        raise ValueError(f"store must be one of {', '.join(STORE_MODES)}")
    if mode == "auto":
        return "hidden" if positions * vocab > HIDDEN_CELLS else "logits"
    return mode


def sample_rows(n_rows: int, k: int = SAMPLE_ROWS) -> np.ndarray:
    """k evenly spaced row indices in [0, n_rows), first and last included."""
    if n_rows <= k:
        return np.arange(n_rows, dtype=np.int64)
    return np.unique(np.linspace(0, n_rows - 1, k).round().astype(np.int64))


def raw_bits(t) -> np.ndarray:
    """A tensor's bytes on the host as an integer array of the same width."""
    import torch

    t = t.detach().contiguous().cpu()
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.view(width).numpy()


def to_float32(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Raw bits of `dtype` as float32 values (exact for bf16, fp16 and fp32)."""
    if dtype == "bfloat16":  # a bf16 value is the high half of the fp32 with the same bits
        return (raw.view(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dtype == "float16":
        return raw.view(np.float16).astype(np.float32)
    if dtype == "float32":
        return raw.view(np.float32)
    raise ValueError(f"hidden states in {dtype} cannot be read")


def head_sha256(raw: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(raw).tobytes()).hexdigest()
