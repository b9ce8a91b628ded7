"""The files a run read, by content: which count (one rule), and `inputs.files.<name>`.

The probe notes every file a process opened (an audit hook on `open`, plus safetensors'
`safe_open`), for reading and for writing apart. A file read counts when it is a regular
file and none of these holds:
1. it is imported code (`.py`, `.pyc`, `.so`...): `code.*` covers code;
2. it lies under a system directory (`SYSTEM_DIRS`; `/var/tmp` excepted), an interpreter's
   prefix or base prefix, or any `site-packages`/`dist-packages` (installed packages:
   `python.packages.*` and `code.modules.*` cover them);
3. it lies in a compile or JIT cache (`~/.triton`, `~/.nv`, `~/.cache/vllm`,
   `~/.cache/torch/kernels`, `~/.cache/flashinfer`, `torchinductor_*`,
   `torch_compile_cache`, `__pycache__`, and the directories `TRITON_CACHE_DIR`,
   `TORCHINDUCTOR_CACHE_DIR`, `VLLM_CACHE_ROOT` name): what was compiled follows from the
   code and settings, and whether a cache was warm is not an input;
4. it lies in the run directory or the store (prov's own), or is (under) a declared output;
5. a process of the run opened it for writing (what the run wrote, it did not read in).
`/opt`, `/tmp`, `/home`, `/mnt`, `/data` and the Hugging Face cache count.

Model files (model_files.py) are the counted files whose names match its globs or that lie
in a directory a transformers or vLLM load named; every other counted file is
`inputs.files.<name>` = {sha256, size}, or for a small JSON/TOML table {values,
text_sha256}: its settings leaf by leaf, so a preset can declare one; the digest of its
text is then context (config_values.py). `<name>` is the path relative to the run's working
directory when it lies below it, else its base name, lengthened by its parent directories
where two would collide: the same script called by another path, or repeated in another
working directory, compares clean. Digests are cached (hashing.py).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provenance.exec.probe.processes import Process
from provenance.model.run_sections import InputFile

SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc",
               "/boot", "/proc", "/sys", "/dev", "/run", "/var", "/snap")
SYSTEM_EXCEPT = ("/var/tmp",)
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyd", ".so", ".pth")
PACKAGE_PARTS = ("site-packages", "dist-packages")
CACHE_PARTS = ("__pycache__", "torch_compile_cache")
CACHE_PART_PREFIXES = ("torchinductor_",)
HOME_CACHES = (".triton", ".nv", ".cache/vllm", ".cache/torch/kernels", ".cache/flashinfer",
               ".cache/triton")
CACHE_VARS = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "VLLM_CACHE_ROOT")


@dataclass(frozen=True)
class ReadRule:
    """What does not count, besides the fixed parts of the rule: directories and files."""
    skip_dirs: tuple[str, ...] = ()
    written: frozenset[str] = frozenset()


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots if r)


def counts(path: str, rule: ReadRule) -> bool:
    """Whether a file read at `path` (absolute, normalised) is an input of the run, by the
    rule above; a pure function over the path (the host checks it is a regular file)."""
    name = path.rsplit("/", 1)[-1]
    if name.endswith(CODE_SUFFIXES) or ".so." in name:
        return False
    if _under(path, SYSTEM_DIRS) and not _under(path, SYSTEM_EXCEPT):
        return False
    parts = path.split("/")
    if any(p in PACKAGE_PARTS or p in CACHE_PARTS or p.startswith(CACHE_PART_PREFIXES)
           or p.endswith((".dist-info", ".egg-info")) for p in parts[:-1]):
        return False
    return path not in rule.written and not _under(path, rule.skip_dirs)


def rule_for(processes: list[Process], run_dir: Path, outputs: Sequence[str | Path]) -> ReadRule:
    """The run's own exclusions: prefixes, caches, run directory, store, outputs, writes."""
    skip: set[str] = {os.path.normpath(str(Path(run_dir).absolute()))}
    skip.update(os.path.normpath(str(Path(o).absolute())) for o in outputs)
    for p in processes:
        skip.update(d for d in (p.prefix, p.base_prefix) if d)
        env = p.environ or {}
        home = env.get("HOME") or os.path.expanduser("~")
        skip.update(os.path.join(home, c) for c in HOME_CACHES)
        skip.update(env[v] for v in (*CACHE_VARS, "PROV_STORE") if env.get(v))
    skip |= {os.path.realpath(d) for d in skip}
    written = frozenset(os.path.normpath(f) for p in processes for f in p.files_written)
    return ReadRule(tuple(sorted(d for d in skip if d)), written)


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def files_read(processes: list[Process], rule: ReadRule) -> list[str]:
    """The files the run's processes read that count (by the rule), sorted."""
    out = set()
    for path in {os.path.normpath(f) for p in processes for f in p.files_read}:
        if counts(path, rule) and _regular(path):
            real = os.path.realpath(path)  # a link into a system or package directory
            if real == path or counts(real, ReadRule(rule.skip_dirs)):
                out.add(path)
    return sorted(out)


def input_names(paths: Sequence[str], cwd: str) -> dict[str, str]:
    """path -> its key: relative to `cwd` below it, else the base name; a base name that
    collides gets its parent directories in front until it differs (then the whole path)."""
    root = cwd.rstrip("/") + "/" if cwd else None
    names = {p: os.path.relpath(p, cwd) for p in paths if root and p.startswith(root)}
    outside = [p for p in paths if p not in names]
    depth = dict.fromkeys(outside, 1)
    while True:
        for p in outside:
            parts = p.strip("/").split("/")
            names[p] = "/".join(parts[-depth[p]:]) if depth[p] <= len(parts) else p
        taken: dict[str, int] = {}
        for n in names.values():
            taken[n] = taken.get(n, 0) + 1
        clashes = [p for p in outside if taken[names[p]] > 1 and names[p] != p]
        if not clashes:
            return names
        for p in clashes:
            depth[p] += 1


def input_file_facts(paths: Sequence[str], cwd: str, hasher) -> dict[str, InputFile]:
    """`inputs.files.<name>`: {sha256, size} of every counted file that is not a model
    file; a small JSON/TOML config is {values, text_sha256 (context)} instead
    (config_values)."""
    from provenance.exec.probe.model_files import digest

    out: dict[str, InputFile] = {}
    for path, key in sorted(input_names(paths, cwd).items(), key=lambda kv: kv[1]):
        sha, _source = digest(path, hasher)
        values = _config(path)
        out[key] = ({"values": values, "text_sha256": sha} if values is not None
                    else {"sha256": sha, "size": os.path.getsize(path)})
    return out


def _config(path: str) -> dict[str, Any] | None:
    from provenance.exec.probe.config_values import MAX_BYTES, config_values

    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError:
        return None
    return config_values(os.path.basename(path), data)
