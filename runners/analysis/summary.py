"""A divergence's summary from per-position values: every figure the result's `summary`
spells (docs/reference/formats.md), computed the same way whether the values came from
stored scores (`analyse`) or from logits rebuilt chunk by chunk on a device (`summarise`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from provenance.model.policy import not_computable
from runners.analysis import figures as fig
from runners.analysis.agreement import first_disagreement
from runners.analysis.bootstrap import block_bootstrap_ci
from runners.analysis.clusters import find_clusters
from runners.analysis.kl import position_stats, self_kl_floor
from runners.analysis.noise import noise_floor

NEAR_TIE = 0.01  # reference p(top1) - p(top2) below this: a disagreement there is a near-tie
STORAGE_DTYPE = "float32"

# what each per-position array of a divergence result holds (besides ids, agree, truncated)
POSITION_ARRAYS = ("ref_top1", "cand_top1", "margin", "kl_ref_cand", "kl_cand_ref", "delta_p",
                   "ref_p_top1", "ref_logp_next", "cand_logp_next", "top_agree_depth",
                   "ref_label_rank", "cand_label_rank")
NO_REPEAT = "no repeat of the reference was analysed"


def analyse(ref: np.ndarray, cand: np.ndarray, ids: np.ndarray,
            decode: Callable[[int, int], str] | None = None, gap: int = 8,
            boot_block: int = 32, topk: tuple[int | None, int | None] = (None, None),
            repeat: np.ndarray | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Summary and per-position arrays for ref/cand scores ([T-1, V]) over ids ([T]).
    topk: each side's configured top-k when it returned only that many log-probabilities
    (None: unknown or full); repeat: the reference repeat's scores, for the noise floor."""
    nxt = np.asarray(ids[1:], dtype=np.int64)
    st = position_stats(ref, cand, nxt)
    arrays = {k: getattr(st, k) for k in POSITION_ARRAYS}
    arrays["truncated"] = st.truncated
    floor = {"storage_dtype": STORAGE_DTYPE, "ref": self_kl_floor(ref, STORAGE_DTYPE),
             "cand": self_kl_floor(cand, STORAGE_DTYPE)}
    depth = {"ref": stored_depth(ref.shape[1], st.ref_stored, topk[0]),
             "cand": stored_depth(cand.shape[1], st.cand_stored, topk[1])}
    noise = noise_floor(ref, repeat, nxt) if repeat is not None else not_computable(NO_REPEAT)
    return summarise(arrays, ids, floor, decode, gap, boot_block, depth=depth, noise=noise,
                     vocab=int(ref.shape[1]))


def stored_depth(vocab: int, stored: np.ndarray, k: int | None) -> int | None:
    """How many of a side's top log-probabilities are known at every position: None for the
    full vocabulary; else the configured k, or without one the fewest entries returned less
    one (vLLM and OpenAI-style servers add the actual next token beside their top k)."""
    if len(stored) == 0 or int(stored.min()) == vocab:
        return None
    return int(k) if k is not None else max(int(stored.min()) - 1, 0)


def summarise(per_position: dict[str, np.ndarray], ids: np.ndarray, floor: dict[str, Any],
              decode: Callable[[int, int], str] | None = None, gap: int = 8,
              boot_block: int = 32, depth: dict[str, int | None] | None = None,
              noise: dict[str, Any] | None = None, vocab: int | None = None
              ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Summary and the result's arrays from per-position values (POSITION_ARRAYS and
    `truncated`; those after delta_p may be absent: their figures are then not computable),
    however they were computed. depth: per side, None (full vocabulary) or how many top
    entries are known; noise: the noise floor's figures or its not-computable marker."""
    p = per_position
    agree = np.asarray(p["ref_top1"]) == np.asarray(p["cand_top1"])
    kl_rc, kl_cr, dp = (np.asarray(p[k], dtype=np.float64)
                        for k in ("kl_ref_cand", "kl_cand_ref", "delta_p"))
    margin = np.asarray(p["margin"], dtype=np.float64)
    truncated = np.asarray(p.get("truncated", np.zeros(len(agree), bool)), dtype=bool)
    depth = depth or {"ref": None, "cand": None}
    first = first_disagreement(agree)
    clusters = find_clusters(agree, kl_rc, gap=gap, decode=decode)
    dis = ~agree
    top1 = float(agree.mean()) if min(_known(depth, vocab).values()) >= 1 else \
        not_computable("a side returned no top log-probability")
    summary: dict[str, Any] = {
        "positions": len(agree),
        "top1_agreement": top1,
        "same_top_p": fig.same_top_p(agree) if isinstance(top1, float) else top1,
        "disagreements": int(dis.sum()),
        "near_tie_disagreements": int((dis & (margin < NEAR_TIE)).sum()),
        "first_disagreement": first,
        "first_disagreement_text": decode(first + 1, first + 2) if (decode and first is not None)
        else None,
        "kl_ref_cand": fig.distribution(kl_rc),
        "kl_cand_ref": fig.distribution(kl_cr),
        "kl_lower_bound": bool(truncated.any()),
        "delta_p": fig.delta_p(dp),
        "ci": {
            "kl_ref_cand_mean": block_bootstrap_ci(kl_rc, block=boot_block),
            "kl_cand_ref_mean": block_bootstrap_ci(kl_cr, block=boot_block),
            "top1_agreement": block_bootstrap_ci(agree.astype(np.float64), block=boot_block),
        },
        **_label_figures(p, kl_rc, kl_cr, depth, vocab),
        "truncated_positions": int(truncated.sum()),
        "clusters": [c.to_json() for c in clusters],
        "self_kl_floor": floor,
        "noise_floor": noise if noise is not None else not_computable(NO_REPEAT),
    }
    arrays = {"ids": np.asarray(ids, dtype=np.int64), "agree": agree, "margin": margin,
              "kl_ref_cand": kl_rc, "kl_cand_ref": kl_cr, "delta_p": dp, "truncated": truncated,
              **{k: np.asarray(p[k]) for k in POSITION_ARRAYS if k in p
                 and k not in ("margin", "kl_ref_cand", "kl_cand_ref", "delta_p")}}
    return summary, arrays


def _known(depth: dict[str, int | None], vocab: int | None) -> dict[str, int]:
    big = vocab if vocab is not None else 1 << 62
    return {s: big if d is None else d for s, d in depth.items()}


def _label_figures(p: dict[str, np.ndarray], kl_rc: np.ndarray, kl_cr: np.ndarray,
                   depth: dict[str, int | None], vocab: int | None) -> dict[str, Any]:
    """The figures that need the per-position top-10 lists, the reference's confidence and
    the next token's log-probabilities (not computable when those were not given)."""
    v = vocab if vocab is not None else 1 << 62
    gone = not_computable("the per-position values it needs were not computed")
    out: dict[str, Any] = {"topk_agreement": gone, "label_in_topk": gone,
                           "kl_by_confidence": gone, "perplexity": gone}
    if "top_agree_depth" in p:
        out["topk_agreement"] = fig.topk_agreement(np.asarray(p["top_agree_depth"]), depth, v)
        out["label_in_topk"] = fig.label_in_topk(
            {"ref": np.asarray(p["ref_label_rank"]), "cand": np.asarray(p["cand_label_rank"])},
            depth, v)
    if "ref_p_top1" in p:
        out["kl_by_confidence"] = fig.by_confidence(np.asarray(p["ref_p_top1"], np.float64),
                                                    kl_rc, kl_cr) \
            if _known(depth, vocab)["ref"] >= 1 else \
            not_computable("the reference returned no top log-probability")
    if "ref_logp_next" in p:
        out["perplexity"] = fig.perplexity(np.asarray(p["ref_logp_next"], np.float64),
                                           np.asarray(p["cand_logp_next"], np.float64))
    return out
