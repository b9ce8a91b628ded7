"""Helpers for the tests of what a run read: a user's script under real `prov exec`, two
runs compared with real `prov compare`, and weights rewritten in place (same names, same
shapes, same sizes, other values)."""

from __future__ import annotations

import json
from pathlib import Path

from provenance.selftest.fixtures import swap_safetensors
from tests.exec_support import last_run, prov

__all__ = ["cold_caches", "compare", "exec_run", "keys_under", "swap_safetensors"]


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


def cold_caches(tmp_path: Path) -> dict[str, str]:
    """vLLM's and torch inductor's compile caches for one test alone: its first run
    compiles (with helper processes that exist on a cold cache only), the next find the
    cache warm; whatever the machine's shared caches hold."""
    return {"VLLM_CACHE_ROOT": str(tmp_path / "vllm-cache"),
            "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-cache")}


def keys_under(refused: dict, *prefixes: str) -> list[str]:
    return [k for k in refused if k.startswith(prefixes)]
