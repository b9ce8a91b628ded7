"""The run record, as `prov exec` writes it: started before the command, final after it.

A killed prov leaves the *started* record (shown as abandoned), never a corrupt one; prov
failing itself (a bug, ^C before the command started) writes a *failed* record saying so.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provenance.model.redact import KnownSecrets, redact_argv, redact_value, secrets_of_run
from provenance.snapshot import CachedSnapshot
from provenance.store import RunRecord, RunState, Store
from provenance.store.records import new_run_id, now_iso, supervisor_identity

if TYPE_CHECKING:  # annotations only (this module uses postponed annotations)
    from provenance.store.record_types import GitFacts, Resources


def _params(params: Mapping[str, Any] | None, known: KnownSecrets | None) -> dict[str, Any]:
    return {str(k): redact_value(str(k), v, known=known) if isinstance(v, str) else v
            for k, v in (params or {}).items()}


def run_secrets(argv: Sequence[str], env_extra: Mapping[str, str] | None, name: str | None,
                tags: Mapping[str, str] | None,
                params: Mapping[str, Any] | None) -> KnownSecrets:
    """What the run's redaction hides in the environment the command gets (all of it, not
    only what the snapshot records), its argv, name, tags and params: every writer of the
    run removes these values wherever they appear again (model.redact.KnownSecrets)."""
    env = {**os.environ, **(env_extra or {})}
    labels = {**(tags or {}), **{k: v for k, v in (params or {}).items() if isinstance(v, str)}}
    if name:
        labels["name"] = name
    return secrets_of_run(env, argv, labels)


def started_record(argv: Sequence[str], *, name: str | None, workdir: Path,
                   tags: Mapping[str, str] | None, params: Mapping[str, Any] | None,
                   env_extra: Mapping[str, str] | None, snap: CachedSnapshot,
                   manifest_obj: str, git_facts: GitFacts,
                   python: str | None, known: KnownSecrets | None = None) -> RunRecord:
    """The fields every record of the run carries (secrets redacted)."""
    from provenance import __version__

    return RunRecord(
        run_id=new_run_id(),
        state=RunState.STARTED,
        command=tuple(redact_argv(list(argv), known=known)),
        cwd=str(workdir),
        name=name,
        tags={str(k): redact_value(str(k), str(v), known=known) for k, v in (tags or {}).items()},
        params=_params(params, known),
        started_at=now_iso(),
        manifest=manifest_obj,
        manifest_digest=snap.manifest_digest,
        snapshot={"cache": "hit" if snap.hit else "miss", "warnings": snap.warnings},
        git=git_facts,
        supervisor={**supervisor_identity(), "prov_version": __version__},
        env_extra={k: redact_value(k, v, known=known) for k, v in (env_extra or {}).items()},
        interpreter=python or None,
    )


def start_run(store: Store, record: RunRecord, snap: CachedSnapshot,
              git_diff: bytes | None) -> str:
    """Write the started record with the objects it points at; returns its digest."""
    size = len(snap.text.encode("utf-8"))
    extra = [(record.manifest, "manifest", size)]
    if git_diff:
        extra.append((record.git["diff"], "git.diff", len(git_diff)))
    return store.create_run(record, (record.manifest, snap.manifest_digest), extra)


def failed_record(record: RunRecord, error: str, exit_status: int, t0: float) -> RunRecord:
    return record.replace(state=RunState.FAILED, error=error, ended_at=now_iso(),
                          duration_s=round(time.time() - t0, 6), exit_status=exit_status)


def _cpu_s(usage) -> float:
    return round(usage.ru_utime + usage.ru_stime, 6)


def own_peak_rss_kb() -> int:
    """prov's own peak resident memory: VmHWM of this process's address space. Not
    getrusage's ru_maxrss, which Linux carries across exec from whatever started prov (a
    large parent's peak would read as prov's)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def resources(child_usage, usage_at_spawn, usage_at_exit) -> Resources:
    """CPU and memory of the command and of prov (prov's own cost, while it ran, too)."""
    self_usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "child_cpu_s": _cpu_s(child_usage) if child_usage else None,
        "child_max_rss_kb": child_usage.ru_maxrss if child_usage else None,
        "prov_cpu_s": _cpu_s(self_usage),
        "prov_cpu_while_running_s": round(_cpu_s(usage_at_exit) - _cpu_s(usage_at_spawn), 6),
        "prov_max_rss_kb": own_peak_rss_kb(),  # prov alone
        # the max over every descendant prov waited for: the command and the snapshot's own
        # probes (a re-snapshot's `import torch` child is ~230 MiB), not prov's memory
        "descendants_max_rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    }


def run_section(record: RunRecord) -> dict[str, Any]:
    """The manifest's `run` section: name, tags and params (context, where presets look)."""
    return {k: v for k, v in {"name": record.name, "tags": record.tags,
                              "params": record.params}.items() if v}
