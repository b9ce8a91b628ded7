"""The rows `prov show` prints for what the probe saw inside the run: the engine block
(what torch, transformers and vLLM resolved), the model and input files with digests, a
process's environment at start where it differed, edited code, and libraries flagged as
shadowing or owned by nothing."""

from __future__ import annotations

from typing import Any

TORCH_SHOWN = ("num_threads", "num_interop_threads", "float32_matmul_precision",
               "deterministic_algorithms", "flush_denormal", "default_dtype",
               "cuda_matmul_allow_tf32", "cudnn_allow_tf32")


def _torch(torch: dict[str, Any]) -> list[tuple[str, str]]:
    flags = torch.get("flags") or {}
    rows = [("torch", "  ".join(f"{k}={flags[k]}" for k in TORCH_SHOWN if k in flags))]
    for name, c in sorted((torch.get("changed") or {}).items()):
        rows.append(("", f"changed by the run: {name} {c.get('at_import')} -> {c.get('at_exit')}"))
    for signature, kernel in sorted((torch.get("sdpa_kernels") or {}).items()):
        rows.append(("", f"sdpa kernel {kernel}: {signature}"))
    return rows


def _vllm(v: dict[str, Any]) -> list[tuple[str, str]]:
    attn, kv = v.get("attention_backend") or {}, v.get("kv_cache_dtype") or {}
    layers = ", ".join(f"{k}={b}" for k, b in sorted((attn.get("layers") or {}).items()))
    return [
        ("vllm", f"attention {attn.get('resolved')} (requested {attn.get('requested')}; "
                 f"per layer: {layers or 'none'})"),
        ("", f"kv cache {kv.get('resolved')} (requested {kv.get('requested')})  "
             f"dtype {v.get('dtype')}  quantization {v.get('quantization')}"),
        ("", f"model {v.get('model')}  max_model_len {v.get('max_model_len')}  "
             f"chunked prefill {v.get('chunked_prefill')} "
             f"(max_num_batched_tokens {v.get('max_num_batched_tokens')})  "
             f"TP/PP/DP {v.get('tensor_parallel_size')}/{v.get('pipeline_parallel_size')}/"
             f"{v.get('data_parallel_size')}  seed {v.get('seed')}"),
    ]


def _transformers(t: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for i, m in sorted((t.get("models") or {}).items()):
        rows.append(("transformers", f"model {i}: {m.get('class')} {m.get('name_or_path')}  "
                     f"attn {m.get('attn_implementation')} "
                     f"(requested {m.get('attn_implementation_requested')})  "
                     f"dtype {m.get('dtype')}  "
                     f"quantization {m.get('quantization')}  device_map {m.get('device_map')}"))
    for i, tok in sorted((t.get("tokenizers") or {}).items()):
        rows.append(("", f"tokenizer {i}: {tok.get('class')} {tok.get('name_or_path')}  "
                     f"chat template {tok.get('chat_template_sha256')}"))
    return rows


def engine_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    probe = facts.get("probe") or {}
    if not probe:
        return []
    rows = [("probe", f"{probe.get('state')}: {probe.get('processes', 0)} process(es), "
                      f"{'all' if probe.get('complete') else 'not all'} seen to their exit")]
    rows += [("", f"error: {e}") for e in probe.get("errors") or []]
    code = facts.get("code") or {}
    if code.get("command"):
        rows.append(("command", " ".join(map(str, code["command"]))))
    if code.get("script"):
        rows.append(("script", f"{code['script'].get('path')}  {code['script'].get('sha256')}"))
    for dist, d in sorted((code.get("modules") or {}).items()):
        for f, digest in sorted((d.get("edited") or {}).items()):
            rows.append(("edited", f"{dist} {d.get('version')}: {f} differs from RECORD "
                                   f"({digest})"))
    runtime = facts.get("runtime") or {}
    if isinstance(runtime.get("torch"), dict) and runtime["torch"].get("flags"):
        rows += _torch(runtime["torch"])
    if runtime.get("transformers"):
        rows += _transformers(runtime["transformers"])
    if runtime.get("vllm", {}).get("attention_backend"):
        rows += _vllm(runtime["vllm"])
    for rel, f in sorted(((facts.get("model") or {}).get("files") or {}).items()):
        rows.append(("model file", f"{rel}  {f.get('sha256')}  ({f.get('source')})"))
    for name, f in sorted(((facts.get("inputs") or {}).get("files") or {}).items()):
        rows.append(("input file", f"{name}  {f.get('sha256')}  ({f.get('size')} bytes)"))
    started = (runtime.get("process_env") or {}).items()
    rows += [("process env", f"{name}={value}") for name, value in sorted(started)]
    libs = probe.get("libraries") or {}
    rows += [("lib shadowing", s) for s in libs.get("shadowing") or []]
    rows += [("lib unowned", s) for s in libs.get("unowned") or []]
    return rows
