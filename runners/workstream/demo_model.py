"""A tiny Qwen3-shaped model trained to memorise one workstream (the replay demo and tests).

Built by the one builder (runners/demo/builder.py): the demo model's shape and a real
byte-level BPE tokenizer, here with <|im_start|>/<|im_end|> special tokens and the prov chat
template in tokenizer_config.json. Trained on the rendered workstream until greedy
prediction of every assistant completion token is right with a logit margin, on one thread
(the same weights whatever the core count). Built atomically; cached by recipe and the
workstream's digest.
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
from runners.workstream.reader import load_workstream
from runners.workstream.template import IM_END, IM_START, PROV_TEMPLATE, render
from runners.workstream.types import Workstream

RECIPE = "replay-v1"
MARKER = "prov-replay-demo.json"
VOCAB_SIZE = 1024
EOS = "<|endoftext|>"
SPECIAL = [EOS, IM_START, IM_END]
CONFIG = {**BASE_CONFIG, "vocab_size": VOCAB_SIZE, "max_position_embeddings": 4096}
MARGIN = 4.0  # logits: top-1 minus runner-up on every completion token before stopping


def _train_tokenizer(text: str, out: Path) -> None:
    _train_bpe(text, out, vocab_size=VOCAB_SIZE, special=SPECIAL, tokenizer_config={
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": IM_END, "pad_token": EOS,
        "bos_token": None, "model_max_length": CONFIG["max_position_embeddings"],
        "add_bos_token": False, "clean_up_tokenization_spaces": False,
        "chat_template": PROV_TEMPLATE,
    })


def _train(out: Path, ws: Workstream, max_steps: int, seed: int = 0) -> dict:
    import torch
    from tokenizers import Tokenizer

    from runners.workstream.render import render_workstream

    rendered = render_workstream(ws, PROV_TEMPLATE, out / "tokenizer.json")
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    end, pad = tok.token_to_id(IM_END), tok.token_to_id(EOS)
    ids = torch.tensor(rendered.ids, dtype=torch.long)[None]
    # the targets greedy replay must reproduce: every token of every assistant completion
    target = torch.zeros(ids.shape[1], dtype=torch.bool)
    for t in rendered.turns:
        s = rendered.piece_start(t.completion_piece)
        target[s : s + len(rendered.pieces[t.completion_piece].ids)] = True
    with one_thread():
        model = fresh_model(CONFIG, bos=pad, eos=end, pad=pad, seed=seed)
        step, loss, margin = _memorise(model, ids, target[1:], max_steps)
    model.eval()
    model.save_pretrained(str(out), safe_serialization=True)
    return {"steps": step, "loss_last": loss, "min_margin": margin,
            "tokens": int(ids.shape[1]), "completion_tokens": int(target.sum())}


def _memorise(model, ids, rows, max_steps: int) -> tuple[int, float, float]:
    """Full-sequence AdamW steps until greedy prediction of every `rows` token is right with
    a logit margin of MARGIN (checked every 20 steps); (steps, last loss, min margin)."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    step, margin, loss = 0, float("-inf"), float("nan")
    for step in range(1, max_steps + 1):
        model.train()
        out_ = model(input_ids=ids, labels=ids)
        opt.zero_grad()
        out_.loss.backward()
        opt.step()
        loss = float(out_.loss.detach())
        if step % 20 == 0:
            model.eval()
            with torch.no_grad():
                logits = model(input_ids=ids).logits[0, :-1][rows]
            want = ids[0, 1:][rows]
            top2 = logits.topk(2, dim=-1)
            right = bool((top2.indices[:, 0] == want).all())
            margin = float((top2.values[:, 0] - top2.values[:, 1]).min())
            if right and margin >= MARGIN:
                break
    return step, loss, margin


def build(out_dir: Path, workstream: Path, max_steps: int = 1500) -> Path:
    ws = load_workstream(workstream)

    def make(tmp: Path) -> dict:
        msgs = [m.to_template() for m in ws.messages]
        text = render(PROV_TEMPLATE, msgs, [t.to_template() for t in ws.tools])
        _train_tokenizer(text * 4 + corpus.generate(n_paragraphs=100), tmp)
        info = _train(tmp, ws, max_steps)
        info.update(recipe=RECIPE, workstream_digest=ws.digest)
        return info

    return build_atomically(out_dir, MARKER, make)


def ensure(out_dir: Path, workstream: Path, max_steps: int = 1500) -> Path:
    """The trained model at out_dir, training it if missing, stale, or for another file."""
    digest = load_workstream(workstream).digest
    return ensure_built(out_dir, MARKER, lambda i: i.get("recipe") == RECIPE
                        and i.get("workstream_digest") == digest,
                        lambda: build(out_dir, workstream, max_steps))
