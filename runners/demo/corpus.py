"""Deterministic text for the demo: prose plus JSON tool calls, like a small agentic trace.

Generated from a seeded grammar so the project ships no data set and every build sees the
same bytes (the text digest goes into each result).
"""

from __future__ import annotations

import json
import random

SUBJECTS = ["the engine", "a worker", "the scheduler", "our model", "the cache", "each run",
            "the tokenizer", "a kernel", "the backend", "this trace"]
VERBS = ["reads", "writes", "scores", "compares", "records", "drops", "keeps", "hashes",
         "loads", "checks"]
OBJECTS = ["the logits", "every token", "a block of positions", "the hidden states",
           "the prompt", "its manifest", "the weights", "a digest", "the attention scores",
           "the output head"]
TAILS = ["before the gate opens", "in fp32", "on the CPU", "twice in a row", "without a seed",
         "after each layer", "for the reference", "with the same ids", "at every position",
         "and then stops"]
TOOLS = ["search", "read_file", "run_tests", "write_file", "list_dir"]
ARGS = ["query", "path", "pattern", "limit", "mode"]
WORDS = ["alpha", "beta", "gamma", "delta", "tokens", "cache", "layer", "block", "report", "src"]


def sentence(rng: random.Random) -> str:
    s = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)}."
    return s[0].upper() + s[1:]


def tool_call(rng: random.Random) -> str:
    args = {a: (rng.choice(WORDS) if a != "limit" else rng.randint(1, 99))
            for a in rng.sample(ARGS, rng.randint(1, 3))}
    return json.dumps({"tool": rng.choice(TOOLS), "arguments": args})


def generate(n_paragraphs: int = 400, seed: int = 0) -> str:
    """Paragraphs of prose, each often followed by a tool call line."""
    rng = random.Random(seed)
    out = []
    for _ in range(n_paragraphs):
        para = " ".join(sentence(rng) for _ in range(rng.randint(2, 4)))
        out.append(para)
        if rng.random() < 0.6:
            out.append(tool_call(rng))
    return "\n".join(out) + "\n"


def eval_text() -> str:
    """Held-out evaluation text (another seed than the training text)."""
    return generate(n_paragraphs=60, seed=12345)
