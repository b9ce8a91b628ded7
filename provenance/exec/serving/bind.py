"""At a client run's finish: the server runs it talked to, as its `server` facts section.

The server-side probe wrote one line per exchange into `<run dir>/server/<id>.jsonl`
(found by the client's socket, no option needed on one machine); `prov exec --server URL`
adds the server that URL names. Each server run is opened in its store and its manifest
taken as the store gives it (`store.run_manifest`: the live one of a server still serving,
once those live facts hold what its probe had written: a client's finish waits up to
CATCH_UP_S for the server's supervisor to take them in); its identity keys become the
client's `server.*` (identity.py), beside context: the run
id(s), store, state, manifest digest, URL and the exchange count. Each receipt gets the
manifest digest the server run's record held when its request came (the record chain:
started, live updates, final); a digest that changed between exchanges is a warning. The
exchanges go to `server/exchanges.json`, stored with the run's other files (bodies by
digest only).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.exec.serving.identity import identity_of, merged_identity
from provenance.exec.serving.lines import FORMAT, ServerLines, read_servers
from provenance.model import Manifest
from provenance.model.errors import ProvError
from provenance.model.manifest import canonical_json
from provenance.store import RunRecord, RunState, Store, open_store

EXCHANGES_FILE = "server/exchanges.json"
CATCH_UP_S = 10.0  # the longest a client's finish waits for its server's live facts
EXCHANGES_KIND = "prov-exchanges/1"


@dataclass
class Bound:
    """One server run as the client is bound to it."""

    run_id: str
    store: str | None
    identity: dict[str, Any] | None = None  # None: the server run could not be read
    digest: str | None = None
    state: str | None = None
    url: str | None = None
    lines: list[dict[str, Any]] = field(default_factory=list)
    history: list[tuple[float, str]] = field(default_factory=list)  # (since, digest)
    command_env: dict[str, Any] | None = None  # its `probe.command_env` (keyed digests)


def _open(path: str | None, own: Store) -> Store:
    if path is None or Path(path).absolute() == own.root.absolute():
        return own
    return open_store(path)


def _newest_probe_write(run_dir: Path) -> float | None:
    """When the server's probe last wrote a file (epoch seconds), None when it has none."""
    try:
        times = [p.stat().st_mtime for p in (run_dir / "probe").glob("*.json")]
    except OSError:
        return None
    return max(times, default=None)


def _caught_up(store: Store, run_id: str) -> Any:
    """The server run as the index has it, once a serving run's live facts hold what its
    probe has written (a client done within a poll of the server's readiness would get the
    started snapshot otherwise); after CATCH_UP_S, as it is."""
    deadline = time.monotonic() + CATCH_UP_S
    while True:
        info = store.get_run(run_id)
        if info.record.state != RunState.STARTED or time.monotonic() > deadline:
            return info
        wrote = _newest_probe_write(store.run_dir(run_id))
        live = _epoch((info.record.live or {}).get("updated_at"))
        if wrote is None or (live is not None and live >= wrote):
            return info
        time.sleep(0.2)


def _read_server(b: Bound, own: Store, warnings: list[str]) -> None:
    try:
        store = _open(b.store, own)
        info = _caught_up(store, b.run_id)
        manifest = store.run_manifest(info.record)
    except (ProvError, OSError) as exc:
        warnings.append(f"server run {b.run_id}: its facts could not be read ({exc}); "
                        "bound by run id only")
        return
    b.identity, b.digest, b.state = identity_of(manifest), manifest.digest(), info.state
    b.history = _digest_history(store, info.record)
    env = manifest.get("probe.command_env")
    b.command_env = env if isinstance(env, dict) else None


def _epoch(iso: Any) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(iso).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _digest_history(store: Store, record: RunRecord) -> list[tuple[float, str]]:
    """(from when, manifest digest) of each record of the run, oldest first: the started
    record, its live updates (exec/live.py), the final one."""
    out: list[tuple[float, str]] = []
    rec: RunRecord | None = record
    for _ in range(10000):  # a chain is short; a cycle in a damaged store is not followed
        if rec is None:
            break
        started = rec.state == RunState.STARTED
        when = (rec.live or {}).get("updated_at") if started else rec.ended_at
        t = _epoch(when or rec.started_at)
        if t is not None:
            out.append((t, rec.manifest_digest))
        rec = store.get_record(rec.previous) if rec.previous else None
    return sorted(out)


def digest_at(history: list[tuple[float, str]], t: Any) -> str | None:
    """The manifest digest a server run's record held at time `t` (epoch seconds)."""
    if not isinstance(t, (int, float)):
        return None
    found = None
    for since, digest in history:
        if since <= t:
            found = digest
    return found or (history[0][1] if history else None)


def _from_remote(doc: dict[str, Any], own: Store, warnings: list[str]) -> Bound:
    b = Bound(doc["server_run_id"], doc.get("store") if isinstance(doc.get("store"), str)
              else None, url=doc["url"])
    here = b.store is not None and Path(b.store).is_dir()
    if here:  # the server's store is readable from here (one machine, a shared disk)
        _read_server(b, own, [])
    if b.identity is None and isinstance(doc.get("manifest"), dict):
        try:  # the server's manifest document, its identity by this prov's table
            manifest = Manifest.from_document(doc["manifest"], origin=b.url, verify=False)
            b.identity, b.digest = identity_of(manifest), manifest.digest()
            b.state = doc.get("state") if isinstance(doc.get("state"), str) else None
        except ProvError as exc:
            warnings.append(f"--server {b.url}: its manifest is unreadable ({exc})")
    if b.identity is None:
        digest = doc.get("manifest_digest")
        warnings.append(f"--server {b.url}: the server gave its run id but no identity; "
                        "its manifest digest stands for it")
        b.identity = {"identity_digest": str(digest) if digest else "unknown"}
        b.digest = digest if isinstance(digest, str) else None
    return b


def _bound(servers: list[ServerLines], remote: dict[str, Any] | None, own: Store,
           warnings: list[str]) -> list[Bound]:
    out: dict[str, Bound] = {}
    if remote is not None:
        b = _from_remote(remote, own, warnings)
        out[b.run_id] = b
    for s in servers:
        if s.skipped:
            warnings.append(f"server run {s.run_id}: {s.skipped} exchange line(s) unreadable")
        b = out.get(s.run_id) or Bound(s.run_id, s.store)
        b.lines = s.lines
        if b.identity is None:
            _read_server(b, own, warnings)
        out[s.run_id] = b
    return list(out.values())


def _changed_digests(b: Bound, warnings: list[str]) -> None:
    seen = [digest_at(b.history, ln.get("started_at")) for ln in b.lines]
    distinct = list(dict.fromkeys(d for d in seen if d))
    if len(distinct) > 1:
        warnings.append(f"server run {b.run_id}: its manifest changed between exchanges "
                        f"({' -> '.join(distinct)})")


def _url(b: Bound) -> str | None:
    if b.url:
        return b.url
    where = next((ln.get("server_address") for ln in b.lines if ln.get("server_address")),
                 None)
    return f"http://{where}" if isinstance(where, str) else None


def _one_or_list(values: list[Any]) -> Any:
    values = [v for v in values if v is not None]
    distinct = list(dict.fromkeys(values))
    return distinct[0] if len(distinct) == 1 else distinct if distinct else None


def _exchanges_doc(bound: list[Bound]) -> dict[str, Any]:
    exchanges = []
    for b in bound:
        for ln in b.lines:
            receipt = ln.get("receipt") if isinstance(ln.get("receipt"), dict) else {}
            if not receipt.get("server_manifest_digest"):
                at = digest_at(b.history, ln.get("started_at")) or b.digest
                receipt = {**receipt, "server_manifest_digest": at}
            exchanges.append({**ln, "receipt": receipt})
    exchanges.sort(key=lambda e: e.get("started_at") or 0)
    return {"kind": EXCHANGES_KIND, "format": FORMAT,
            "servers": [{"run_id": b.run_id, "store": b.store, "manifest_digest": b.digest,
                         "url": _url(b)} for b in bound],
            "exchanges": exchanges}


def _section(bound: list[Bound], count: int) -> dict[str, Any]:
    known = [b.identity for b in bound if b.identity is not None]
    section = merged_identity(known)
    if len(bound) > len(known):  # a server that could not be read is no identity to skip
        section["unread"] = sorted(b.run_id for b in bound if b.identity is None)
    section["servers"] = len(bound)
    context = {"run_id": _one_or_list([b.run_id for b in bound]),
               "store": _one_or_list([b.store for b in bound]),
               "state": _one_or_list([b.state for b in bound]),
               "manifest_digest": _one_or_list([b.digest for b in bound]),
               "url": _one_or_list([_url(b) for b in bound]),
               "exchanges": {"count": count, "file": EXCHANGES_FILE},
               # one server's environment by digest, for the gate's rule on a variable
               # only one of two servers read (gate/env_read.py)
               "command_env": bound[0].command_env if len(bound) == 1 else None}
    section.update({k: v for k, v in context.items() if v is not None})
    return section


def bind_client(run_dir: Path, store: Store, warnings: list[str],
                server_url: str | None = None) -> dict[str, Any] | None:
    """The client's `server` section (None when it talked to no server run), and its
    exchanges written to `<run_dir>/server/exchanges.json`."""
    remote = None
    if server_url:
        from provenance.exec.serving.remote import fetch_identity

        try:
            remote = fetch_identity(server_url)
        except ProvError as exc:
            warnings.append(str(exc))
    servers = read_servers(run_dir / "server")
    if not servers and remote is None:
        return None
    bound = _bound(servers, remote, store, warnings)
    if len(bound) > 1:
        ids = ", ".join(b.run_id for b in bound)
        same = len({json.dumps(b.identity, sort_keys=True) for b in bound}) == 1
        warnings.append(f"the run talked to {len(bound)} server runs ({ids}): "
                        + ("the same identity (a restarted server?)" if same else
                           "their identities differ; server.* holds every value"))
    for b in bound:
        _changed_digests(b, warnings)
    doc = _exchanges_doc(bound)
    path = run_dir / EXCHANGES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(canonical_json(doc))
    return _section(bound, len(doc["exchanges"]))
