"""Model files a run read: weights and tokenizer files, each with its sha256.

Where they come from: the files the run's processes read (inputs.py's rule) whose names
match the globs below or that lie in a model directory; the files matching the globs in
every model directory, read or not (HF tokenizers read `tokenizer.json` in Rust, out of the
probe's sight); and weight files mapped into a process at exit. Model directories are those
transformers loaded models and tokenizers from (the probe notes them at `from_pretrained`)
and those a vLLM model runner held as its model and tokenizer. Each file is keyed by its
path relative to its model directory (its own directory when it lies in none; with the
directory's name in front when a run read several), as OpenSSF model-signing names the
files of a model directory, and carries the same sha256.

Hashing a 50 GB checkpoint on every run is avoided twice over: a Hugging Face cache file is
a link to `blobs/<sha256>` for LFS files, whose name is the content hash; any other file's
digest is cached by (device, inode, size, mtime, ctime). `source` says which was used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Any

from provenance.exec.probe.processes import Process
from provenance.model.run_sections import ModelFile

WEIGHTS = ("*.safetensors", "*.gguf", "*.bin", "*.pt", "*.pth", "*.safetensors.index.json")
TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.*",
             "merges.txt", "special_tokens_map.json", "added_tokens.json",
             "chat_template.jinja", "chat_template.json")
CONFIG = ("config.json", "generation_config.json")
_HF_BLOB = re.compile(r"^[0-9a-f]{64}$")


def wanted(name: str) -> bool:
    return any(fnmatchcase(name, p) for p in WEIGHTS + TOKENIZER + CONFIG)


def digest(path: str, hasher) -> tuple[str, str]:
    """(sha256 digest, source): "hf-blob-name", "cache" or "computed"."""
    real = os.path.realpath(path)
    parent = os.path.basename(os.path.dirname(real))
    if real != path and parent == "blobs" and _HF_BLOB.match(os.path.basename(real)):
        return "sha256:" + os.path.basename(real), "hf-blob-name"
    cached = hasher.cached(path)
    return hasher.hash(path)[1], "cache" if cached else "computed"


def _engine_dirs(p: Process) -> list[Any]:
    tf = p.engines.get("transformers", {})
    found = [item.get("dir") for item in (tf.get("models") or []) + (tf.get("tokenizers") or [])
             if isinstance(item, dict)]
    for runner in p.engines.get("vllm", {}).get("runners") or []:
        if isinstance(runner, dict):
            found += [runner.get("model"), runner.get("tokenizer")]
    return found


def directories(processes: list[Process]) -> list[str]:
    """The model directories the run's loads named (absolute, existing), in load order."""
    dirs: list[str] = []
    for p in processes:
        for d in _engine_dirs(p):
            if not isinstance(d, str) or not d:
                continue
            d = os.path.normpath(os.path.join(p.cwd or "/", d))
            if os.path.isdir(d) and d not in dirs:
                dirs.append(d)
    return dirs


def _home(path: str, dirs: list[str]) -> str | None:
    return next((d for d in dirs if path.startswith(d.rstrip("/") + "/")), None)


def split_model_files(paths: list[str], dirs: list[str]) -> tuple[list[str], list[str]]:
    """(model files, other files) of the counted files a run read."""
    model = [p for p in paths if wanted(os.path.basename(p)) or _home(p, dirs)]
    return model, [p for p in paths if p not in set(model)]


def model_file_facts(processes: list[Process], hasher,
                     read: Sequence[str] = ()) -> dict[str, ModelFile]:
    """`model.files.<relpath>`: {sha256, size, source (context)}; {} when none was read.
    `read`: the model files the processes read (split_model_files)."""
    dirs = directories(processes)
    files: dict[str, str] = {}  # path -> its directory
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if wanted(name) and os.path.isfile(os.path.join(d, name)):
                files.setdefault(os.path.join(d, name), d)
    real = {os.path.realpath(f) for f in files}
    for path in [*read, *(w for p in processes for w in p.mapped_weights)]:
        if path not in files and os.path.realpath(path) in real:
            continue  # one file by two names (a link, a mapping's resolved path)
        real.add(os.path.realpath(path))
        files.setdefault(path, _home(path, dirs) or os.path.dirname(path))
    several = len(set(files.values())) > 1
    out: dict[str, ModelFile] = {}
    for path, d in sorted(files.items()):
        rel = os.path.relpath(path, d)
        key = f"{os.path.basename(d)}/{rel}" if several else rel
        sha, source = digest(path, hasher)
        out[key] = {"sha256": sha, "size": os.path.getsize(path), "source": source}
    return out
