"""What the engines in the run's processes resolved, as run facts under `runtime.<engine>`.

transformers: `runtime.transformers.models.<i>` (class, attn_implementation, dtype,
device_map, quantization, name_or_path, revision, commit) and
`runtime.transformers.tokenizers.<i>` (class, name_or_path, revision,
chat_template_sha256), numbered in load order over the run's processes (main first). A
local directory's name_or_path is written `local:<directory name>` (where a copy lives is
not what it computes with; its files' digests are in `model.files`).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from provenance.exec.probe.processes import Process

_MODEL_KEYS = ("class", "attn_implementation", "dtype", "device_map", "quantization",
               "name_or_path", "revision", "commit")


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
        out["models"] = {str(i): m for i, m in enumerate(models)}
    if tokenizers:
        out["tokenizers"] = {str(i): t for i, t in enumerate(tokenizers)}
    return out
