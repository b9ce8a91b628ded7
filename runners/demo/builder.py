"""The one builder of tiny demo models: a byte-level BPE tokenizer, a Qwen3-shaped model
trained on one thread, built into a temp directory and renamed into place with a recipe
marker that `cached` reads back.

Two recipes use it: runners/demo/build.py (the `prov demo` model, trained on a generated
corpus) and runners/workstream/demo_model.py (the replay model, trained to memorise one
workstream). torch, transformers and tokenizers are imported lazily.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from provenance.model.atomic import replace_dir

# Qwen3-shaped, head size 32 (vLLM's CPU attention refuses 16).
BASE_CONFIG: dict[str, Any] = dict(
    vocab_size=512,
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


def train_bpe(text: str, out: Path, *, vocab_size: int, special: list[str],
              tokenizer_config: dict[str, Any]) -> None:
    """A real byte-level BPE (a WordLevel one encodes to nothing under transformers 5, and
    vLLM needs a real one): out/tokenizer.json and out/tokenizer_config.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(text.splitlines(keepends=True), trainer=trainer)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=1))


@contextmanager
def one_thread() -> Iterator[None]:
    """One torch thread: the same weights whatever the core count (reduction order), and no
    OpenMP barrier spinning on a shared machine (2 threads took 10x longer under load)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def fresh_model(config: dict[str, Any], *, bos: int, eos: int, pad: int, seed: int) -> Any:
    """An untrained float32 Qwen3ForCausalLM (sdpa attention), initialised from `seed`.
    Call inside `one_thread()`."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(**config, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return Qwen3ForCausalLM(cfg).float()


def build_atomically(out_dir: Path, marker: str, make: Callable[[Path], dict]) -> Path:
    """Run `make(tmp)` in a temp directory beside out_dir, write the dict it returns as
    tmp/marker, then rename tmp over out_dir: a killed build leaves no half model."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-build-", dir=out_dir.parent))
    try:
        info = make(tmp)
        (tmp / marker).write_text(json.dumps(info, indent=1))
        replace_dir(tmp, out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def ensure_built(out_dir: Path, marker: str, fresh: Callable[[dict], bool],
                 build: Callable[[], Path]) -> Path:
    """out_dir if it holds a model `fresh` accepts, else `build()`; one process builds at a
    time (a lock file beside out_dir), so two that start together train it once and neither
    reads it while the other renames it into place."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(out_dir.parent / f".{out_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return out_dir if cached(out_dir, marker, fresh) else build()


def cached(out_dir: Path, marker: str, fresh: Callable[[dict], bool]) -> bool:
    """Whether out_dir holds a built model whose marker `fresh` accepts."""
    try:
        info = json.loads((Path(out_dir) / marker).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and fresh(info)
