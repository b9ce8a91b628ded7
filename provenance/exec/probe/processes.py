"""The per-process probe files of one run, read and validated (they come from the user's
process: untrusted JSON, checked at the edge), and each process's role.

Roles are a heuristic from what the process itself reported, stated as such:
- `fork-child`: a process the probe saw being forked (multiprocessing's fork workers);
- `mp-spawn-child`: argv is multiprocessing's spawn/forkserver entry point;
- `vllm-engine-core` / `vllm-worker`: vLLM's process titles (`VLLM::EngineCore`, `...Worker`);
- `main`: a process whose parent no probe saw (the command, or a Python started by a
  non-Python parent); `child`: any other Python started by a probed process.

What each process read (`files_read`, `files_written`, `env_read`) and its environment at
start (`environ`) are kept only as UTF-8 text; see inputs.py and envread.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "prov-probe/1"


@dataclass
class Process:
    pid: int
    ppid: int
    state: str  # "on" or "off"
    stage: str
    exit_via: str | None
    argv: list[str]
    orig_argv: list[str]
    prefix: str = ""
    base_prefix: str = ""
    forked_from: int | None = None
    title: str = ""
    torch: dict[str, dict[str, Any]] = field(default_factory=dict)
    sdpa_kernels: list[dict[str, Any]] = field(default_factory=list)
    modules: dict[str, str] = field(default_factory=dict)
    maps: list[str] | None = None
    mapped_weights: list[str] = field(default_factory=list)
    script: dict[str, Any] | None = None
    engines: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    cwd: str = ""
    files_read: list[str] = field(default_factory=list)
    files_written: list[str] = field(default_factory=list)
    env_read: list[str] = field(default_factory=list)
    environ: dict[str, str] | None = None  # at start; None: the probe did not record it
    role: str = "main"
    file: str = ""


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _scalars(value: Any) -> dict[str, Any]:
    return {str(k): v for k, v in _table(value).items() if isinstance(v, (str, int, float, bool))}


def _utf8(value: Any) -> bool:
    """A string that encodes (a lone surrogate from undecodable bytes would not reach the
    store's canonical JSON)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _names(value: Any) -> list[str]:
    return [v for v in _list(value) if _utf8(v)]


def _texts(value: Any) -> dict[str, str]:
    return {k: v for k, v in _table(value).items() if _utf8(k) and _utf8(v)}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse(doc: Any, file: str = "") -> Process | None:
    """One probe file's document as a Process; None when it is not a probe file."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or _int(doc.get("pid")) is None:
        return None
    torch = _table(doc.get("torch"))
    exit_ = _table(doc.get("exit"))
    maps = doc.get("maps")
    files, environ = _table(doc.get("files")), doc.get("environ")
    return Process(
        pid=doc["pid"], ppid=_int(doc.get("ppid")) or 0,
        state=str(doc.get("state", "on")), stage=str(doc.get("stage", "")),
        exit_via=str(exit_["via"]) if "via" in exit_ else None,
        argv=_strings(doc.get("argv")), orig_argv=_strings(doc.get("orig_argv")),
        prefix=str(doc.get("prefix", "")), base_prefix=str(doc.get("base_prefix", "")),
        forked_from=_int(doc.get("forked_from")), title=str(doc.get("title", "")),
        torch={k: _scalars(torch.get(k)) for k in ("at_import", "at_exit") if k in torch},
        sdpa_kernels=[_scalars(e) for e in _list(torch.get("sdpa_kernels")) if isinstance(e, dict)],
        modules={str(k): v for k, v in _table(doc.get("modules")).items() if isinstance(v, str)},
        maps=_strings(maps) if isinstance(maps, list) else None,
        mapped_weights=_strings(doc.get("mapped_weights")),
        script=_table(doc.get("script")) or None,
        engines={k: _table(doc.get(k)) for k in ("transformers", "vllm", "upstream")
                 if k in doc},
        errors=_strings(doc.get("errors")), file=file, cwd=str(doc.get("cwd", "")),
        files_read=_names(files.get("read")), files_written=_names(files.get("written")),
        env_read=_names(_table(doc.get("env")).get("read")),
        environ=_texts(environ) if isinstance(environ, dict) else None,
    )


def read_processes(run_dir: str | Path) -> list[Process]:
    """Every process that wrote a probe file, oldest first, each with its role."""
    out = []
    directory = Path(run_dir) / "probe"
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            proc = parse(json.loads(path.read_text(encoding="utf-8")), path.name)
        except (OSError, ValueError):
            proc = None
        if proc is not None:
            out.append(proc)
    _assign_roles(out)
    return out


def exit_maps(run_dir: str | Path) -> dict[int, list[str]]:
    """pid -> the files each probed process had mapped when it last wrote its facts."""
    return {p.pid: p.maps for p in read_processes(run_dir) if p.maps}


def _assign_roles(processes: list[Process]) -> None:
    pids = {p.pid for p in processes}
    for p in processes:
        text = " ".join([p.title, *p.argv, *p.orig_argv])
        if "EngineCore" in text:
            p.role = "vllm-engine-core"
        elif "VllmWorker" in text or "VLLM::Worker" in text:
            p.role = "vllm-worker"
        elif p.forked_from is not None:
            p.role = "fork-child"
        elif "multiprocessing.spawn" in text or "multiprocessing.forkserver" in text:
            p.role = "mp-spawn-child"
        elif p.ppid in pids:
            p.role = "child"
        else:
            p.role = "main"
