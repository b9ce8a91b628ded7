"""The run's own manifest sections as `prov exec` builds them from its probe, typed.

Like `sections.py` for the snapshot: TypedDicts, so at run time each is the plain dict the
record always held (same JSON, same digests); for a reader and a type checker they say which
keys a section has. Keys written only sometimes are `NotRequired` (or the whole TypedDict is
`total=False` where every key is optional). The key docs are docs/guides/exec.md's table;
`facts.json` (the workload's own word) may add sections of its own beside these.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

# a value every process agreed on, or the sorted distinct values when they did not
Agreed = str | list[str]


class ProbeSection(TypedDict, total=False):
    """`probe.*` (context): whether the in-process probe ran and how each process ended."""

    state: str  # "on", "off" (PROV_INPROCESS=0) or "no python process"
    processes: int
    ended: dict[str, str]  # "<role>:<pid>" -> how it ended, or "no exit seen (last: ...)"
    complete: bool  # every probed process got to its exit
    errors: list[str]
    libraries: dict[str, Any]  # the library sampler's notes (probe/libs.py)
    child_env: dict[str, Agreed]  # the environment the run gave the processes it started
    command_env: dict[str, str]  # keyed digests of the command's environment


class ScriptFact(TypedDict):
    """`code.script`: the main script by content."""

    path: str
    sha256: str
    changed_during_run: NotRequired[bool]


class ModuleFact(TypedDict):
    """`code.modules.<dist>`: a distribution the processes imported from, its files checked
    against its RECORD."""

    version: str
    files_checked: int
    edited: NotRequired[dict[str, str]]  # relpath -> the digest that differs from RECORD


class CodeSection(TypedDict, total=False):
    """`code.*`: the command line and what it ran."""

    command: list[str]  # as typed, redacted, places named (context)
    program: list[str]  # the identity of the program (probe/argv.py)
    args: dict[str, Any]  # its arguments, by name
    script: ScriptFact
    modules: dict[str, ModuleFact]
    unrecorded: dict[str, str]  # site-packages files no RECORD lists -> digest


class TorchChange(TypedDict):
    """`runtime.torch.changed.<flag>` (context): a flag the run changed after import."""

    at_import: Any
    at_exit: Any
    pid: int


class TorchFacts(TypedDict, total=False):
    """`runtime.torch.*`: the numerics flags of the processes that ran the model."""

    flags: dict[str, Any]
    changed: dict[str, TorchChange]
    sdpa_kernels: dict[str, Any]  # call signature -> the kernel torch chose


class RuntimeSection(TypedDict, total=False):
    """`runtime.*`: what the engines and libraries resolved, read in the processes."""

    torch: TorchFacts
    transformers: dict[str, Any]
    vllm: dict[str, Any]
    libs: dict[str, Any]  # soname -> build id, owner, path (probe/libs.py)
    process_env: dict[str, Agreed]


class ModelFile(TypedDict):
    """`model.files.<relpath>`: a weight, tokenizer or config file by content."""

    sha256: str
    size: int
    source: str  # how the digest was had (context)


class InputFile(TypedDict, total=False):
    """`inputs.files.<name>`: a file by content, or a small JSON/TOML config by its values."""

    sha256: str
    size: int
    values: dict[str, Any]
    text_sha256: str  # context, beside `values`


class ModelSection(TypedDict):
    files: dict[str, ModelFile]


class InputsSection(TypedDict):
    files: dict[str, InputFile]


class ProbedFacts(TypedDict, total=False):
    """What `provenance.exec.probe.host.collect` returns: the sections the probe saw."""

    probe: ProbeSection
    code: CodeSection
    runtime: RuntimeSection
    model: ModelSection
    inputs: InputsSection
    env: dict[str, Agreed]  # the variables the processes read, with their values
    upstream: dict[str, Any]  # what a server behind `prov serve`'s front said of itself
