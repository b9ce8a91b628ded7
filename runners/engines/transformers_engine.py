"""transformers (torch) adapter: one forward pass over the whole sequence, no KV cache.

The model is built from a deep copy of its config: sharing one config object between two
models silently runs the second with the first's attention implementation. The resolved
implementation is read back from the loaded model, and an SDPA call is asked which kernel
torch picks for its real arguments (torch._fused_sdp_choice), so a run is labelled with what
ran, not what was requested.

Above runners/hidden.py's HIDDEN_CELLS (scored positions x vocabulary), or with
`store=hidden`, the run keeps no logits: it stores the final post-norm hidden states, the
output head's name and sha256, and the engine's logits at a few sampled positions only (the
forward pass computes no other logits: logits_to_keep).
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import numpy as np

from runners import hidden as hs
from runners.engines.base import EngineConfig, EngineError, ScoreOutput
from runners.engines.digests import block_digests

SDPA_KERNELS = ("MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")


_raw = hs.raw_bits  # the tensor's bytes as an integer array (bf16 has no numpy dtype)


def _digest_fn(device: str, notes: list[str]):
    """Per-block digests of named tensors: sha256 of the host bytes on CPU; on a GPU the
    splitmix128 Triton kernel (runners/gpu/digest.py), one launch for every tensor, so
    hidden states never travel to the host. Should the kernel fail, the host computes the
    same algorithm (same digests) and a note says so."""
    if not str(device).startswith("cuda"):
        def on_host(named: dict, block: int) -> dict[str, list[str]]:
            return {k: block_digests(_raw(t), block) for k, t in named.items()}

        return on_host, "sha256"
    from runners.gpu.digest import ALGO, digest_many, digest_numpy

    def on_gpu(named: dict, block: int) -> dict[str, list[str]]:
        try:
            return dict(zip(named, digest_many(list(named.values()), block), strict=True))
        except Exception as exc:  # e.g. no C compiler for Triton's launcher
            note = f"GPU digest kernel failed ({type(exc).__name__}: {exc}"[:200] + \
                "); digests computed on the host with the same algorithm"
            if note not in notes:
                notes.append(note)
            return {k: digest_numpy(_raw(t), block) for k, t in named.items()}

    return on_gpu, ALGO


class _SdpaRecorder:
    """Wraps F.scaled_dot_product_attention for one forward and records torch's kernel choice."""

    def __init__(self) -> None:
        self.choices: set[str] = set()
        self.errors: set[str] = set()

    def __enter__(self):
        import torch
        import torch.nn.functional as F

        self._orig = F.scaled_dot_product_attention
        names = {int(v): k for k, v in torch.nn.attention.SDPBackend.__members__.items()}

        def wrapped(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                    enable_gqa=False, **kw):
            try:
                choice = torch._fused_sdp_choice(q, k, v, attn_mask, dropout_p, is_causal,
                                                 scale=scale, enable_gqa=enable_gqa)
                self.choices.add(names.get(int(choice), str(choice)))
            except Exception as exc:  # a probe failure must not change the run
                self.errors.add(f"{type(exc).__name__}: {exc}"[:200])
            return self._orig(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p,
                              is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, **kw)

        F.scaled_dot_product_attention = wrapped
        return self

    def __exit__(self, *exc) -> None:
        import torch.nn.functional as F

        F.scaled_dot_product_attention = self._orig


class TransformersEngine:
    def __init__(self, config: EngineConfig) -> None:
        self.config = config

    def score(self, model_dir: str, ids: list[int], block: int) -> ScoreOutput:
        import contextlib

        import torch

        attn, dtype_name, device, kernel = self._options()
        model, resolved, param_dtype = _load(model_dir, attn, dtype_name, device)
        captured: dict[str, Any] = {}
        inner = model.get_decoder() if hasattr(model, "get_decoder") else model.model
        plant = self.config.get("plant", "none")
        if plant != "none":
            # a negative control (runners/planted.py) on the final hidden states, installed
            # before the capture hook: the stored hidden states and the logits both carry it
            from runners import planted

            planted.install(inner.norm, plant)
        hook = inner.norm.register_forward_hook(
            lambda _m, _i, out: captured.__setitem__("final", out.detach())
        )
        head = model.get_output_embeddings().weight
        mode = hs.store_mode(self.config.get("store"), len(ids) - 1, int(head.shape[0]))
        rows = hs.sample_rows(len(ids) - 1) if mode == "hidden" else None
        keep = 0 if rows is None else torch.from_numpy(rows).to(device)
        x = torch.tensor([ids], dtype=torch.long, device=device)
        recorder = _SdpaRecorder() if attn == "sdpa" else contextlib.nullcontext()
        with torch.inference_mode(), _forced_kernel(kernel), recorder:
            out = model(input_ids=x, output_hidden_states=True, use_cache=False,
                        logits_to_keep=keep)
        hook.remove()

        notes: list[str] = []
        digest, algo = _digest_fn(device, notes)
        named = {f"hidden.{i}": h[0] for i, h in enumerate(out.hidden_states)}
        named["final_norm"] = captured["final"][0]
        named["logits" if rows is None else "logits_sampled"] = out.logits[0]
        digests = digest(named, block)
        runtime = _runtime(attn, resolved, dtype_name, param_dtype, out.logits.dtype, device,
                           algo)
        if attn == "sdpa":
            runtime["attention_backend"]["sdpa_kernel"] = _kernel_fact(kernel, recorder)
        head_digest = hashlib.sha256(_raw(head).tobytes()).hexdigest()
        if rows is not None:
            return _hidden_output(model, head, head_digest, captured["final"][0], out.logits[0],
                                  rows, digests, runtime, notes)
        return ScoreOutput(
            scores=out.logits[0, :-1].float().cpu().numpy(),
            kind="logits",
            full_vocab=True,
            digests=digests,
            runtime=runtime,
            final_hidden=captured["final"][0].float().cpu().numpy(),
            head_digest=head_digest,
            notes=notes,
        )

    def _options(self) -> tuple[str, str, str, str | None]:
        """attn, dtype, device and the forced sdpa kernel, checked before torch loads."""
        attn = self.config.get("attn", "sdpa")
        kernel = self.config.get("sdpa_kernel")
        if kernel is not None and kernel not in SDPA_KERNELS:
            raise EngineError(f"sdpa_kernel must be one of {', '.join(SDPA_KERNELS)}")
        if kernel is not None and attn != "sdpa":
            raise EngineError("sdpa_kernel needs attn=sdpa")
        return (attn, self.config.get("dtype", "float32"), self.config.get("device", "cpu"),
                kernel)


def _load(model_dir: str, attn: str, dtype_name: str, device: str):
    """The model in eval mode, the attention implementation it resolved and its weights'
    dtype; an engine that did not load what was asked for refuses."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoConfig.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, config=copy.deepcopy(base), attn_implementation=attn,
        dtype=getattr(torch, dtype_name)
    ).to(device)
    model.eval()
    resolved = getattr(model.config, "_attn_implementation", None)
    if resolved != attn:
        raise EngineError(f"asked for attn={attn} but the model resolved {resolved!r}")
    param_dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
    if param_dtype != dtype_name:
        raise EngineError(f"asked for dtype={dtype_name} but weights are {param_dtype}")
    return model, resolved, param_dtype


def _forced_kernel(kernel: str | None):
    """torch's sdpa_kernel context for a forced kernel, else nothing."""
    import contextlib

    if kernel is None:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([getattr(SDPBackend, kernel)])


def _runtime(attn: str, resolved: str | None, dtype_name: str, param_dtype: str, logits_dtype,
             device: str, algo: str) -> dict[str, Any]:
    import torch
    import transformers

    return {
        "engine": "transformers",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        # named attention_backend so the gate's attention-backend preset covers it
        "attention_backend": {"requested": attn, "resolved": resolved},
        "dtype": {"requested": dtype_name, "resolved": param_dtype,
                  "logits": str(logits_dtype).removeprefix("torch.")},
        "device": device,
        "digest": algo,
        "kv_cache": {"dtype": "none", "note": "single forward pass, use_cache=False"},
        "num_threads": torch.get_num_threads(),
    }


def _kernel_fact(kernel: str | None, recorder: _SdpaRecorder) -> dict[str, Any]:
    """The sdpa kernel forced and the ones the recorder saw chosen."""
    kern: dict[str, Any] = {"forced": kernel or "none",
                            "resolved": sorted(recorder.choices)
                            or ["unavailable: no sdpa call seen"]}
    if recorder.errors:
        kern["probe_errors"] = sorted(recorder.errors)
    return kern


def _hidden_output(model, head, head_digest: str, final, sampled, rows: np.ndarray,
                   digests: dict, runtime: dict, notes: list[str]) -> ScoreOutput:
    """A hidden-state result: final post-norm hidden states of the scored rows (raw bits in
    the model's dtype), the output head's tensor name, and the sampled engine logits."""
    dtype = str(final.dtype).removeprefix("torch.")
    name = next(n for n, p in model.named_parameters() if p is head)
    storage = {"kind": "hidden", "hidden_dtype": dtype, "hidden_shape": [int(final.shape[0]) - 1,
                                                                       int(final.shape[1])],
               "head": {"tensor": name, "dtype": str(head.dtype).removeprefix("torch."),
                        "shape": list(head.shape), "sha256": head_digest},
               "sampled_rows": len(rows), "threshold_cells": hs.HIDDEN_CELLS}
    return ScoreOutput(
        scores=np.zeros((0, int(head.shape[0])), dtype=np.float32),
        kind="hidden",
        full_vocab=True,
        digests=digests,
        runtime=runtime,
        final_hidden=_raw(final[:-1]),
        head_digest=head_digest,
        notes=notes,
        storage=storage,
        extra_arrays={"sample_rows": rows, "sample_logits": _raw(sampled)},
    )
