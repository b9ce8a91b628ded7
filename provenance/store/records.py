"""Run records: JSON documents stored as objects, and who is supervising a run.

A run is a chain of immutable record objects: a `started` record written before the
command starts, then a `complete` (or `failed`) record that points back to it. A run whose
newest record is `started` is *running* while its supervisor lives, else *abandoned*:
the supervisor is identified by host, boot id, pid and the pid's start time, so a reused
pid or a reboot is never mistaken for a live prov.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import socket
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from provenance.model.text import json_text
from provenance.store.states import STATE_RANK, UNFINISHED, RunState

if TYPE_CHECKING:  # annotations only (this module uses postponed annotations)
    from provenance.store.record_types import Supervisor

RUN_KIND = "prov.run"
COMPARISON_KIND = "prov.comparison"
TREE_KIND = "prov.tree"
RECORD_SCHEMA = 1


def new_run_id() -> str:
    """16 random hex digits: unique without coordination, and short prefixes identify a run."""
    return secrets.token_hex(8)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode(doc: dict[str, Any]) -> bytes:
    """Canonical JSON: the same record always has the same bytes, hence the same digest."""
    return json_text(doc, sort_keys=True, separators=(",", ":")).encode()


def decode_json_object(data: bytes) -> dict[str, Any] | None:
    """A JSON object from `data`, or None when it is not one (a log, a diff...)."""
    if data[:1] != b"{":
        return None
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


@lru_cache(maxsize=1)
def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def process_start_ticks(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()
    return int(fields[19])


def supervisor_identity() -> Supervisor:
    pid = os.getpid()
    return {
        "host": socket.gethostname(),
        "pid": pid,
        "boot_id": boot_id(),
        "start_ticks": process_start_ticks(pid) or 0,
    }


def supervisor_alive(
    host: str | None, pid: int | None, boot: str | None, start: int | None
) -> bool:
    """False only when we can tell the supervisor is gone; another host's prov is assumed alive."""
    if host and host != socket.gethostname():
        return True
    if boot and boot_id() and boot != boot_id():
        return False
    if not pid:
        return False
    ticks = process_start_ticks(pid)
    if ticks is None:
        return False
    if start and ticks != start:
        return False
    # A zombie supervisor is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        return stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] != b"Z"
    except OSError:
        return False


def effective_state(stored: str, host, pid, boot, start) -> RunState:
    if stored not in UNFINISHED:
        return RunState(stored)
    if not supervisor_alive(host, pid, boot, start):
        return RunState.ABANDONED
    return RunState.SERVING if stored == RunState.SERVING else RunState.RUNNING


def record_rank(doc: dict[str, Any]) -> tuple[int, int]:
    """Which of a run's records is its newest: a final one, else the started record with the
    most live updates (each live update is a new started record pointing at the last)."""
    live = doc.get("live")
    update = live.get("update", 0) if isinstance(live, dict) else 0
    return STATE_RANK.get(doc.get("state", ""), -1), update if isinstance(update, int) else 0


def index_state(record: dict[str, Any]) -> RunState:
    """The index's state column: a started record whose live facts hold an engine block
    (exec/live.py: the engine is ready) is "serving"."""
    state = RunState(record["state"])
    live = record.get("live")
    return RunState.SERVING if state == RunState.STARTED and isinstance(live, dict) \
        and live.get("engines") else state


def index_row(record: dict[str, Any], record_digest: str) -> dict[str, Any]:
    sup = record.get("supervisor", {})
    return {
        "run_id": record["run_id"],
        "record": record_digest,
        "state": index_state(record),
        "name": record.get("name"),
        "started_at": record.get("started_at", ""),
        "ended_at": record.get("ended_at"),
        "exit_status": record.get("exit_status"),
        "manifest_digest": record.get("manifest_digest"),
        "command": json.dumps(record.get("command", [])),
        "sup_host": sup.get("host"),
        "sup_pid": sup.get("pid"),
        "sup_boot": sup.get("boot_id"),
        "sup_start": sup.get("start_ticks"),
    }


def referenced_objects(record: dict[str, Any]) -> list[tuple[str, str]]:
    """(digest, kind) of every object a run record points to."""
    refs: list[tuple[str, str]] = []
    if record.get("manifest"):
        refs.append((record["manifest"], "manifest"))
    if record.get("run_manifest") and record["run_manifest"] != record.get("manifest"):
        refs.append((record["run_manifest"], "manifest"))
    if record.get("previous"):
        refs.append((record["previous"], "run"))
    for name, log in (record.get("logs") or {}).items():
        if isinstance(log, dict) and log.get("digest"):
            refs.append((log["digest"], f"log.{name}"))
    git = record.get("git") or {}
    if isinstance(git, dict) and git.get("diff"):
        refs.append((git["diff"], "git.diff"))
    for out in (record.get("outputs") or {}).values():
        if isinstance(out, dict) and out.get("type") == "dir" and out.get("digest"):
            refs.append((out["digest"], "tree"))
    for f in (record.get("run_dir") or {}).values():
        if isinstance(f, dict) and f.get("digest"):
            refs.append((f["digest"], "run_dir.file"))
    drift = record.get("drift") or {}
    if isinstance(drift, dict) and drift.get("manifest_after"):
        refs.append((drift["manifest_after"], "manifest"))
    return refs
