"""Planted operations: the negative controls of the invariance probes and the noise floor.

NOT serving settings. `plant=batch_fp16_sum` (an engine option, so it is part of a run's
identity) perturbs the logits by a float16 reduction whose chunk size follows the number of
rows in the call: the same prompt scored alone and in a batch gets different bits, as a
batch-variant kernel would give it. An invariance test that does not catch it cannot show
invariance (runners/invariance.py). `plant=noop` installs the hook and changes nothing: a
control that must NOT fail, for testing the verdict itself. `plant=process_noise` adds
Gaussian noise drawn afresh in every process (seeded from os.urandom): two executions of one
configuration differ, as a non-deterministic kernel makes them, so the noise floor of
`prov run diverge` must measure a non-zero floor (runners/analysis/noise.py).

Imports torch lazily: workers run it inside the engine's interpreter.
"""

from __future__ import annotations

import os
from typing import Any

SCALE = 64.0  # large enough that the rounding differences reach the float32 logprobs
NOISE = 1e-2  # process_noise's standard deviation: a KL of ~1e-5 nats between two processes


def batch_fp16_sum(logits: Any) -> Any:
    """logits [..., V] plus a per-row term: the row mean summed in float16 chunks of
    8 + (rows % 57) entries, minus the exact mean, times a fixed vector over the vocabulary."""
    import torch

    shape = logits.shape
    rows = logits.reshape(-1, shape[-1]).float()
    n, v = rows.shape
    chunk = 8 + n % 57
    pad = (-v) % chunk
    scaled = torch.nn.functional.pad(rows / v, (0, pad))
    partial = scaled.view(n, -1, chunk).sum(-1).to(torch.float16).float().sum(-1)
    delta = (partial - (rows / v).sum(-1)) * SCALE
    w = torch.cos(torch.arange(v, device=rows.device, dtype=torch.float32))
    return (rows + delta[:, None] * w[None, :]).to(logits.dtype).reshape(shape)


def process_noise(x: Any) -> Any:
    """x plus N(0, NOISE^2) from a generator seeded from os.urandom once per process (the
    same process adds the same noise each call; another process other noise)."""
    import torch

    global _SEED
    if _SEED is None:
        _SEED = int.from_bytes(os.urandom(8), "little") >> 1
    g = torch.Generator().manual_seed(_SEED)
    noise = torch.randn(tuple(x.shape), generator=g, dtype=torch.float32) * NOISE
    return (x.float() + noise.to(x.device)).to(x.dtype)


_SEED: int | None = None


def apply(kind: str, logits: Any) -> Any:
    if kind == "batch_fp16_sum":
        return batch_fp16_sum(logits)
    if kind == "process_noise":
        return process_noise(logits)
    return logits  # noop / none


def install(module: Any, kind: str) -> Any:
    """A forward hook on `module` (whose output is logits, or a tuple led by them) applying
    the plant named by `module._prov_plant` (settable later: the control pass switches it
    on inside a running engine). Returns the hook handle."""
    module._prov_plant = kind

    def hook(mod, _inputs, out):
        plant = getattr(mod, "_prov_plant", "none")
        if plant == "none" or out is None:
            return out
        if isinstance(out, tuple):
            return (apply(plant, out[0]), *out[1:])
        return apply(plant, out)

    return module.register_forward_hook(hook)
