"""Tokenise the evaluation text once, so every engine scores the very same token ids."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from runners.fingerprint import model_digest, text_digest, tokenizer_digest


@dataclass
class Prepared:
    model: Path
    text: str
    ids: np.ndarray  # int64
    offsets: list[tuple[int, int]]  # character span of each token in text
    truncated_from: int  # tokens in the whole text
    model_digest: str
    tokenizer_digest: str
    text_digest: str
    segments: list[dict] | None = None  # TEXT.segments.json beside the text, if any

    def decode(self, a: int, b: int) -> str:
        """Text of tokens a..b-1 (by character offsets, so byte-level pieces join cleanly)."""
        b = min(b, len(self.offsets))
        if a >= b:
            return ""
        return self.text[self.offsets[a][0] : self.offsets[b - 1][1]]


def prepare(model: Path, text_path: Path, max_tokens: int) -> Prepared:
    from tokenizers import Tokenizer

    model = Path(model)
    tok_file = model / "tokenizer.json"
    if not tok_file.is_file():
        raise FileNotFoundError(f"{model}: no tokenizer.json")
    text = Path(text_path).read_text(encoding="utf-8")
    enc = Tokenizer.from_file(str(tok_file)).encode(text, add_special_tokens=False)
    ids = np.asarray(enc.ids, dtype=np.int64)
    if len(ids) < 2:
        raise ValueError(f"{text_path}: fewer than two tokens")
    n = min(len(ids), max_tokens)
    from runners.analysis.segments import load_segments

    return Prepared(model, text, ids[:n], [tuple(o) for o in enc.offsets[:n]], len(ids),
                    model_digest(model), tokenizer_digest(model), text_digest(text),
                    load_segments(Path(text_path)))
