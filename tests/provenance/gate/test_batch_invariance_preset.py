"""The `batch-invariance` preset covers what `VLLM_BATCH_INVARIANT=1` changed in the run's
identity on the H200 (the refused keys of bench/results/2026-12-03-h200), and nothing of
the attention backend."""

from __future__ import annotations

import json
from pathlib import Path

from provenance.gate import gate
from provenance.model import Manifest, split_key

RESULT = Path(__file__).parents[3] / "bench/results/2026-12-03-h200/invariance-main.json"


def manifest(keys: list[str], value: str) -> Manifest:
    facts: dict = {}
    for key in keys:
        node = facts
        *head, last = split_key(key)
        for part in head:
            node = node.setdefault(part, {})
        node[last] = value
    return Manifest(facts)


def test_the_preset_covers_every_key_batch_invariance_changed_on_the_h200():
    gated = json.loads(RESULT.read_text())["gate"]["FLASH_ATTN"]["undeclared"]["refused"]
    keys = [k for k in gated if not k.startswith("libs.")]  # a JIT's key follows (check.py)
    a, b = manifest(keys, "0"), manifest(keys, "1")
    assert not gate(a, b, []).ok
    assert gate(a, b, ["batch-invariance"]).ok
    backend = manifest([*keys, "runtime.vllm.attention_backend.requested"], "1")
    assert [c.key for c in gate(a, backend, ["batch-invariance"]).refused] == [
        "runtime.vllm.attention_backend.requested"]
