"""Finish an abandoned run: a started run whose supervising prov is gone (SIGKILL, OOM).

What such a prov leaves: the started record (with its live facts, live.py), the probe's
files under `$PROV_RUN_DIR/probe/`, and the stdout/stderr it had streamed so far, in the
store's temp files named `log-<run id>-<label>-*` (the log writers' prefix, below; written
unbuffered, so a SIGKILL loses nothing that prov had read). The first prov command that
finds the run abandoned (Store.get_run / list_runs call `recover` through the hook the CLI
registers) builds the run's facts by the rule the supervisor uses (facts.run_facts), stores
the logs and writes a final record in state `abandoned`, pointing at the last started one.

Never racing a live supervisor: the run is abandoned only when its supervisor's pid (with
its start time and boot id) is gone. Two prov commands recovering at once: an exclusive
lock per run; the other waits for it, then reads the record the first wrote. The probe's
files and the temp logs are removed only once the final record is written: a recovery
killed half-way is simply done again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError
from provenance.model.redact import store_key
from provenance.store import RunRecord, Store
from provenance.store.records import now_iso
from provenance.store.states import FINAL_STATES, RunState

LABELS = ("stdout", "stderr")
LOCK_WAIT_S = 120.0  # another prov finishing the same run: wait for its record


def partial_log_prefix(run_id: str, label: str) -> str:
    """The temp-file prefix of a run's log writer (found again by `partial_logs`)."""
    return f"log-{run_id}-{label}-"


def partial_logs(store: Store, run_id: str) -> dict[str, Path]:
    """label -> the temp file a killed prov was writing that log to."""
    out: dict[str, Path] = {}
    for label in LABELS:
        found = sorted(store.objects.tmp.glob(partial_log_prefix(run_id, label) + "*"),
                       key=lambda p: p.stat().st_size)
        if found:
            out[label] = found[-1]
    return out


@contextlib.contextmanager
def _locked(store: Store, run_id: str, wait_s: float = LOCK_WAIT_S) -> Iterator[bool]:
    """An exclusive lock on recovering `run_id`, waited for up to `wait_s` (another prov
    finishing it): True when we hold it."""
    store.objects.tmp.mkdir(parents=True, exist_ok=True)
    path = store.objects.tmp / f"recover-{run_id}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    yield False
                    return
                time.sleep(0.05)
        yield True
    finally:
        os.close(fd)


def _last_seen(paths: list[Path], fallback: str) -> str:
    """When the run was last heard of: the newest of its logs and probe files."""
    import datetime as dt

    times = []
    for p in paths:
        with contextlib.suppress(OSError):
            times.append(p.stat().st_mtime)
    if not times:
        return fallback
    return dt.datetime.fromtimestamp(max(times), dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds(start: str, end: str) -> float | None:
    import datetime as dt

    try:
        a = dt.datetime.fromisoformat(start.replace("Z", "+00:00"))
        b = dt.datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return None
    return round(max(0.0, (b - a).total_seconds()), 6)


def _facts(store: Store, record: RunRecord, run_dir: Path, snap_text: str,
           warnings: list[str]) -> dict[str, Any]:
    """The run's facts from what it left (the probe's files), else its live facts."""
    from provenance.exec.facts import run_facts
    from provenance.exec.record import run_section

    if not (run_dir / "probe").is_dir():
        return dict(record.facts or {})
    return run_facts(run_dir, snap_text, list(record.command), Path(record.cwd or "."), [],
                     run_section(record), store_key(store.root), warnings, consume=False)


def _logs(store: Store, run_id: str) -> tuple[dict[str, Any], list, list[Path]]:
    logs: dict[str, Any] = {}
    extra: list = []
    files = partial_logs(store, run_id)
    for label, path in files.items():
        digest, size = store.put_file(path)
        logs[label] = {"digest": digest, "size": size}
        extra.append((digest, f"log.{label}", size))
    return logs, extra, list(files.values())


def finish_abandoned(store: Store, record: RunRecord, previous: str) -> str:
    """Write the `abandoned` final record of `record`'s run; returns its digest."""
    from provenance.exec.live import store_run_manifest
    from provenance.exec.outputs import ingest_run_dir

    run_dir = store.run_dir(record.run_id)
    snap_text = store.get_bytes(record.manifest).decode("utf-8")
    snap_digest = store.manifest_digest_of(record.manifest) or record.manifest_digest
    sup = record.supervisor or {}
    warnings = [*(record.warnings or []),
                "prov was killed before the run ended: its exit status, loaded libraries, "
                "drift check, declared outputs and resources are not recorded"]
    facts = _facts(store, record, run_dir, snap_text, warnings)
    logs, extra, log_files = _logs(store, record.run_id)
    probe_files = sorted((run_dir / "probe").glob("*.json")) if run_dir.is_dir() else []
    run_files = ingest_run_dir(run_dir, store, skip=("probe",))  # raw argv may hold secrets
    base = record.replace(live=None, facts=None, run_manifest=None)
    obj, digest = store_run_manifest(store, base, snap_text, snap_digest, facts)
    ended = _last_seen([*log_files, *probe_files], (record.live or {}).get("updated_at")
                       or record.started_at)
    final = base.replace(
        state=RunState.ABANDONED, ended_at=ended, duration_s=_seconds(record.started_at, ended),
        error=(f"abandoned: prov (pid {sup.get('pid')}) ended before it finished the record; "
               f"finished by prov pid {os.getpid()} at {now_iso()} from what the run left"),
        logs=logs or None, facts=facts or None, run_manifest=obj if facts else None,
        manifest_digest=digest, run_dir=run_files or None, warnings=warnings)
    out = store.finalize_run(final, previous, extra)
    for f in log_files:
        f.unlink(missing_ok=True)
    shutil.rmtree(run_dir, ignore_errors=True)
    return out


def recover(store: Store, info):
    """`info` (a RunInfo found abandoned), finished as `abandoned` unless another prov is at
    it or did it; the RunInfo as the index now has it."""
    with _locked(store, info.run_id) as mine:
        row = store.db.execute("SELECT * FROM runs WHERE run_id = ?", (info.run_id,)).fetchone()
        if mine and row is not None and row["state"] not in FINAL_STATES:
            try:
                finish_abandoned(store, store.get_record(row["record"]), row["record"])
            except (OSError, sqlite3.Error, ProvError) as exc:  # shown abandoned, unfinished
                sys.stderr.write(f"prov: warning: abandoned run {info.run_id[:12]} not "
                                 f"finished: {exc}\n")
                return info
            row = store.db.execute("SELECT * FROM runs WHERE run_id = ?",
                                   (info.run_id,)).fetchone()
    return store._info(row) if row is not None else info
