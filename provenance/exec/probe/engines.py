"""What the engines in the run's processes resolved, as run facts under `runtime.<engine>`.

transformers: `runtime.transformers.models.<i>` (class, attn_implementation as resolved,
attn_implementation_requested as the user's call asked: a value or `default`, dtype,
device_map, quantization, name_or_path, revision, commit) and
`runtime.transformers.tokenizers.<i>` (class, name_or_path, revision,
chat_template_sha256), each distinct one numbered in first-load order over the run's
processes (main first; a second load of the same one is not a second entry). A
local directory's name_or_path is written `local:<directory name>` (where a copy lives is
not what it computes with; its files' digests are in `model.files`).

vLLM: `runtime.vllm.*` as the model runner held it (see the probe's `vllm_facts`):
`attention_backend.{requested,resolved,layers.<layer class>}`, `kv_cache_dtype.{requested,
resolved}`, `max_num_batched_tokens`, `dtype`, ... and `envs.VLLM_*`.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from provenance.exec.probe.processes import Process

_MODEL_KEYS = ("class", "attn_implementation", "attn_implementation_requested", "dtype",
               "device_map", "quantization", "name_or_path", "revision", "commit")


def _name(item: dict[str, Any]) -> str:
    name, d = str(item.get("name_or_path", "none")), item.get("dir")
    if isinstance(d, str) and os.path.isdir(name) and os.path.abspath(name) == d:
        return "local:" + os.path.basename(d)
    return name


def _model(item: dict[str, Any]) -> dict[str, Any]:
    out = {k: str(item[k]) for k in _MODEL_KEYS if k in item}
    out["name_or_path"] = _name(item)
    return out


def _tokenizer(item: dict[str, Any]) -> dict[str, Any]:
    out = {k: str(item[k]) for k in ("class", "revision") if k in item}
    out["name_or_path"] = _name(item)
    template = item.get("chat_template")
    out["chat_template_sha256"] = ("sha256:" + hashlib.sha256(template.encode()).hexdigest()
                                   if isinstance(template, str) else "none")
    return out


def transformers_facts(processes: list[Process]) -> dict[str, Any]:
    models: list[dict] = []
    tokenizers: list[dict] = []
    for p in sorted(processes, key=lambda p: p.role != "main"):
        tf = p.engines.get("transformers", {})
        models += [_model(m) for m in tf.get("models") or [] if isinstance(m, dict)]
        tokenizers += [_tokenizer(t) for t in tf.get("tokenizers") or [] if isinstance(t, dict)]
    out: dict[str, Any] = {}
    if models:
        out["models"] = _numbered(models)
    if tokenizers:
        out["tokenizers"] = _numbered(tokenizers)
    return out


def _numbered(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each distinct item once, numbered in first-load order: a second load of the same
    tokenizer (another process, a code path taken at the first chat request) computes
    nothing new, and how many loads a server made by the time a client bound to it must
    not differ two clients of one configuration (seen on the H200: vLLM 0.26's server)."""
    distinct: list[dict[str, Any]] = []
    for item in items:
        if item not in distinct:
            distinct.append(item)
    return {str(i): item for i, item in enumerate(distinct)}


def _merge_runners(runners: list[dict[str, Any]]) -> dict[str, Any]:
    """One runner: its facts. Several (tensor/pipeline parallel workers): each key's value
    where they agree, all of them where they do not."""
    if len(runners) == 1:
        return runners[0]
    out: dict[str, Any] = {}
    for key in sorted({k for r in runners for k in r}):
        values = [r[key] for r in runners if key in r]
        if all(isinstance(v, dict) for v in values):
            out[key] = _merge_runners(values)
        else:
            distinct = sorted({str(v) for v in values})
            out[key] = values[0] if len(distinct) == 1 else distinct
    return out


def vllm_facts(processes: list[Process]) -> dict[str, Any]:
    """`runtime.vllm.*` from the processes that ran a model runner; `envs` as vLLM read them
    (in the first process that imported its model runner), secrets redacted."""
    from provenance.model.redact import redact_value

    runners: list[dict] = []
    envs: dict[str, str] = {}
    for p in processes:
        v = p.engines.get("vllm", {})
        runners += [r for r in v.get("runners") or [] if isinstance(r, dict)]
        if not envs and isinstance(v.get("envs"), dict):
            envs = {str(k): redact_value(str(k), str(x)) for k, x in v["envs"].items()}
    out: dict[str, Any] = _merge_runners(runners) if runners else {}
    for key in ("model", "tokenizer"):  # a local directory: where the copy lives is context
        if isinstance(out.get(key), str) and os.path.isdir(out[key]):
            out[key] = "local:" + os.path.basename(os.path.normpath(out[key]))
    if envs:
        out["envs"] = envs
    return out


def upstream_facts(processes: list[Process]) -> dict[str, Any]:
    """`upstream.*`: what a server prov cannot probe said of itself, as `prov serve`'s
    front asked it (provenance/serve/describe.py); the first process that asked."""
    for p in processes:
        found = p.engines.get("upstream")
        if found:
            return found
    return {}
