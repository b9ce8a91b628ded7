"""Model files a run read: weights and tokenizer files, each with its sha256.

Where they come from: the directories transformers loaded models and tokenizers from
(the probe notes them at `from_pretrained`), and weight files mapped into a process at exit
(safetensors and GGUF are read through mmap). Each file is keyed by its path relative to
its model directory (with the directory's name in front when a run read several), as
OpenSSF model-signing names the files of a model directory, and carries the same sha256.

Hashing a 50 GB checkpoint on every run is avoided twice over: a Hugging Face cache file is
a link to `blobs/<sha256>` for LFS files, whose name is the content hash; any other file's
digest is cached by (device, inode, size, mtime). `source` says which was used.
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase
from typing import Any

from provenance.exec.probe.processes import Process

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
    try:
        st = os.stat(path)
        held = hasher.entries.get(path)
        cached = bool(held) and held[:4] == [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    except OSError:
        cached = False
    return hasher.hash(path)[1], "cache" if cached else "computed"


def _directories(processes: list[Process]) -> list[str]:
    dirs: list[str] = []
    for p in processes:
        tf = p.engines.get("transformers", {})
        for item in (tf.get("models") or []) + (tf.get("tokenizers") or []):
            d = item.get("dir") if isinstance(item, dict) else None
            if isinstance(d, str) and os.path.isdir(d) and d not in dirs:
                dirs.append(d)
    return dirs


def model_file_facts(processes: list[Process], hasher) -> dict[str, Any]:
    """`model.files.<relpath>`: {sha256, size, source (context)}; {} when none was read."""
    dirs = _directories(processes)
    files: dict[str, str] = {}  # path -> its directory
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if wanted(name) and os.path.isfile(os.path.join(d, name)):
                files.setdefault(os.path.join(d, name), d)
    for p in processes:
        for path in p.mapped_weights:
            files.setdefault(path, os.path.dirname(path))
    several = len(set(files.values())) > 1
    out: dict[str, Any] = {}
    for path, d in sorted(files.items()):
        rel = os.path.relpath(path, d)
        key = f"{os.path.basename(d)}/{rel}" if several else rel
        sha, source = digest(path, hasher)
        out[key] = {"sha256": sha, "size": os.path.getsize(path), "source": source}
    return out
