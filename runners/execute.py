"""Run one engine configuration on prepared ids in a worker process and load what it wrote."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.atomic import write_atomic
from provenance.store import RunRecord
from runners.arrays import npy_bytes
from runners.engines import EngineConfig
from runners.launch import (
    Launcher,
    LaunchError,
    check_launched,
    runtime_of,
    standalone,
    worker_argv,
    worker_env,
)
from runners.prepare import Prepared


@dataclass
class WorkerRun:
    config: EngineConfig
    meta: dict[str, Any]
    scores: np.ndarray
    final_hidden: np.ndarray | None
    run_id: str | None
    record: RunRecord | None


def check_resolved(config: EngineConfig, runtime: dict[str, Any], name: str) -> None:
    """A vLLM run is refused, not mislabelled, when the backend the probe saw the engine
    resolve is not the one asked for (or several ran)."""
    asked = config.get("attention_backend")
    resolved = ((runtime.get("vllm") or {}).get("attention_backend") or {}).get("resolved")
    if config.engine != "vllm" or not isinstance(resolved, str):
        return
    if "," in resolved:
        raise LaunchError(f"{name}: the engine mixes attention backends {resolved}")
    if asked and asked.upper() != resolved:
        raise LaunchError(f"{name}: asked for attention backend {asked} but the engine ran "
                          f"{resolved}")


def execute(config: EngineConfig, prep: Prepared, workdir: Path, name: str, block: int,
            launcher: Launcher = standalone) -> WorkerRun:
    workdir = Path(workdir).resolve()  # the worker runs in another cwd
    workdir.mkdir(parents=True, exist_ok=True)
    tokens = workdir / "ids.npy"
    # always rewritten: a reused workdir must not hand a worker another text's ids
    write_atomic(tokens, npy_bytes(prep.ids))
    out = workdir / name
    argv = worker_argv(config, Path(prep.model).resolve(), tokens, out, block)
    params = config.params()
    done = launcher(argv, name=name, env=worker_env(config),
                    outputs=(out / "scores.npz", out / "run.json"), params=params)
    check_launched(done, f"{name} ({config.spec})")
    meta = json.loads((out / "run.json").read_text())
    meta["runtime"] = runtime_of(done)
    check_resolved(config, meta["runtime"], name)
    with np.load(out / "scores.npz") as npz:
        if not np.array_equal(npz["ids"], prep.ids):
            raise LaunchError(f"{name}: worker scored other token ids than prepared")
        hidden = npz["final_hidden"] if "final_hidden" in npz.files else None
        return WorkerRun(config, meta, npz["scores"], hidden, done.run_id, done.record)
