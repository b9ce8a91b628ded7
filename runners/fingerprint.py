"""Digests of what a result depends on: model weights, tokenizer, evaluation text."""

from __future__ import annotations

import hashlib
from pathlib import Path

from provenance.model.digests import file_sha256, hex_of, sha256_digest

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                   "special_tokens_map.json")


def _tree_digest(entries: list[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for name, digest in sorted(entries):
        h.update(f"{name}\0{digest}\n".encode())
    return "sha256:" + h.hexdigest()


def model_digest(model_dir: Path) -> str:
    """Over config.json and every weight file (safetensors / bin), by name and content."""
    model_dir = Path(model_dir)
    files = [p for p in sorted(model_dir.iterdir()) if p.is_file() and (
        p.suffix in (".safetensors", ".bin") or p.name == "config.json")]
    if not files:
        raise FileNotFoundError(f"{model_dir}: no config.json or weight files")
    return _tree_digest([(p.name, hex_of(file_sha256(p))) for p in files])


def tokenizer_digest(model_dir: Path) -> str:
    files = [Path(model_dir) / n for n in TOKENIZER_FILES if (Path(model_dir) / n).is_file()]
    if not files:
        raise FileNotFoundError(f"{model_dir}: no tokenizer files")
    return _tree_digest([(p.name, hex_of(file_sha256(p))) for p in files])


def text_digest(text: str) -> str:
    return sha256_digest(text.encode("utf-8"))
