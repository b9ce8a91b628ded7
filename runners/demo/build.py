"""The demo model (`prov demo`, the runner tests): tokenizer.json, config.json,
model.safetensors, train.txt and eval.txt, built by the one builder (runners/demo/builder.py).

Trained for a few hundred steps on a generated corpus so its distributions are peaked rather
than flat.
"""

from __future__ import annotations

from pathlib import Path

from runners.demo import corpus
from runners.demo.builder import (
    BASE_CONFIG,
    build_atomically,
    ensure_built,
    fresh_model,
    one_thread,
)
from runners.demo.builder import train_bpe as _train_bpe

# Bump when anything below changes: the cache key of a built model.
RECIPE = "demo-v2"
MARKER = "prov-demo.json"
VOCAB_SIZE = 512
EOS = "<|endoftext|>"
CONFIG = {**BASE_CONFIG, "vocab_size": VOCAB_SIZE}


def train_tokenizer(text: str, out_dir: Path) -> None:
    _train_bpe(text, out_dir, vocab_size=VOCAB_SIZE, special=[EOS], tokenizer_config={
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": EOS, "pad_token": EOS, "model_max_length": CONFIG["max_position_embeddings"],
        "add_bos_token": False, "clean_up_tokenization_spaces": False,
    })


def build_model(out_dir: Path, text: str, steps: int, seed: int = 0) -> dict:
    import torch
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(out_dir / "tokenizer.json"))
    eos_id = tok.token_to_id(EOS)
    with one_thread():
        model = fresh_model(CONFIG, bos=eos_id, eos=eos_id, pad=eos_id, seed=seed)
        ids = torch.tensor(tok.encode(text).ids, dtype=torch.long)
        losses = _train_on_windows(model, ids, steps, seed)
    model.eval()
    model.save_pretrained(str(out_dir), safe_serialization=True)
    return {"train_tokens": int(len(ids)), "steps": steps, "loss_first": losses[0] if losses
            else None, "loss_last": losses[-1] if losses else None}


def _train_on_windows(model, ids, steps: int, seed: int) -> list[float]:
    """AdamW on random 8 x 128-token windows of the corpus."""
    import torch

    seq, batch = 128, 8
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    model.train()
    losses = []
    for _ in range(steps):
        starts = torch.randint(0, len(ids) - seq - 1, (batch,), generator=gen)
        x = torch.stack([ids[s : s + seq] for s in starts])
        out = model(input_ids=x, labels=x)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        losses.append(float(out.loss.detach()))
    return losses


def build(out_dir: Path, steps: int = 120) -> Path:
    """Build into out_dir atomically (temp dir + rename); return out_dir."""

    def make(tmp: Path) -> dict:
        text = corpus.generate()
        (tmp / "train.txt").write_text(text)
        (tmp / "eval.txt").write_text(corpus.eval_text())
        train_tokenizer(text, tmp)
        return {**build_model(tmp, text, steps), "recipe": RECIPE}

    return build_atomically(out_dir, MARKER, make)


def ensure(out_dir: Path, steps: int = 120) -> Path:
    """The built model at out_dir, building it if missing or from another recipe."""
    return ensure_built(out_dir, MARKER,
                        lambda i: i.get("recipe") == RECIPE and i.get("steps") == steps,
                        lambda: build(out_dir, steps))
