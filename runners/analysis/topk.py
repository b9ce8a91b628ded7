"""Ordered top-K token lists per position, and what two of them say: how deep the reference's
and the candidate's lists agree, and where the actual next token ranks.

The order is the one torch.topk and exllamav3's model_diff use (largest first), with ties
broken by the lower token id (what argmax does for top-1), so the lists are defined exactly.
NaN (an entry an engine did not return) counts as -inf; slots a row cannot fill with a
returned entry hold -1. Only [rows, K] arrays are kept: nothing of size rows x vocabulary.
"""

from __future__ import annotations

import numpy as np

K_MAX = 10  # the deepest list kept: top-K agreement and label-in-top-K for K <= 10
NOT_IN_TOP = K_MAX  # a label rank of K_MAX: not among the first K_MAX


BLOCK = 128  # ids per block of the prefilter (151,936 = 1,187 blocks)
BLOCKS = 2 * (K_MAX + 1)  # blocks a row keeps: those with the largest maxima


def top_ids(x: np.ndarray, k: int = K_MAX) -> np.ndarray:
    """[rows, k] ids of each row's k largest entries, largest first, ties by lower id.

    A prefilter keeps the BLOCKS blocks of BLOCK ids with the largest maxima: k + 1 of them
    hold k + 1 entries at least as large as the (k+1)-th largest block maximum t0, so every
    entry of the top k + 1 (and every id tied with the k-th) is >= t0 and lies in a block
    whose maximum is >= t0. A row where a block left out may reach t0 is done in full."""
    rows, v = x.shape
    k = min(k, v)
    x = np.where(np.isnan(x), -np.inf, x) if np.isnan(x).any() else x
    nb = v // BLOCK
    if nb <= BLOCKS:
        return _unfilled(x, _exact(x, k))
    pos, whole = _prefilter(x, k, nb)
    out = np.take_along_axis(pos, _exact(np.take_along_axis(x, pos, axis=1), k), axis=1)
    redo = np.flatnonzero(whole)
    if len(redo):
        out[redo] = _exact(x[redo], k)
    return _unfilled(x, out)


def _prefilter(x: np.ndarray, k: int, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids [rows, BLOCKS * BLOCK + tail] in ascending order: the kept blocks and the ids
    past the last whole block; rows where a block left out may hold an entry >= t0)."""
    rows, v = x.shape
    vf = nb * BLOCK
    bm = x[:, :vf].reshape(rows, nb, BLOCK).max(axis=2)
    part = np.argpartition(bm, nb - BLOCKS - 1, axis=1)
    kept = np.sort(part[:, nb - BLOCKS:], axis=1)
    t0 = np.partition(np.take_along_axis(bm, kept, axis=1), BLOCKS - k - 1,
                      axis=1)[:, BLOCKS - k - 1]
    left_out = np.take_along_axis(bm, part[:, nb - BLOCKS - 1:nb - BLOCKS], axis=1)[:, 0]
    pos = (kept[:, :, None] * BLOCK + np.arange(BLOCK)).reshape(rows, -1)
    if vf < v:
        pos = np.concatenate([pos, np.broadcast_to(np.arange(vf, v), (rows, v - vf))], axis=1)
    return pos, left_out >= t0


def _exact(x: np.ndarray, k: int) -> np.ndarray:
    """top_ids without the prefilter (x without NaN)."""
    v = x.shape[1]
    if k == v:
        return np.argsort(-x, axis=1, kind="stable")
    # one kth (two cost three times as much): above v-k-1 lie the k largest, each >= it
    part = np.argpartition(x, v - k - 1, axis=1)
    cand = part[:, v - k:]
    vals = np.take_along_axis(x, cand, axis=1)
    order = np.lexsort((cand, -vals), axis=-1)  # value descending, then id ascending
    out = np.take_along_axis(cand, order, axis=1)
    kth = vals.min(axis=1)
    beyond = np.take_along_axis(x, part[:, v - k - 1:v - k], axis=1)[:, 0]
    # more ids hold the k-th value than places left (-inf: slots no returned entry fills)
    tied = np.flatnonzero((kth == beyond) & (kth > -np.inf))
    if len(tied):
        greater = (vals[tied] > kth[tied, None]).sum(axis=1)
        r, c = np.nonzero(x[tied] == kth[tied, None])  # row by row, ids ascending
        _fill_ties(out, tied, greater, r, c, np.searchsorted(r, np.arange(len(tied))), k)
    return out


def _fill_ties(out: np.ndarray, tied: np.ndarray, greater: np.ndarray, r: np.ndarray,
               c: np.ndarray, start: np.ndarray, k: int) -> None:
    """Rows `tied` of `out`: after their `greater` entries above the k-th value come the
    lowest ids holding it (r, c: the (row within tied, id) pairs holding it, ids ascending;
    start: where each row's pairs begin)."""
    rank = np.arange(len(r)) - start[r]
    keep = rank < k - greater[r]
    out[tied[r[keep]], greater[r[keep]] + rank[keep]] = c[keep]


def _unfilled(x: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """-1 where a slot holds an entry the engine did not return (-inf from NaN)."""
    vals = np.take_along_axis(x, ids, axis=1)
    return np.where(vals == -np.inf, -1, ids) if (vals == -np.inf).any() else ids


def agree_depth(ref_ids: np.ndarray, cand_ids: np.ndarray) -> np.ndarray:
    """int8 [rows]: how many leading slots of the two ordered lists are the same id (top-K
    lists are equal iff depth >= K); an unfilled slot (-1) ends the run."""
    same = (ref_ids == cand_ids) & (ref_ids >= 0)
    return np.cumprod(same, axis=1).sum(axis=1).astype(np.int8)


def label_rank(ids: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """int8 [rows]: the label's 0-based slot in the ordered list, NOT_IN_TOP when absent."""
    hit = ids == np.asarray(labels)[:, None]
    return np.where(hit.any(axis=1), hit.argmax(axis=1), NOT_IN_TOP).astype(np.int8)
