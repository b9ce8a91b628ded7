"""The probe seen from prov: what the command's environment gets, and the run facts.

`environment(run_dir, env)` is merged into the command's environment by the supervisor;
`collect(run_dir)` reads `$PROV_RUN_DIR/probe/*.json` when the command has ended and
returns facts sections to merge into the run's manifest:

- `probe.*` (context): on/off, how many processes, how each ended, errors, roles;
- `runtime.torch.flags.*`: torch's numerics state at exit (identity), and
  `runtime.torch.changed.*` (context) with both values of a flag the run changed;
  `runtime.torch.sdpa_kernels.<signature>` the kernel torch's sdpa chose (identity);
- `code.command`, `code.script.sha256`, `code.modules.<dist>.*`, `code.unrecorded.*`;
- `runtime.libs.<soname>.*` and `probe.libraries.*` (see `libs`);
- `runtime.transformers.*` (see `engines`) and `model.files.<relpath>.*` (`model_files`);
- `inputs.files.<name>.*`: the other files the run read, by content (`inputs`);
- `upstream.*`: what a server behind `prov serve`'s front said of itself (`engines`);
- `env.<NAME>` (variables the processes read), `runtime.process_env.<NAME>` (a
  process's environment at start differing from the command's) and `probe.child_env`
  (the same for the processes the run started), see `envread`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provenance.collectors import standalone
from provenance.exec.probe.argv import places_for
from provenance.exec.probe.inproc._prov_probe import READERS_VAR
from provenance.exec.probe.processes import Process, read_processes
from provenance.model.run_sections import (
    CodeSection,
    ProbedFacts,
    ProbeSection,
    RuntimeSection,
    TorchChange,
    TorchFacts,
)

if TYPE_CHECKING:
    from provenance.exec.libraries import FileDigestCache
    from provenance.exec.probe.installed import Installed

INPROC_DIR = Path(__file__).resolve().with_name("inproc")
# the stdlib-only readers the probe shares with the snapshot (torch_state.py): named to the
# probe in READERS_VAR, it adds their directory to its package path
READERS_DIR = Path(standalone.__file__).resolve().parent
OFF_MARKER = "OFF"


def environment(run_dir: str | Path, env: Mapping[str, str]) -> dict[str, str]:
    """What the command's environment gets: our directory first on PYTHONPATH and the
    readers' directory for the probe (or nothing, with PROV_INPROCESS=0, which `collect`
    then records as off)."""
    from provenance.exec.probe.envread import write_command_env

    probe_dir = Path(run_dir) / "probe"
    probe_dir.mkdir(parents=True, exist_ok=True)
    if env.get("PROV_INPROCESS", "1") == "0":
        (probe_dir / OFF_MARKER).write_text("PROV_INPROCESS=0\n")
        return {}
    current = env.get("PYTHONPATH", "")
    extra = {"PYTHONPATH": str(INPROC_DIR) + (os.pathsep + current if current else ""),
             READERS_VAR: str(READERS_DIR)}
    write_command_env(probe_dir, {**env, **extra})
    return extra


def _one(values: list[Any]) -> Any:
    distinct = sorted({str(v) for v in values})
    return values[0] if len(distinct) == 1 else distinct


def _ran_a_model(p: Process) -> bool:
    return bool(p.engines.get("transformers", {}).get("models")
                or p.engines.get("vllm", {}).get("runners"))


def numerics_processes(processes: list[Process]) -> list[Process]:
    """The processes whose torch flags decide the run's numerics: those that built a model
    (transformers or a vLLM model runner) when any did, else all. A helper that exists only
    on a cold cache (a compile worker) holds torch's defaults: it must not change the flags
    of a run whose model ran elsewhere (the H200 grid's false refusal)."""
    models = [p for p in processes if _ran_a_model(p)]
    return models or processes


def torch_facts(processes: list[Process]) -> TorchFacts:
    """Exit values where the process got to exit, else what it held at import; flags and
    their changes from the processes that ran the model (numerics_processes)."""
    kernels = sdpa_kernel_facts(processes)
    processes = numerics_processes(processes)
    states = [s for p in processes if (s := p.torch.get("at_exit") or p.torch.get("at_import"))]
    if not states:
        return {"sdpa_kernels": kernels} if kernels else {}
    keys = sorted({k for s in states for k in s})
    flags = {k: _one([s[k] for s in states if k in s]) for k in keys}
    changed: dict[str, TorchChange] = {}
    for p in processes:
        before, after = p.torch.get("at_import", {}), p.torch.get("at_exit", {})
        for k in sorted(before.keys() & after.keys()):
            if before[k] != after[k] and k not in changed:
                changed[k] = {"at_import": before[k], "at_exit": after[k], "pid": p.pid}
    out: TorchFacts = {"flags": flags}
    if changed:
        out["changed"] = changed
    if kernels:
        out["sdpa_kernels"] = kernels
    return out


def _yes(value: Any) -> str:
    return "yes" if value is True else "no" if value is False else str(value)


def sdpa_signature(e: dict[str, Any]) -> str:
    return (f"{e.get('device')}/{e.get('dtype')}/head_dim:{e.get('head_dim')}/"
            f"mask:{_yes(e.get('has_mask'))}/causal:{_yes(e.get('is_causal'))}/"
            f"dropout:{_yes(e.get('dropout'))}/gqa:{_yes(e.get('enable_gqa'))}/"
            f"allowed:{e.get('allowed')}")


def sdpa_kernel_facts(processes: list[Process]) -> dict[str, Any]:
    """`runtime.torch.sdpa_kernels.<signature>`: the kernel torch chose for each call
    signature a process saw (the probe's `torch_sdpa`). One leaf per signature, the
    signature its key: two runs' kernels line up whatever order the calls came in, and a
    refusal names the signature and both kernels."""
    seen: dict[str, list[Any]] = {}
    for p in processes:
        for e in p.sdpa_kernels:
            seen.setdefault(sdpa_signature(e), []).append(e.get("kernel"))
    return {key: _one(kernels) for key, kernels in sorted(seen.items())}


def _probe_section(run_dir: Path, processes: list[Process]) -> ProbeSection:
    if (run_dir / "probe" / OFF_MARKER).exists():
        return {"state": "off"}
    on = [p for p in processes if p.state == "on"]
    out: ProbeSection = {
        "state": "on" if on else ("off" if processes else "no python process"),
        "processes": len(processes),
        "ended": {p.role + ":" + str(p.pid): p.exit_via or f"no exit seen (last: {p.stage})"
                  for p in processes},
        "complete": bool(on) and all(p.exit_via for p in on),
    }
    errors = [f"{p.pid}: {e}" for p in processes for e in p.errors]
    if errors:
        out["errors"] = errors
    return out


def merge_into(facts: dict[str, Any], seen: dict[str, Any], warnings: list[str],
               at: str = "") -> None:
    """Put what the probe saw into `facts` (facts.json, the workload's own word): where
    both hold a value, what was seen wins, and a claim that differs is named in `warnings`
    (a script cannot report another attention backend than the one that ran)."""
    for key, value in seen.items():
        have = facts.get(key)
        if isinstance(value, dict) and isinstance(have, dict):
            merge_into(have, value, warnings, f"{at}{key}.")
            continue
        if key in facts and have != value:
            warnings.append(f"facts.json: {at}{key} differs from what the probe saw; "
                            "the probe's value is kept")
        facts[key] = value


def read_facts(run_dir: Path, processes: list[Process], main: Process | None,
               outputs: Sequence[str | Path], hasher) -> tuple[ProbedFacts, list[str]]:
    """`model.files`, `inputs.files` and `env`: what the processes read, by content; and
    the paths read (files and the model directories), which a command line names as
    `<input>`."""
    from provenance.exec.probe.envread import env_read_facts, read_command_env
    from provenance.exec.probe.inputs import files_read, input_file_facts, rule_for
    from provenance.exec.probe.model_files import directories, model_file_facts, split_model_files

    read = files_read(processes, rule_for(processes, run_dir, outputs))
    model, other = split_model_files(read, directories(processes))
    out: ProbedFacts = {}
    files = model_file_facts(processes, hasher, model)
    if files:
        out["model"] = {"files": files}
    cwd = (main or processes[0]).cwd
    inputs = input_file_facts(other, cwd, hasher)
    if inputs:
        out["inputs"] = {"files": inputs}
    env = env_read_facts(processes, read_command_env(run_dir / "probe"))
    if env:
        out["env"] = env
    return out, [*read, *directories(processes)]


def runtime_facts(on: list[Process], run_dir: Path, installed: Installed,
                  probe: ProbeSection) -> RuntimeSection:
    """`runtime.*` of the probed processes: torch, the engines, the environments the
    processes started with and the libraries they mapped; the environments of the processes
    the run started and the library notes go to `probe`."""
    from provenance.exec.probe.engines import transformers_facts, vllm_facts
    from provenance.exec.probe.envread import (
        child_env_facts,
        process_env_facts,
        read_command_env,
    )
    from provenance.exec.probe.libs import library_facts

    runtime: RuntimeSection = {}
    if torch := torch_facts(on):
        runtime["torch"] = torch
    if transformers := transformers_facts(on):
        runtime["transformers"] = transformers
    if vllm := vllm_facts(on):
        runtime["vllm"] = vllm
    command_env = read_command_env(run_dir / "probe")
    if process_env := process_env_facts(on, command_env):
        runtime["process_env"] = process_env
    if child_env := child_env_facts(on, command_env):
        probe["child_env"] = child_env
    libs, notes = library_facts(on, installed)
    if libs:
        runtime["libs"] = libs
        probe["libraries"] = notes
    return runtime


def collect(run_dir: str | Path, command: Sequence[str] | None = None,
            outputs: Sequence[str | Path] = (), cwd: str | Path | None = None,
            consume: bool = True, key: bytes | None = None,
            hasher: FileDigestCache | None = None) -> ProbedFacts:
    """Facts sections (nested; dotted keys once flattened) from the run's probe files.

    The files are consumed (unless `consume=False`: the live facts of a running command,
    exec/live.py, and a recovery that removes them once its record is written): their facts
    are in the result, and their raw argv may hold a secret that must not reach the store
    (`command` is redacted here, keyed by the store's `key`). In the command line
    the declared `outputs` (relative to `cwd`), the run directory and the script are written
    by what they are (`probe/argv.py`). Files are digested through `hasher`, the caller's
    to save (a run's one digest cache, read once for all its updates), else prov's own."""
    from provenance.exec.probe.code import command_facts, module_facts, script_facts
    from provenance.exec.probe.engines import upstream_facts
    from provenance.exec.probe.hashing import file_hasher
    from provenance.exec.probe.installed import Installed

    run_dir = Path(run_dir)
    processes = read_processes(run_dir)
    probe = _probe_section(run_dir, processes)
    main = next((p for p in processes if p.role == "main"), None)
    facts: ProbedFacts = {"probe": probe}
    on = [p for p in processes if p.state == "on"]
    own = hasher is None
    installed, hasher = Installed(), hasher or file_hasher()
    what_read, read_paths = read_facts(run_dir, on, main, outputs, hasher) if on else ({}, [])
    script_path = main.script.get("path") if main is not None and main.script else None
    places = places_for(str(cwd or Path.cwd()), [str(o) for o in outputs],
                        str(run_dir.absolute()),
                        script_path if isinstance(script_path, str) else None, read_paths)
    code: CodeSection = command_facts(command, places, key)
    if on:
        script = script_facts(main, hasher)
        if script:
            code["script"] = script
        code.update(module_facts(on, installed, hasher))
        facts.update(what_read)
        if upstream := upstream_facts(on):
            facts["upstream"] = upstream
        if runtime := runtime_facts(on, run_dir, installed, probe):
            facts["runtime"] = runtime
        if own:
            hasher.save()
        installed.save()
    if code:
        facts["code"] = code
    if consume:
        shutil.rmtree(run_dir / "probe", ignore_errors=True)
    return facts
