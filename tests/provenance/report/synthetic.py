"""A synthetic divergence result of any length, written in the real prov-result/1 format
(analysed by the runners' own `analyse`), for size and layout tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def synthetic_result(path: Path, positions: int = 100_000, vocab: int = 16,
                     seed: int = 0, policy=None) -> Path:
    from runners import api

    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, positions + 1)
    ref = (rng.standard_normal((positions, vocab)) * 3).astype(np.float32)
    cand = ref + (rng.standard_normal((positions, vocab)) * 1e-3).astype(np.float32)
    # a few stretches where the candidate drifts: clusters, and one isolated large spike
    for start in (1_000, 40_000, 41_500, 90_000):
        if start + 64 <= positions:
            cand[start:start + 64] += (rng.standard_normal((64, vocab)) * 2).astype(np.float32)
    spike = positions * 2 // 3
    cand[spike] = ref[spike][::-1]
    summary, arrays = api.analyse(ref, cand, ids, None)
    from provenance.model import disclosure as d

    card = api.DisclosureCard(
        reference_checkpoint=d.NotApplicable("synthetic: random logits, no checkpoint"),
        runtime_environment=d.NotApplicable("synthetic: no engine ran"),
        evaluation_text=d.NotApplicable(f"synthetic: {positions + 1} random token ids"),
        calibration_data=d.NoCalibration("nothing was calibrated"),
        context_lengths=(positions + 1,),
        sampled_positions=d.Positions(rule="every position", count=positions),
        kl_direction=d.Direction.BOTH,
        vocabulary_truncation=d.Truncation(d.Vocabulary.FULL, size=vocab),
        aggregation=d.Aggregation(method="per-position values; mean, percentiles, "
                                         "block-bootstrap CI"))
    meta = {"engines": [{"engine": "synthetic", "options": {"side": "ref"}},
                        {"engine": "synthetic", "options": {"side": "cand"}}],
            "model_digest": "none", "tokenizer_digest": "none", "text_digest": "none",
            "positions": {"n_tokens": positions + 1, "scored": positions},
            "comparison": {"gate": "not run (synthetic)"}, "summary": summary,
            "runs": {"reference": None, "candidate": None}}
    return api.write_result(path, "diverge", meta, arrays, card, policy)
