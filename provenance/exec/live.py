"""Live facts: what the probe saw, in the run's record while the command still runs.

A server's facts (the engine block, runtime.vllm.*) are written by the in-process probe
when the engine is ready, long before the server exits. A thread of the supervisor polls
the probe's files ($PROV_RUN_DIR/probe/*.json, rewritten whole by rename) every POLL_S;
when they changed it builds the run's facts and manifest by the one rule the final record
uses (facts.run_facts, without consuming the files), stores the manifest and writes a newer
*started* record pointing at the last one, with `live` = {update, updated_at, engines}.

It then digests the files the processes have mapped into the run's file-digest cache (read
once per run; written after an update that added digests, and when the run ends), so the
final record's loaded libraries are cache hits. For a running run, then,
`store.run_manifest(record)` and `record.manifest_digest` are the live ones; for a finished
run the final ones. The index shows a started run whose live facts hold an engine block
as *serving*. The thread never fails the run: an update that fails is retried at the next
change. PROV_LIVE_FACTS=0 turns it off (the bench's baseline).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from provenance.exec.facts import run_facts
from provenance.exec.libraries import FileDigestCache
from provenance.exec.record import run_section
from provenance.model.errors import ProvError
from provenance.model.redact import KnownSecrets, store_key
from provenance.store import RunRecord, Store
from provenance.store.manifests import run_manifest_text
from provenance.store.records import now_iso

POLL_S = 0.5
BUSY_FACTOR = 2  # after an update that took t, the next starts no sooner than 2 t later
ENGINES = ("vllm", "transformers")


def probe_signature(run_dir: Path) -> tuple[tuple[str, int, int], ...]:
    """(name, mtime_ns, size) of each probe file: what changes when a process rewrites its."""
    out = []
    try:
        entries = list((run_dir / "probe").iterdir())
    except OSError:
        return ()
    for p in entries:
        if p.suffix != ".json":
            continue
        try:
            st = p.stat()
        except OSError:
            continue  # renamed over while we looked: the next poll sees the new one
        out.append((p.name, st.st_mtime_ns, st.st_size))
    return tuple(sorted(out))


def store_run_manifest(store: Store, record: RunRecord, snapshot_text: str,
                       snapshot_digest: str, facts: dict[str, Any]) -> tuple[str, str]:
    """The run's manifest, built by store.manifests and stored: its object and identity
    digest. Without facts of its own it is the started snapshot."""
    if not facts:
        return record.manifest, snapshot_digest
    text, digest = run_manifest_text(snapshot_text, snapshot_digest, facts)
    return store.put_manifest_text(text, digest), digest


def engines_in(facts: dict[str, Any]) -> list[str]:
    runtime = facts.get("runtime") or {}
    return [e for e in ENGINES if runtime.get(e)]


class LiveFacts:
    """Keeps a running command's started record up to date with what its probe wrote."""

    def __init__(self, store: Store, record: RunRecord, started: str, snapshot_text: str,
                 snapshot_digest: str, argv: Sequence[str], workdir: Path,
                 outputs: Sequence[Path], known: KnownSecrets | None,
                 digests: FileDigestCache) -> None:
        self.store = store
        self.digests = digests  # the run's file-digest cache, read once for every update
        self.known = known  # what the run's redaction hid: hidden in its facts too
        self.record = record  # the first started record: every update derives from it
        self.digest = started  # the newest started record
        self.snapshot_text = snapshot_text
        self.snapshot_digest = snapshot_digest
        self.argv = list(argv)
        self.workdir = workdir
        self.outputs = list(outputs)
        self.run_dir = store.run_dir(record.run_id)
        self.update = 0
        self.manifest_obj: str | None = None
        self.error: str | None = None
        self._seen: tuple = ()
        self._next = 0.0  # monotonic time before which no update starts (BUSY_FACTOR)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> LiveFacts:
        if os.environ.get("PROV_LIVE_FACTS") == "0":  # off: every fact after the exit
            return self
        self._thread = threading.Thread(target=self._loop, name="prov-live-facts", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> str:
        """Stop polling (an update under way is finished); the newest started record."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self.digest

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            self.poll()

    def poll(self) -> bool:
        """Update the record if the probe's files changed since the last update."""
        if time.monotonic() < self._next:
            return False
        seen = probe_signature(self.run_dir)
        if not seen or seen == self._seen:
            return False
        t0 = time.monotonic()
        try:
            updated = self._update()
        except (OSError, sqlite3.Error, ProvError, ValueError) as exc:
            self.error = f"live facts not updated: {type(exc).__name__}: {exc}"[:300]
            return False
        finally:
            # a run whose processes keep rewriting their files (many workers starting) must
            # not spend its CPU on prov: at most a third of the time goes to updates
            self._next = time.monotonic() + BUSY_FACTOR * (time.monotonic() - t0)
        self._seen = seen
        return updated

    def _update(self) -> bool:
        warnings: list[str] = []
        facts = run_facts(self.run_dir, self.snapshot_text, self.argv, self.workdir,
                          self.outputs, run_section(self.record), store_key(self.store.root),
                          warnings, consume=False, known=self.known, hasher=self.digests)
        obj, digest = store_run_manifest(self.store, self.record, self.snapshot_text,
                                         self.snapshot_digest, facts)
        if obj == self.manifest_obj:
            return False  # a process rewrote its file with nothing new
        self.update += 1
        live = {"update": self.update, "updated_at": now_iso(), "engines": engines_in(facts)}
        rec = self.record.replace(facts=facts, run_manifest=obj, manifest_digest=digest,
                                  live=live, warnings=warnings or None)
        self.digest = self.store.update_started(rec, self.digest)
        self.manifest_obj = obj
        # after the record: the engine block is not kept waiting
        prehash_mapped(self.run_dir, self.digests)
        # written when a digest was added (a checkpoint's, the libraries'): another run of
        # the same weights, or the recovery of this one if prov is killed, need not hash them
        self.digests.save()
        return True


def prehash_mapped(run_dir: Path, hasher: FileDigestCache) -> None:
    """Digest, into the run's file-digest cache, the files the probed processes have mapped
    (the loaded libraries prov digests when the run ends): while the server serves, not
    after."""
    from provenance.exec.probe.processes import exit_maps

    for paths in exit_maps(run_dir).values():
        for path in paths:
            if not path.endswith(" (deleted)"):
                hasher.hash(path)
