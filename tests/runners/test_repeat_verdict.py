"""The repeat verdict: the first (layer, block) where a repeat differs, and by how much."""

import numpy as np

from runners.engines import EngineConfig
from runners.engines.digests import block_digests
from runners.execute import WorkerRun
from runners.repeat import compare_repeats


def _run(hidden, scores, block):
    digests = {f"hidden.{i}": block_digests(h, block) for i, h in enumerate(hidden)}
    digests["logits"] = block_digests(scores, block)
    return WorkerRun(EngineConfig.parse("transformers"), {"digests": digests}, scores, None,
                     None, {})


def test_first_differing_layer_and_block():
    rng = np.random.default_rng(0)
    hidden = [rng.normal(size=(40, 8)).astype(np.float32) for _ in range(3)]
    scores = rng.normal(size=(39, 16)).astype(np.float32)
    a = _run(hidden, scores, 10)
    assert compare_repeats([a, _run([h.copy() for h in hidden], scores.copy(), 10)], 10) == {
        "verdict": "bit-identical", "layers": 4, "blocks": 4}
    h2 = [h.copy() for h in hidden]
    h2[1][25, 3] = np.nextafter(h2[1][25, 3], np.float32(np.inf))  # one ulp, layer 1, block 2
    s2 = scores.copy()
    s2[27, 5] += 0.5
    v = compare_repeats([a, a, _run(h2, s2, 10)], 10)
    assert (v["verdict"], v["run"], v["layer"], v["block"], v["positions"]) == (
        "differs", 2, "hidden.1", 2, [20, 30])
    assert abs(v["scores_max_abs_diff_in_block"] - 0.5) < 1e-6
