"""Quantized checkpoints written from a float one, in the compressed-tensors format that
llm-compressor writes, so that vLLM loads them through its own compressed-tensors path.

W4A16 / W8A16: every linear layer's weight under `model.layers` quantized symmetrically,
round-to-nearest, per group of `group` input channels (scale = max|w| / (2^(bits-1) - 1)),
stored `pack-quantized`: int32-packed weights (compressed_tensors' own `pack_to_int32`),
bfloat16 scales and the original shape.
AWQ W4A16 (`--awq`): the AutoAWQ GEMM layout vLLM's `awq` loader reads: asymmetric 4-bit
round-to-nearest per group of 128 input channels (no activation-aware scale search, so AWQ's
format, not its calibration), `qweight` and `qzeros` int32 with eight values packed along the
output dimension in AWQ's order, float16 `scales`.
NVFP4A16: FP4 (E2M1) weights in groups of 16 with FP8 (E4M3) group scales under one FP32
global scale per tensor, computed and packed by compressed_tensors itself (its NVFP4A16
preset, `generate_gparam`, `calculate_qparams` and `NVFP4PackedCompressor`), stored
`nvfp4-pack-quantized`; vLLM runs it on Hopper as weight-only FP4 through Marlin.
Embeddings, norms and the LM head are kept as they are and the LM head is listed under
`ignore`. This is no calibrated quantization (no GPTQ, no AWQ): it fixes the format and the
weights' bytes, which is what the identity needs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError

LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
NVFP4_GROUP = 16  # the NVFP4 format's group size (FP8 scale per 16 FP4 values)


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


AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # AutoAWQ's nibble order within one int32


def _awq_pack(q):
    """[rows, cols] ints in 0..15 -> int32 [rows, cols / 8], AutoAWQ's order."""
    import torch

    rows, cols = q.shape
    q = q.to(torch.int64).reshape(rows, cols // 8, 8)
    packed = torch.zeros(rows, cols // 8, dtype=torch.int64)
    for i, j in enumerate(AWQ_ORDER):
        packed |= q[:, :, j] << (4 * i)
    return torch.where(packed >= 2**31, packed - 2**32, packed).to(torch.int32)  # wrap


def quantize_awq(w, group: int = 128) -> dict[str, Any]:
    """AutoAWQ GEMM tensors for one linear weight (out x in): qweight, qzeros, scales."""
    import torch

    out_f, in_f = w.shape
    if in_f % group or out_f % 8:
        raise ProvError(f"AWQ: {in_f} inputs / {out_f} outputs do not fit groups of {group} "
                        "and packs of 8", 2)
    g = w.float().t().reshape(in_f // group, group, out_f)  # AWQ stores [in, out]
    lo, hi = g.amin(dim=1).clamp(max=0), g.amax(dim=1).clamp(min=0)
    scale = ((hi - lo) / 15).clamp(min=1e-8)
    zero = torch.round(-lo / scale).clamp(0, 15)
    q = (torch.round(g / scale.unsqueeze(1)) + zero.unsqueeze(1)).clamp(0, 15)
    scale16 = scale.to(torch.float16)
    return {"qweight": _awq_pack(q.reshape(in_f, out_f)), "qzeros": _awq_pack(zero),
            "scales": scale16}


def awq_config(group: int = 128) -> dict[str, Any]:
    return {"quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True,
            "version": "gemm", "modules_to_not_convert": None}


def write_awq(src: Path, out: Path, group: int = 128) -> dict[str, Any]:
    """Write `out`, an AWQ W4A16 (GEMM layout) copy of the checkpoint at `src`."""
    quantized = _write(src, out, lambda t: quantize_awq(t, group), awq_config(group))
    return {"scheme": "AWQ W4A16", "group_size": group, "layers_quantized": quantized,
            "format": "awq gemm"}


def quantize_nvfp4(w) -> dict[str, Any]:
    """compressed_tensors' own NVFP4A16 tensors for one linear weight (out x in)."""
    from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
    from compressed_tensors.quantization.utils.helpers import calculate_qparams, generate_gparam

    out_f, in_f = w.shape
    if in_f % NVFP4_GROUP:
        raise ProvError(f"input size {in_f} is not a multiple of {NVFP4_GROUP} (NVFP4)", 2)
    scheme = _nvfp4_scheme()
    w32 = w.float()
    global_scale = generate_gparam(w32.min(), w32.max())
    groups = w32.reshape(out_f, in_f // NVFP4_GROUP, NVFP4_GROUP)
    scale, _ = calculate_qparams(groups.amin(dim=2), groups.amax(dim=2), scheme.weights,
                                 global_scale=global_scale)
    return dict(NVFP4PackedCompressor.compress(
        {"weight": w, "weight_scale": scale, "weight_global_scale": global_scale}, scheme))


def _nvfp4_scheme():
    from compressed_tensors.quantization import preset_name_to_scheme

    return preset_name_to_scheme("NVFP4A16", ["Linear"])


def nvfp4_config() -> dict[str, Any]:
    from compressed_tensors.quantization import QuantizationConfig

    return QuantizationConfig(config_groups={"group_0": _nvfp4_scheme()},
                              quant_method="compressed-tensors", format="nvfp4-pack-quantized",
                              quantization_status="compressed",
                              ignore=["lm_head"]).model_dump(mode="json")


def write_wna16(src: Path, out: Path, bits: int, group: int = 128) -> dict[str, Any]:
    """Write `out`, a W{bits}A16 copy of the checkpoint at `src` (tokenizer files copied)."""
    if bits not in (4, 8):
        raise ProvError(f"W{bits}A16: only 4 and 8 bits are written", 2)
    quantized = _write(src, out, lambda t: quantize_weight(t, bits, group),
                       quantization_config(bits, group))
    return {"bits": bits, "group_size": group, "layers_quantized": quantized,
            "format": "compressed-tensors pack-quantized"}


def write_nvfp4a16(src: Path, out: Path) -> dict[str, Any]:
    """Write `out`, an NVFP4A16 copy of the checkpoint at `src` (tokenizer files copied)."""
    quantized = _write(src, out, quantize_nvfp4, nvfp4_config())
    return {"scheme": "NVFP4A16", "group_size": NVFP4_GROUP, "layers_quantized": quantized,
            "format": "compressed-tensors nvfp4-pack-quantized"}


def _write(src: Path, out: Path, quantize, qconfig: dict[str, Any]) -> int:
    """Every linear weight under model.layers replaced by what `quantize` returns for it
    (`<layer>.<name>`); the rest as it is."""
    from safetensors.torch import load_file, save_file

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
            for k, v in quantize(t).items():
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
    cfg["quantization_config"] = qconfig
    (out / "config.json").write_text(json.dumps(cfg, indent=1))
    return quantized


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="write a W4A16/W8A16/NVFP4A16 compressed-tensors "
                                 "or AWQ W4A16 copy")
    ap.add_argument("src", type=Path)
    ap.add_argument("out", type=Path)
    kind = ap.add_mutually_exclusive_group(required=True)
    kind.add_argument("--bits", type=int, choices=(4, 8), help="W4A16 / W8A16 (int)")
    kind.add_argument("--nvfp4", action="store_true", help="NVFP4A16 (FP4 weights)")
    kind.add_argument("--awq", action="store_true", help="AWQ W4A16 (AutoAWQ GEMM layout)")
    ap.add_argument("--group", type=int, default=128, help="int group size")
    args = ap.parse_args(argv)
    if args.nvfp4:
        done = write_nvfp4a16(args.src, args.out)
    elif args.awq:
        done = write_awq(args.src, args.out, args.group)
    else:
        done = write_wna16(args.src, args.out, args.bits, args.group)
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
