"""A tiny Qwen3-shaped model trained to memorise one workstream (the replay demo and tests).

Extends runners/demo: the same model shape (head size 32 for vLLM's CPU attention) and a
real byte-level BPE tokenizer, here with <|im_start|>/<|im_end|> special tokens and the prov
chat template in tokenizer_config.json. Trained on the rendered workstream until greedy
prediction of every assistant completion token is right with a logit margin, on one thread
(the same weights whatever the core count). Built atomically; cached by recipe and the
workstream's digest.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from runners.demo import corpus
from runners.demo.build import CONFIG as DEMO_CONFIG
from runners.workstream.reader import load_workstream
from runners.workstream.template import IM_END, IM_START, PROV_TEMPLATE, render
from runners.workstream.types import Workstream

RECIPE = "replay-v1"
VOCAB_SIZE = 1024
EOS = "<|endoftext|>"
SPECIAL = [EOS, IM_START, IM_END]
CONFIG = {**DEMO_CONFIG, "vocab_size": VOCAB_SIZE, "max_position_embeddings": 4096}
MARGIN = 4.0  # logits: top-1 minus runner-up on every completion token before stopping


def _train_tokenizer(text: str, out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(text.splitlines(keepends=True), trainer=trainer)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": IM_END, "pad_token": EOS,
        "bos_token": None, "model_max_length": CONFIG["max_position_embeddings"],
        "add_bos_token": False, "clean_up_tokenization_spaces": False,
        "chat_template": PROV_TEMPLATE,
    }, indent=1))


def _train(out: Path, ws: Workstream, max_steps: int, seed: int = 0) -> dict:
    import torch
    from tokenizers import Tokenizer
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from runners.workstream.render import render_workstream

    rendered = render_workstream(ws, PROV_TEMPLATE, out / "tokenizer.json")
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    end, pad = tok.token_to_id(IM_END), tok.token_to_id(EOS)
    cfg = Qwen3Config(**CONFIG, bos_token_id=pad, eos_token_id=end, pad_token_id=pad)
    cfg._attn_implementation = "sdpa"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(cfg).float()
    ids = torch.tensor(rendered.ids, dtype=torch.long)[None]
    # the targets greedy replay must reproduce: every token of every assistant completion
    target = torch.zeros(ids.shape[1], dtype=torch.bool)
    for t in rendered.turns:
        s = rendered.piece_start(t.completion_piece)
        target[s : s + len(rendered.pieces[t.completion_piece].ids)] = True
    rows = target[1:]
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
    torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(str(out), safe_serialization=True)
    return {"steps": step, "loss_last": loss, "min_margin": margin,
            "tokens": int(ids.shape[1]), "completion_tokens": int(target.sum())}


def build(out_dir: Path, workstream: Path, max_steps: int = 1500) -> Path:
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    ws = load_workstream(workstream)
    tmp = Path(tempfile.mkdtemp(prefix=".replay-build-", dir=out_dir.parent))
    try:
        msgs = [m.to_template() for m in ws.messages]
        text = render(PROV_TEMPLATE, msgs, [t.to_template() for t in ws.tools])
        _train_tokenizer(text * 4 + corpus.generate(n_paragraphs=100), tmp)
        info = _train(tmp, ws, max_steps)
        info.update(recipe=RECIPE, workstream_digest=ws.digest)
        (tmp / "prov-replay-demo.json").write_text(json.dumps(info, indent=1))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def ensure(out_dir: Path, workstream: Path, max_steps: int = 1500) -> Path:
    """The trained model at out_dir, training it if missing, stale, or for another file."""
    marker = Path(out_dir) / "prov-replay-demo.json"
    try:
        info = json.loads(marker.read_text())
        if info.get("recipe") == RECIPE and \
                info.get("workstream_digest") == load_workstream(workstream).digest:
            return Path(out_dir)
    except (OSError, ValueError):
        pass
    return build(out_dir, workstream, max_steps)
