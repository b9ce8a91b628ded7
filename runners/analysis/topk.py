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


def top_ids(x: np.ndarray, k: int = K_MAX) -> np.ndarray:
    """[rows, k] ids of each row's k largest entries, largest first, ties by lower id."""
    rows, v = x.shape
    k = min(k, v)
    x = np.where(np.isnan(x), -np.inf, x) if np.isnan(x).any() else x
    if k == v:
        return _sorted_ids(x)
    # one kth (two cost three times as much): above v-k-1 lie the k largest, each >= it
    part = np.argpartition(x, v - k - 1, axis=1)
    cand = part[:, v - k:]
    vals = np.take_along_axis(x, cand, axis=1)
    order = np.lexsort((cand, -vals), axis=-1)  # value descending, then id ascending
    out = np.take_along_axis(cand, order, axis=1)
    beyond = np.take_along_axis(x, part[:, v - k - 1:v - k], axis=1)[:, 0]
    tied = np.flatnonzero(vals.min(axis=1) == beyond)  # which tied ids make the list: rare
    for r in tied:
        out[r] = _sorted_ids(x[r:r + 1])[0, :k]
    return _unfilled(x, out)


def _sorted_ids(x: np.ndarray) -> np.ndarray:
    return np.argsort(-x, axis=1, kind="stable")


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
