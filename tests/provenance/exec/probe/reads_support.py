"""Helpers for the tests of what a run read: a user's script under real `prov exec`, two
runs compared with real `prov compare`, and weights rewritten in place (same names, same
shapes, same sizes, other values)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.exec_support import last_run, prov


def exec_run(penv: dict[str, str], cwd: Path, *argv: str, timeout: float = 300,
             **env: str) -> dict:
    p = prov("exec", "-q", "--", *argv, env=dict(penv, **env), cwd=cwd, timeout=timeout)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    return last_run(penv)


def compare(penv: dict[str, str], a: dict, b: dict, *vary: str) -> tuple[int, dict]:
    """(exit status, the refused keys) of `prov compare A B --vary ...`."""
    flags = [x for v in vary for x in ("--vary", v)]
    p = prov("compare", a["run_id"], b["run_id"], *flags, "--json", env=penv)
    return p.returncode, json.loads(p.stdout)["refused"]


def swap_safetensors(path: Path, scale: float = -1.0) -> None:
    """Other weights under the same file name: every tensor scaled, shapes, dtypes and
    metadata kept, so the file keeps its size (and directory and name)."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) * scale + 0.01 for k in f.keys()}  # noqa: SIM118
    size = path.stat().st_size
    save_file(tensors, str(path), metadata=meta)
    assert path.stat().st_size == size


def cold_caches(tmp_path: Path) -> dict[str, str]:
    """vLLM's and torch inductor's compile caches for one test alone: its first run
    compiles (with helper processes that exist on a cold cache only), the next find the
    cache warm; whatever the machine's shared caches hold."""
    return {"VLLM_CACHE_ROOT": str(tmp_path / "vllm-cache"),
            "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-cache")}


def keys_under(refused: dict, *prefixes: str) -> list[str]:
    return [k for k in refused if k.startswith(prefixes)]
