"""Start engine workers as separate processes, standalone or under the `prov exec` supervisor.

The interpreter for a vLLM worker may differ from ours (vLLM lives in its own venv): it comes
from the spec's `python=` option, else PROV_VLLM_PYTHON, else this interpreter.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from provenance.model.errors import ProvError
from provenance.store import RunRecord
from runners import interrupts
from runners.engines import EngineConfig

VLLM_ENV = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_NO_USAGE_STATS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}


class LaunchError(ProvError, RuntimeError):
    """A worker process failed."""


@dataclass
class Launched:
    returncode: int
    run_id: str | None = None
    record: RunRecord | None = None  # the final run record (supervised launches)
    stderr_tail: str = ""
    interrupted: bool = False  # the user's ^C (or SIGTERM/SIGHUP) reached the worker
    # what the engine resolved, as the run's record holds it (`runtime.*`, read by the
    # in-process probe); a worker started without prov has none
    runtime: dict[str, Any] | None = None
    # the server run(s) a client worker talked to (`server.*` of its record, exec/serving)
    server: dict[str, Any] | None = None


def runtime_of(done: Launched) -> dict[str, Any]:
    """The `runtime` section a result carries: the run record's, never the worker's word."""
    if done.runtime is None:
        return {"unavailable": "the worker ran without prov exec: nothing was probed"}
    return done.runtime


def check_launched(done: Launched, what: str) -> None:
    """A worker the user interrupted interrupts the caller too (whatever status it died
    with: Python can exit 1 on a ^C at start-up), as does a ^C this process deferred while
    prov recorded the run (interrupts.py); any other non-zero exit is a LaunchError."""
    if done.interrupted:
        raise KeyboardInterrupt(f"{what} interrupted")
    interrupts.check(what)
    if done.returncode != 0:
        tail = done.stderr_tail.strip().splitlines()[-1:] or ["(no output)"]
        raise LaunchError(f"{what} exited {done.returncode}: {tail[0]}")


class Launcher(Protocol):
    def __call__(self, argv: list[str], *, name: str, env: dict[str, str],
                 outputs: tuple[Path, ...], params: dict[str, Any]) -> Launched: ...


def worker_python(config: EngineConfig) -> str:
    if config.get("python"):
        return str(config.get("python"))
    if config.engine == "vllm" and os.environ.get("PROV_VLLM_PYTHON"):
        return os.environ["PROV_VLLM_PYTHON"]
    return sys.executable


def worker_env(config: EngineConfig) -> dict[str, str]:
    """Extra environment for a worker. An interpreter other than ours (a vLLM venv) does not
    have prov installed: it gets a path entry holding only the `runners` package, never our
    site-packages (whose torch/transformers would shadow the venv's own)."""
    env: dict[str, str] = {}
    # abspath, not realpath: two venvs share one base interpreter behind their symlinks
    if os.path.abspath(worker_python(config)) != os.path.abspath(sys.executable):
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(_runners_only_path()), os.environ.get("PYTHONPATH")]))
    if config.engine == "vllm":
        env.update({k: os.environ.get(k, v) for k, v in VLLM_ENV.items()})
        if config.get("batch_invariant") is not None:
            # read by vLLM at import; the probe records what vLLM's envs resolved
            env["VLLM_BATCH_INVARIANT"] = str(config.get("batch_invariant"))
    return env


def _runners_only_path() -> Path:
    """A directory holding only this `runners` package and the stdlib-only manifest model
    (`provenance.model`: the one atomic writer, the error base), as symlinks."""
    import hashlib

    pkg = Path(__file__).resolve().parent
    model = pkg.parent / "provenance" / "model"
    key = hashlib.sha256(str(pkg).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    base = cache / "prov" / "runners-path" / key
    _symlink(base / "runners", pkg)
    _symlink(base / "provenance" / "__init__.py", model.parent / "__init__.py")
    _symlink(base / "provenance" / "model", model)
    return base


def _symlink(link: Path, target: Path) -> None:
    if link.is_symlink() and link.resolve() == target:
        return
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp = link.with_name(f".{link.name}-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target, target_is_directory=target.is_dir())
    os.replace(tmp, link)  # atomic: concurrent workers never see a half-made link


def worker_argv(config: EngineConfig, model: Path, tokens: Path, out: Path,
                block: int) -> list[str]:
    return [worker_python(config), "-m", "runners.worker", *config.worker_args(),
            "--model", str(model), "--tokens", str(tokens), "--out", str(out),
            "--block", str(block)]


# The gate between two runs of a runner: the comparison's record, or ProvError (refused).
Check = Callable[[Any, Any], dict]
UNGATED = "not run (standalone)"


def ungated(first: Any, second: Any) -> dict[str, Any]:
    """The check of `--standalone` runs, which have no run records for a gate to read: the
    result says so. Every runner takes its check by name, so a comparison without the
    gate is always asked for, never a default."""
    return {"gate": UNGATED}


def standalone(argv: list[str], *, name: str, env: dict[str, str],
               outputs: tuple[Path, ...] = (), params: dict[str, Any] | None = None) -> Launched:
    """Run the worker as a plain child process: no run record, no gate possible, but what
    the engine resolved is read by the same in-process probe as under `prov exec` (a
    worker's own word is never its runtime)."""
    from provenance.exec import run_probed

    interrupts.check(name)  # a deferred ^C: the next program is never started
    done = run_probed(argv, env)
    return Launched(done.returncode, stderr_tail=done.stderr[-2000:], runtime=done.runtime)


def supervised(store: Any = None, stream: bool = False) -> Launcher:
    """A launcher that runs each worker through the `prov exec` supervisor, so every engine
    run has its manifest, record, logs, hashed outputs and the runtime facts it resolved."""

    def launch(argv: list[str], *, name: str, env: dict[str, str],
               outputs: tuple[Path, ...] = (), params: dict[str, Any] | None = None) -> Launched:
        from provenance.exec import run_supervised

        interrupts.check(name)  # a deferred ^C: the next program is never started
        res = run_supervised(argv, name=name, outputs=tuple(str(o) for o in outputs),
                             env_extra=env, stream=stream, store=store,
                             params=dict(params or {}))
        tail = ""
        if res.exit_status != 0:
            tail = _stored_log(store, res.record, "stderr")
        facts = res.record.facts or {}
        runtime = facts.get("runtime") or {}
        server = facts.get("server")
        return Launched(res.exit_status, res.run_id, res.record, tail, res.interrupted,
                        runtime if isinstance(runtime, dict) else {},
                        server if isinstance(server, dict) else None)

    return launch


def _stored_log(store: Any, record: RunRecord, label: str) -> str:
    try:
        from provenance.store import open_store

        digest = record.logs[label]["digest"]
        return (store or open_store()).get_bytes(digest).decode("utf-8", "replace")[-2000:]
    except Exception as exc:  # the log is a courtesy for the error message
        return f"(no {label}: {exc})"
