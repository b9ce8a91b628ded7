"""Quantized checkpoints written from a float one, in the compressed-tensors format that
llm-compressor writes, so that vLLM loads them through its own compressed-tensors path.

W4A16 / W8A16: every linear layer's weight under `model.layers` quantized symmetrically,
round-to-nearest, per group of `group` input channels (scale = max|w| / (2^(bits-1) - 1)),
stored `pack-quantized`: int32-packed weights (compressed_tensors' own `pack_to_int32`),
bfloat16 scales and the original shape. Embeddings, norms and the LM head are kept as they
are and the LM head is listed under `ignore`. This is no calibrated quantization (no GPTQ,
no AWQ): it fixes the format and the weights' bytes, which is what the identity needs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError

LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _pack_to_int32():
    try:
        from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32
    except ImportError:  # older layouts of the library
        from compressed_tensors.compressors.quantized_compressors.pack_quantized import (
            pack_to_int32,
        )
    return pack_to_int32


def quantize_weight(w, bits: int, group: int) -> dict[str, Any]:
    """The three tensors compressed-tensors stores for one linear weight (out x in)."""
    import torch

    out_f, in_f = w.shape
    if in_f % group:
        raise ProvError(f"input size {in_f} is not a multiple of the group size {group}", 2)
    qmax = 2 ** (bits - 1) - 1
    g = w.float().reshape(out_f, in_f // group, group)
    scale = (g.abs().amax(dim=2) / qmax).clamp(min=1e-8).to(torch.bfloat16)
    q = torch.round(g / scale.float().unsqueeze(2)).clamp(-qmax - 1, qmax)
    q = q.reshape(out_f, in_f).to(torch.int8)
    return {"weight_packed": _pack_to_int32()(q, bits), "weight_scale": scale,
            "weight_shape": torch.tensor([out_f, in_f], dtype=torch.int64)}


def quantization_config(bits: int, group: int) -> dict[str, Any]:
    weights = {"num_bits": bits, "type": "int", "symmetric": True, "strategy": "group",
               "group_size": group, "dynamic": False, "actorder": None, "observer": "minmax"}
    return {"quant_method": "compressed-tensors", "format": "pack-quantized",
            "quantization_status": "compressed", "kv_cache_scheme": None,
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights,
                                          "input_activations": None,
                                          "output_activations": None,
                                          "format": "pack-quantized"}},
            "ignore": ["lm_head"]}


def write_wna16(src: Path, out: Path, bits: int, group: int = 128) -> dict[str, Any]:
    """Write `out`, a W{bits}A16 copy of the checkpoint at `src` (tokenizer files copied)."""
    from safetensors.torch import load_file, save_file

    if bits not in (4, 8):
        raise ProvError(f"W{bits}A16: only 4 and 8 bits are written", 2)
    src, out = Path(src), Path(out)
    shards = sorted(src.glob("*.safetensors"))
    if len(shards) != 1:
        raise ProvError(f"{src}: expected one .safetensors file, found {len(shards)}", 2)
    tensors = load_file(str(shards[0]))
    written: dict[str, Any] = {}
    quantized = 0
    for name, t in tensors.items():
        base, _, leaf = name.rpartition(".")
        if leaf == "weight" and t.ndim == 2 and base.rsplit(".", 1)[-1] in LINEAR:
            for k, v in quantize_weight(t, bits, group).items():
                written[f"{base}.{k}"] = v.contiguous()
            quantized += 1
        else:
            written[name] = t.contiguous()
    out.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and f.suffix != ".safetensors" and f.name != "config.json":
            shutil.copy2(f, out / f.name)
    save_file(written, str(out / "model.safetensors"), metadata={"format": "pt"})
    cfg = json.loads((src / "config.json").read_text())
    cfg["quantization_config"] = quantization_config(bits, group)
    (out / "config.json").write_text(json.dumps(cfg, indent=1))
    return {"bits": bits, "group_size": group, "layers_quantized": quantized,
            "format": "compressed-tensors pack-quantized"}


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="write a W4A16/W8A16 compressed-tensors copy")
    ap.add_argument("src", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--bits", type=int, choices=(4, 8), required=True)
    ap.add_argument("--group", type=int, default=128)
    args = ap.parse_args(argv)
    print(json.dumps(write_wna16(args.src, args.out, args.bits, args.group)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
