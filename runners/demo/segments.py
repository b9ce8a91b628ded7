"""A workstream-like text with labelled segments: tool-call JSON, code and prose, so a
divergence's clusters can be tied to the content they fall in.

Deterministic (seeded grammar, no data set). `generate_segmented` returns the text and its
segments as character spans; `write_segmented` writes TEXT and TEXT.segments.json beside it
(the file runners/analysis/segments.py reads).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from runners.demo.corpus import WORDS, sentence, tool_call

SEGMENT_TYPES = ("tool-json", "code", "prose")
SEGMENTS_FORMAT = "prov-segments/1"
FUNCS = ["load_block", "score_tokens", "hash_layer", "compare_runs", "read_manifest"]
NAMES = ["ids", "logits", "block", "digest", "layer", "scores", "cache"]


def _code(rng: random.Random) -> str:
    fn, a, b = rng.choice(FUNCS), rng.choice(NAMES), rng.choice(NAMES)
    body = [f"def {fn}({a}, {b}={rng.randint(0, 64)}):",
            f'    """{sentence(rng)}"""']
    for _ in range(rng.randint(2, 6)):
        x, y = rng.choice(NAMES), rng.choice(NAMES)
        body.append(rng.choice([f"    {x} = {y}[{rng.randint(0, 9)}:] + {b}",
                                f"    if {x} is None:\n        return {y}",
                                f"    for i in range({a}):\n        {x}.append(i * {b})"]))
    body.append(f"    return {rng.choice(NAMES)}")
    return "```python\n" + "\n".join(body) + "\n```"


def _tool_json(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return tool_call(rng)
    result = {"result": {w: rng.randint(0, 999) for w in rng.sample(WORDS, rng.randint(2, 5))},
              "ok": rng.random() < 0.9}
    return json.dumps(result)


def _prose(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(2, 6)))


MAKERS = {"tool-json": _tool_json, "code": _code, "prose": _prose}


def generate_segmented(n_chars: int, seed: int = 0) -> tuple[str, list[dict]]:
    """About n_chars of text (at least) in segments separated by blank lines."""
    rng = random.Random(seed)
    parts, segments, at = [], [], 0
    while at < n_chars:
        kind = rng.choices(SEGMENT_TYPES, weights=(3, 2, 4))[0]
        piece = MAKERS[kind](rng)
        segments.append({"start": at, "end": at + len(piece), "type": kind})
        parts.append(piece + "\n\n")
        at += len(piece) + 2
    return "".join(parts), segments


def write_segmented(path: Path, text: str, segments: list[dict]) -> Path:
    path = Path(path)
    path.write_text(text, encoding="utf-8")
    side = path.with_name(path.name + ".segments.json")
    side.write_text(json.dumps({"format": SEGMENTS_FORMAT, "types": list(SEGMENT_TYPES),
                                "segments": segments}))
    return side
