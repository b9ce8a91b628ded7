"""The models a run read, as its record says: one `ModelRead` per model directory.

Read from the run's facts, never from its command line:
- `model.files.<path>` (identity): every file the run's processes read from a model directory
  (and the weights, tokenizer and config files beside them), each with its sha256 and size
  (provenance/exec/probe/model_files.py). A run that read one directory keys its files by
  their path in it; a run that read several keys them `<directory name>/<path>`, so each
  directory is one model here.
- the engines' loads: `runtime.transformers.models.<i>` and `.tokenizers.<i>` (class, dtype,
  `name_or_path` written `local:<directory name>` for a local directory, or the hub id, and
  `commit`), `runtime.vllm.model` and `.tokenizer`. A load names its directory's model and
  says whether it was loaded as a model or only as a tokenizer.

`models_read` is used by the SBOM (the model components), the statement (the model files
among the resolved dependencies) and `prov verify` (both checked against the record).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from provenance.model import join_key
from provenance.model.errors import ProvError

ROLE_MODEL, ROLE_TOKENIZER, ROLE_FILES = "model", "tokenizer", "files"
_SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")


@dataclass(frozen=True)
class ModelFile:
    path: str  # POSIX, relative to the model directory
    sha256: str  # 64 hex digits
    size: int | None
    key: str  # its key under `model.files`


@dataclass(frozen=True)
class Load:
    """One engine load as recorded: its manifest key, role, name and facts."""

    key: str  # e.g. runtime.transformers.models.0
    role: str
    name_or_path: str
    facts: dict[str, str] = field(default_factory=dict)

    @property
    def directory(self) -> str | None:
        """The model directory's name the load names (`local:NAME`), else None."""
        return self.name_or_path[6:] if self.name_or_path.startswith("local:") else None


@dataclass(frozen=True)
class ModelRead:
    key: str  # unique within the run: the directory name as recorded, or the model's name
    name: str
    group: str | None  # a hub id's owner
    version: str | None  # a hub commit, where a load recorded one
    name_from: str  # the fact the name was read from
    role: str  # model | tokenizer | files (read, but no engine load names it)
    files: tuple[ModelFile, ...]
    loads: tuple[Load, ...] = ()

    @property
    def ref(self) -> str:
        return f"model:{self.key}"

    def file_ref(self, f: ModelFile) -> str:
        return f"{self.ref}/{f.path}"


def models_read(facts: dict[str, Any]) -> list[ModelRead]:
    """The models of a run's (or manifest's) facts, sorted by key; [] when none was read."""
    model = facts.get("model") if isinstance(facts.get("model"), dict) else {}
    raw = model.get("files") if isinstance(model.get("files"), dict) else {}
    files = [_file(key, entry) for key, entry in sorted(raw.items())]
    if not files:
        return []
    loads = _loads(facts)
    heads = {f.path.split("/", 1)[0] for f in files}
    several = len(heads) > 1 and all("/" in f.path for f in files)
    if not several:
        return [_one(files, loads)]
    out = []
    for head in sorted(heads):
        mine = tuple(ModelFile(f.path.split("/", 1)[1], f.sha256, f.size, f.key)
                     for f in files if f.path.split("/", 1)[0] == head)
        out.append(_directory(head, mine, [ld for ld in loads if _names(ld, head)]))
    return out


def _file(key: Any, entry: Any) -> ModelFile:
    where = join_key(["model", "files", str(key)])
    if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str) \
            or not _SHA256.match(entry["sha256"]):
        raise ProvError(f"{where}: not a recorded file ({{sha256: 'sha256:<hex>', size}})")
    key = str(key)
    if key.startswith("/") or any(p in ("", ".", "..") for p in key.split("/")) or "\0" in key:
        raise ProvError(f"{where}: not a relative path inside a model directory")
    size = entry.get("size")
    size = size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None
    return ModelFile(key, entry["sha256"][7:], size, key)


def _loads(facts: dict[str, Any]) -> list[Load]:
    """Every engine load the run recorded, models first, in load order."""
    runtime = facts.get("runtime") if isinstance(facts.get("runtime"), dict) else {}
    tf = runtime.get("transformers") if isinstance(runtime.get("transformers"), dict) else {}
    vllm = runtime.get("vllm") if isinstance(runtime.get("vllm"), dict) else {}
    out: list[Load] = []
    for section, role in (("models", ROLE_MODEL), ("tokenizers", ROLE_TOKENIZER)):
        entries = tf.get(section) if isinstance(tf.get(section), dict) else {}
        for i in sorted(entries, key=lambda s: (len(s), s)):
            entry = entries[i]
            if isinstance(entry, dict) and isinstance(entry.get("name_or_path"), str):
                kept = {k: str(v) for k, v in sorted(entry.items())
                        if k != "name_or_path" and not isinstance(v, dict | list)}
                out.append(Load(f"runtime.transformers.{section}.{i}", role,
                                entry["name_or_path"], kept))
    for section, role in (("model", ROLE_MODEL), ("tokenizer", ROLE_TOKENIZER)):
        if isinstance(vllm.get(section), str):
            kept = {k: str(vllm[k]) for k in ("dtype", "quantization") if k in vllm}
            out.append(Load(f"runtime.vllm.{section}", role, vllm[section],
                            kept if role == ROLE_MODEL else {}))
    return sorted(out, key=lambda ld: ld.role != ROLE_MODEL)


def _names(load: Load, directory: str) -> bool:
    """Does `load` name the model directory called `directory` (a hub load: its snapshot,
    a directory named by the commit)?"""
    return load.directory == directory or load.facts.get("commit") == directory


def _split(name_or_path: str) -> tuple[str | None, str]:
    """(group, name): a hub id `owner/name` is both; `local:NAME` and a bare name are a name;
    a path (a directory gone since) its last part."""
    if name_or_path.startswith("local:"):
        return None, name_or_path[6:]
    if _HUB_ID.match(name_or_path):
        owner, name = name_or_path.split("/")
        return owner, name
    return None, name_or_path.rstrip("/").rsplit("/", 1)[-1] or name_or_path


def _named(key: str, files: tuple[ModelFile, ...], loads: list[Load],
           fallback: tuple[str, str]) -> ModelRead:
    if loads:
        first = loads[0]
        group, name = _split(first.name_or_path)
        commit = next((ld.facts["commit"] for ld in loads
                       if _COMMIT.match(ld.facts.get("commit", ""))), None)
        return ModelRead(key or name, name, group, commit, f"{first.key}.name_or_path",
                         first.role, files, tuple(loads))
    name, why = fallback
    return ModelRead(key or name, name, None, None, why, ROLE_FILES, files)


def _one(files: list[ModelFile], loads: list[Load]) -> ModelRead:
    """A run that read one model directory: every load names it (its files' keys do not)."""
    weights = [f for f in files if "/" not in f.path and _is_weights(f.path)]
    fallback = ((weights[0].path, "model.files (its one weights file)") if len(weights) == 1
                else ("model", "none: no engine load names the directory"))
    return _named("", tuple(files), loads, fallback)


def _directory(head: str, files: tuple[ModelFile, ...], loads: list[Load]) -> ModelRead:
    return _named(head, files, loads, (head, "model.files (the directory's name)"))


def _is_weights(path: str) -> bool:
    return path.endswith((".safetensors", ".gguf", ".bin", ".pt", ".pth"))
