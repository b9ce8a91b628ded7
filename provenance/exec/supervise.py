"""The exec supervisor: run a command as a recorded run.

Steps, in order (a killed prov leaves the run `started`, never corrupt: the next prov to find
it abandoned finishes it from what it left, recover.py):
1. snapshot the environment (from the snapshot cache when nothing changed) and read the
   git state, concurrently (environment.py);
2. store the manifest and write the *started* record, before the command starts (record.py);
3. start the command in its own process group with PROV_RUN_ID and PROV_RUN_DIR set;
   forward SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2; pass stdin through (process.py);
   stream stdout and stderr to the terminal and into the store in fixed-size chunks
   (tee.py); sample the loaded libraries of the command and its descendants (watch.py,
   libraries.py); keep the started record up to date with the probe's facts (live.py);
4. after it ends: hash declared outputs, ingest PROV_RUN_DIR (outputs.py), read the run's
   facts (facts.py), build and store the run's manifest once (store.manifests), hash loaded
   libraries, check for environment drift (drift.py), and write the final record.
The exit status is the command's, or 128+N when signal N killed it.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import sqlite3
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provenance.exec import process
from provenance.exec.drift import check_drift
from provenance.exec.environment import (
    snapshot_and_git,
    with_command_env,
    without_known,
    workload_python,
)
from provenance.exec.facts import run_facts
from provenance.exec.jit import package_versions
from provenance.exec.libraries import FileDigestCache, LibrarySampler
from provenance.exec.live import LiveFacts, store_run_manifest
from provenance.exec.logs import LostLog, RedactedLog
from provenance.exec.outputs import hash_outputs, ingest_run_dir
from provenance.exec.probe import host as probe
from provenance.exec.probe.processes import exit_maps
from provenance.exec.record import (
    failed_record,
    resources,
    run_secrets,
    run_section,
    start_run,
    started_record,
)
from provenance.exec.recover import partial_log_prefix
from provenance.exec.serving import bind_client
from provenance.exec.unrecorded import run_unrecorded, why
from provenance.exec.watch import watch
from provenance.model.errors import ProvError
from provenance.model.redact import KnownSecrets, redact_diff, store_key
from provenance.snapshot import CachedSnapshot
from provenance.store import RunRecord, Store, open_store
from provenance.store.objects import StoreFull, space_reason
from provenance.store.records import now_iso
from provenance.store.states import RunState

if TYPE_CHECKING:  # annotations only (this module uses postponed annotations)
    from provenance.store.record_types import LogEntry


def redact_diff_bytes(diff: bytes, key: bytes,
                      known: KnownSecrets | None = None) -> tuple[bytes, int]:
    """The diff with secrets hidden (bytes that are not UTF-8 kept as they are)."""
    text, hidden = redact_diff(diff.decode("utf-8", "surrogateescape"), key, known)
    return text.encode("utf-8", "surrogateescape"), hidden

@dataclass
class RunResult:
    run_id: str  # "" when the run could not be recorded
    exit_status: int
    record_digest: str
    state: RunState  # complete, failed (prov or the exec itself failed), or unrecorded
    record: RunRecord | None  # None when unrecorded
    interrupted: bool = False  # prov forwarded ^C, SIGTERM or SIGHUP to the command
    error: str | None = None  # why an unrecorded run was not recorded


@dataclass
class _Run:
    """What the steps after the start share."""

    store: Store
    record: RunRecord
    started: str
    argv: list[str]
    snap: CachedSnapshot
    python: str | None
    workdir: Path
    run_dir: Path
    env_extra: Mapping[str, str] | None
    t0: float
    known: KnownSecrets  # what the run's redaction hid: removed by value wherever it recurs
    server: str | None = None  # `--server URL`: the server run to bind to (exec/serving)
    # the run's one file-digest cache (read once, while the command starts; saved at the end)
    digests: FileDigestCache | None = None


def run_supervised(
    argv: Sequence[str],
    *,
    name: str | None = None,
    outputs: Sequence[str | Path] = (),
    tags: Mapping[str, str] | None = None,
    store: Store | None = None,
    env_extra: Mapping[str, str] | None = None,
    stream: bool = True,
    params: Mapping[str, Any] | None = None,
    cwd: str | Path | None = None,
    sample_libraries: bool = True,
    server: str | None = None,
    unrecorded_ok: bool = False,
) -> RunResult:
    """Run `argv` as a recorded run; returns its id, exit status and final record digest.

    `tags` are free labels (context); `params` are the run's declared parameters, stored
    under `run.params` of its manifest where the gate presets look for them. With
    `stream=False` the output goes only into the store. `server`: the URL of a server run on
    another machine to bind the run to (one on this machine is found without it).
    `unrecorded_ok` (`prov exec`): when the store cannot take the run (full, damaged,
    read-only, not found) the command runs anyway, unrecorded (exec/unrecorded.py), and the
    result's state is "unrecorded"; callers that read the record back leave it off.
    """
    if not argv:
        raise ProvError("no command given (usage: prov exec [OPTIONS] -- CMD ARGS...)")
    if any(not str(o) for o in outputs):  # Path("") is ".": the whole working directory
        raise ProvError("--output '': an empty path; name a file or directory (. for the "
                        "whole working directory)")
    if server:  # a malformed URL is bad input, refused before the command runs
        from provenance.exec.serving.remote import identity_url

        identity_url(server)
    argv = [str(a) for a in argv]
    t0 = time.time()
    with contextlib.ExitStack() as hiding:
        try:
            run = _begin(argv, name=name, tags=tags, params=params, store=store,
                         env_extra=env_extra, cwd=cwd, server=server, t0=t0, hiding=hiding)
        except Exception as exc:  # the store could not take the run (or prov failed first)
            if not unrecorded_ok:
                raise
            return _without_record(argv, cwd, env_extra, stream, why(exc))
        return _guarded(run, outputs, stream, sample_libraries)


def _guarded(run: _Run, outputs: Sequence[str | Path], stream: bool,
             sample_libraries: bool) -> RunResult:
    try:
        return _execute(run, outputs, stream, sample_libraries)
    except BaseException as exc:
        # prov itself failed (a bug, ^C before the command started): say so in the record
        # rather than leaving the run to be found abandoned.
        status = 130 if isinstance(exc, KeyboardInterrupt) else 70
        final = failed_record(run.record, f"prov: {type(exc).__name__}: {exc}"[:500], status,
                              run.t0)
        with contextlib.suppress(Exception):
            run.store.finalize_run(final, run.started)
        raise


def _begin(argv: list[str], *, name, tags, params, store: Store | None, env_extra, cwd,
           server, t0: float, hiding: contextlib.ExitStack) -> _Run:
    """Steps 1-2: the store opened, the snapshot and git state, the started record; the
    store hides the run's known secrets (`hiding`) from here until the run ends."""
    workdir = working_directory(cwd)
    store = store or open_store()
    store.prepare_for_writes()  # a full, damaged or read-only store: said before the snapshot
    python = workload_python(argv)
    known = run_secrets(argv, env_extra, name, tags, params)
    snap, (git_facts, git_diff) = snapshot_and_git(python, workdir)
    # the command runs with env_extra: its relevant variables are part of the run's identity
    snap = without_known(with_command_env(snap, env_extra), known, store_key(store.root))
    manifest_obj = store.put_object(snap.text.encode("utf-8"))
    if git_diff:  # a secret in the working tree's diff is hidden before it is stored
        git_diff, hidden = redact_diff_bytes(git_diff, store_key(store.root), known)
        git_facts["diff"] = store.put_object(git_diff)
        git_facts["diff_size"] = len(git_diff)
        if hidden:
            git_facts["diff_secrets_redacted"] = hidden
    record = started_record(argv, name=name, workdir=workdir, tags=tags, params=params,
                            env_extra=env_extra, snap=snap, manifest_obj=manifest_obj,
                            git_facts=git_facts, python=python, known=known)
    hiding.enter_context(store.hiding(record.run_id, known))
    run_dir = store.run_dir(record.run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    started = start_run(store, record, snap, git_diff)
    return _Run(store, record, started, argv, snap, python, workdir, run_dir, env_extra, t0,
                known, server)


def working_directory(cwd: str | Path | None) -> Path:
    """The command's working directory, absolute (a deleted one is said in one line)."""
    try:
        return Path(cwd).absolute() if cwd else Path.cwd()
    except FileNotFoundError:
        raise ProvError("the working directory no longer exists (it was deleted)") from None


def _without_record(argv: list[str], cwd, env_extra, stream: bool, reason: str) -> RunResult:
    try:
        workdir = working_directory(cwd)
    except ProvError:
        workdir = None  # deleted: the command runs where prov runs, as a shell would run it
    done = run_unrecorded(argv, workdir, env_extra, stream, reason)
    return RunResult("", done["exit_status"], "", RunState.UNRECORDED, None, done["interrupted"],
                     done["error"])


def _command_env(run: _Run) -> dict[str, str]:
    env = dict(os.environ)
    env.update(run.env_extra or {})
    env.update({"PROV_RUN_ID": run.record.run_id, "PROV_RUN_DIR": str(run.run_dir),
                "PROV_STORE": str(run.store.root)})
    env.update(probe.environment(run.run_dir, env))  # the in-process probe (PROV_INPROCESS=0)
    return env


def _execute(run: _Run, outputs: Sequence[str | Path], stream: bool,
             sample_libraries: bool) -> RunResult:
    # the logs' temp files are named by run: a killed prov's logs are recovered (recover.py)
    out_w, err_w = _log_writer(run, "stdout"), _log_writer(run, "stderr")
    owns_terminal = process.takes_terminal(stream)
    try:
        proc = process.spawn(run.argv, _command_env(run), run.workdir, owns_terminal)
    except OSError as exc:
        out_w.abort()
        err_w.abort()
        return _spawn_failed(run, exc)
    usage_at_spawn = resource.getrusage(resource.RUSAGE_SELF)
    spawned = time.time()
    fg = process.Foreground(owns_terminal)
    fg.give(proc.pid)
    forwarded: list[int] = []
    handlers = process.install_forwarding(proc.pid, forwarded)
    run.digests = FileDigestCache()
    live = LiveFacts(run.store, run.record, run.started, run.snap.text,
                     run.snap.manifest_digest, run.argv, run.workdir,
                     [run.workdir / p for p in outputs], run.known, run.digests).start()
    try:
        returncode, child_usage, sampler = watch(proc, out_w, err_w, stream,
                                                 sample_libraries, fg)
    finally:
        process.restore_handlers(handlers)
        fg.restore()
        run.started = live.stop()  # the final record points at the newest started one
    ended = time.time()
    usages = (child_usage, usage_at_spawn, resource.getrusage(resource.RUSAGE_SELF))
    logs, lost = _close_logs(out_w, err_w)
    status, signame = process.exit_status(returncode)
    # a command that exited non-zero or was killed is a failed run (`failed (exit 7)`)
    state = RunState.COMPLETE if status == 0 else RunState.FAILED
    final = run.record.replace(state=state, ended_at=now_iso(),
                               duration_s=round(ended - spawned, 6), exit_status=status,
                               logs=logs, signal=signame,
                               warnings=[*lost, *([live.error] if live.error else [])] or None)
    try:
        result = _finish(run, final, outputs, sampler, usages)
    except (OSError, sqlite3.Error, StoreFull) as exc:
        result = _final_not_stored(run, final, exc)
    result.interrupted = bool(process.INTERRUPTS.intersection(forwarded))
    return result


def _log_writer(run: _Run, label: str) -> RedactedLog | LostLog:
    """The log's store writer, secrets hidden (logs.py); a store that cannot give one (full
    since the started record) loses that log, said in the record, never the run."""
    try:
        writer = run.store.object_writer(partial_log_prefix(run.record.run_id, label))
    except (OSError, ProvError) as exc:
        return LostLog(why(exc))
    return RedactedLog(writer, store_key(run.store.root), run.known)


def _close_logs(out_w, err_w) -> tuple[dict[str, LogEntry], list[str]]:
    """The log entries, and a warning per log the store could not take in full."""
    logs: dict[str, LogEntry] = {}
    lost: list[str] = []
    for label, w in (("stdout", out_w), ("stderr", err_w)):
        try:
            logs[label] = {"digest": w.close(), "size": w.size}
        except (OSError, ProvError) as exc:  # StoreFull, a LostLog
            w.abort()
            reason = space_reason(exc) if isinstance(exc, OSError) else str(exc)
            lost.append(f"{label} not stored: {reason}")
            continue
        if w.truncated:
            logs[label]["truncated"] = w.truncated
            lost.append(f"{label} log truncated: {w.truncated} (after {w.size} bytes)")
    return logs, lost


def _final_not_stored(run: _Run, final: RunRecord, exc: BaseException) -> RunResult:
    """The command ran and its status stands; the store could not take the final record.

    A minimal final record is tried (logs and status); failing that the run stays
    `started` (shown as abandoned) and prov says so on stderr."""
    reason = space_reason(exc) if isinstance(exc, OSError) else str(exc)
    warning = f"the run's facts could not be stored: {reason}"
    final = final.replace(warnings=[*(final.warnings or []), warning])
    try:
        digest = run.store.finalize_run(final, run.started)
    except (OSError, sqlite3.Error, ProvError):
        digest = run.started
        sys.stderr.write(f"prov: warning: run {run.record.run_id[:12]} not recorded "
                         f"({reason}); it will show as abandoned\n")
    # the command's own outcome stands (a non-zero exit is a failed run) whatever the store did
    return RunResult(run.record.run_id, final.exit_status, digest, final.state, final)


def _spawn_failed(run: _Run, exc: OSError) -> RunResult:
    status = 127 if isinstance(exc, FileNotFoundError) else 126
    final = failed_record(run.record, f"cannot run {run.argv[0]}: {exc.strerror or exc}",
                          status, run.t0)
    shutil.rmtree(run.run_dir, ignore_errors=True)
    digest = run.store.finalize_run(final, run.started)
    return RunResult(run.record.run_id, status, digest, RunState.FAILED, final)


def _finish(run: _Run, final: RunRecord, outputs: Sequence[str | Path],
            sampler: LibrarySampler | None, usages: tuple) -> RunResult:
    """Outputs, run dir, facts, libraries, drift and the run's manifest; then the final
    record (prov's own CPU counted up to here)."""
    warnings: list[str] = list(final.warnings or [])
    outs = hash_outputs(run.workdir, outputs, run.store, warnings)
    if sampler is not None:  # what each Python process had mapped at its exit, which
        sampler.add_paths(exit_maps(run.run_dir))  # periodic sampling can miss
    facts = run_facts(run.run_dir, run.snap.text, run.argv, run.workdir,  # consumes probe/
                      [run.workdir / p for p in outputs], run_section(run.record),
                      store_key(run.store.root), warnings, known=run.known,
                      hasher=run.digests)
    if served := bind_client(run.run_dir, run.store, warnings, run.server):
        facts["server"] = served  # the server runs it talked to (exec/serving)
    run_files = ingest_run_dir(run.run_dir, run.store, known=run.known)
    libs = (sampler.results(run.digests, _command_env(run), package_versions(run.snap.text))
            if sampler else [])
    if run.digests is not None:
        run.digests.save()
    drift = check_drift(run.snap, run.python, run.store, run.env_extra, run.known)
    if drift.get("detected"):
        warnings.append(
            f"environment changed during the run: {drift['changes_total']} identity key(s)"
        )
    manifest_obj, manifest_digest = store_run_manifest(run.store, run.record, run.snap.text,
                                                       run.snap.manifest_digest, facts)
    final = final.replace(outputs=outs, run_dir=run_files, facts=facts,
                          run_manifest=manifest_obj, manifest_digest=manifest_digest,
                          loaded_libraries=libs,
                          library_samples=sampler.samples if sampler else 0, drift=drift,
                          resources=resources(*usages), warnings=warnings or None)
    extra = [(d["digest"], f"log.{k}", d["size"]) for k, d in final.logs.items()]
    digest = run.store.finalize_run(final, run.started, extra)
    shutil.rmtree(run.run_dir, ignore_errors=True)
    return RunResult(run.record.run_id, final.exit_status, digest, final.state, final)
