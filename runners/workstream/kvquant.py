"""An emulated quantized KV cache for transformers on CPU (quantize-dequantize on write).

transformers' own QuantizedCache needs optimum-quanto or HQQ; this one needs neither. Every
key and value vector written to the cache is rounded to a symmetric integer grid with one
absmax scale per (token, head) — int8: 127 levels each side, int4: 7, int2: 1 (ternary) — and stored
dequantized, so attention reads exactly what a cache of that precision would hold. It is an
emulation of the storage precision (not a faster cache), and is recorded as such.
"""

from __future__ import annotations

LEVELS = {"int8": 127, "int4": 7, "int2": 1}
KV_CACHE_CHOICES = ("auto", *LEVELS)


def fake_quant(x, levels: int):
    import torch

    scale = x.abs().amax(dim=-1, keepdim=True).float().clamp_min(1e-12) / levels
    q = torch.clamp(torch.round(x.float() / scale), -levels, levels)
    return (q * scale).to(x.dtype)


def make_cache(kind: str, config):
    """A DynamicCache, quantizing on write unless kind is 'auto'."""
    from transformers.cache_utils import DynamicCache

    if kind == "auto":
        return DynamicCache(config=config)
    levels = LEVELS[kind]

    class QuantizedDynamicCache(DynamicCache):
        def update(self, key_states, value_states, layer_idx, *args, **kwargs):
            return super().update(fake_quant(key_states, levels),
                                  fake_quant(value_states, levels), layer_idx, *args, **kwargs)

    return QuantizedDynamicCache(config=config)


def cache_kwarg(model) -> str:
    """The forward() keyword for a cache: `cache` in transformers >= 5.2x, where
    `past_key_values` is deprecated (removed in 5.40); `past_key_values` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters \
        else "past_key_values"
