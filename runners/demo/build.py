"""Build the demo model directory: tokenizer.json, config.json, model.safetensors.

The tokenizer is a real byte-level BPE trained with `tokenizers` (a WordLevel one encodes to
nothing under transformers 5 and vLLM needs a real one). The model is Qwen3-shaped with head
size 32 (vLLM's CPU attention refuses 16) and is trained for a few hundred steps so its
distributions are peaked rather than flat. torch/transformers are imported lazily.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from runners.demo import corpus

# Bump when anything below changes: the cache key of a built model.
RECIPE = "demo-v2"
VOCAB_SIZE = 512
EOS = "<|endoftext|>"
CONFIG = dict(
    vocab_size=VOCAB_SIZE,
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    max_position_embeddings=1024,
    rope_theta=10000.0,
    rms_norm_eps=1e-6,
    tie_word_embeddings=False,
    use_sliding_window=False,
)


def train_tokenizer(text: str, out_dir: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(text.splitlines(keepends=True), trainer=trainer)
    tok.save(str(out_dir / "tokenizer.json"))
    (out_dir / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": EOS, "pad_token": EOS, "model_max_length": CONFIG["max_position_embeddings"],
        "add_bos_token": False, "clean_up_tokenization_spaces": False,
    }, indent=1))


def build_model(out_dir: Path, text: str, steps: int, seed: int = 0) -> dict:
    import torch
    from tokenizers import Tokenizer
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tok = Tokenizer.from_file(str(out_dir / "tokenizer.json"))
    eos_id = tok.token_to_id(EOS)
    cfg = Qwen3Config(**CONFIG, bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id)
    cfg._attn_implementation = "sdpa"
    # One thread: the same weights whatever the core count (reduction order), and no OpenMP
    # barrier spinning on a shared machine (2 threads took 10x longer under load).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(cfg).float()
    ids = torch.tensor(tok.encode(text).ids, dtype=torch.long)
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
    torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(str(out_dir), safe_serialization=True)
    return {"train_tokens": int(len(ids)), "steps": steps, "loss_first": losses[0] if losses
            else None, "loss_last": losses[-1] if losses else None}


def build(out_dir: Path, steps: int = 120) -> Path:
    """Build into out_dir atomically (temp dir + rename); return out_dir."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".demo-build-", dir=out_dir.parent))
    try:
        text = corpus.generate()
        (tmp / "train.txt").write_text(text)
        (tmp / "eval.txt").write_text(corpus.eval_text())
        train_tokenizer(text, tmp)
        info = build_model(tmp, text, steps)
        info["recipe"] = RECIPE
        (tmp / "prov-demo.json").write_text(json.dumps(info, indent=1))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def ensure(out_dir: Path, steps: int = 120) -> Path:
    """The built model at out_dir, building it if missing or from another recipe."""
    marker = Path(out_dir) / "prov-demo.json"
    if marker.exists():
        try:
            info = json.loads(marker.read_text())
            if info.get("recipe") == RECIPE and info.get("steps") == steps:
                return Path(out_dir)
        except ValueError:
            pass
    return build(out_dir, steps)
