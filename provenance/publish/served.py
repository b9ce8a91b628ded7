"""What a bundle carries of a client run bound to server runs (exec/serving/bind.py).

The client's stored `server/exchanges.json` is projected to `exchanges/<client run id>.json`:
per exchange its method, path, status, times, both bodies' sha256 and size, the request's
sampling fields, the response's token summaries as recorded, and its receipt. Where the
client was, which port it used, which pid served it and where the stores lie are left out,
as are bodies and headers (the probe never recorded either). Each server run the exchanges
name travels as `runs/<server run id>.json` (its newest record, redacted) with the manifest
of every record of its chain (`manifests/<hex>.json`): a receipt given while the server was
still serving names the manifest of the live record it was bound to, not the final one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError
from provenance.store.states import RunState

EXCHANGES_KIND = "prov-bundle-exchanges/1"
CLIENT_EXCHANGES = "server/exchanges.json"  # exec/serving/bind.py's run file
RECEIPT_KEYS = ("request_sha256", "response_sha256", "server_run_id",
                "server_manifest_digest", "time")
_EXCHANGE_KEYS = ("seq", "method", "path", "status", "started_at", "ended_at",
                  "content_type", "request_content_type", "server_run_id")
_REQUEST_KEYS = ("sha256", "size", "model", "stream", "max_tokens", "max_completion_tokens",
                 "temperature", "top_p", "top_k", "seed", "n", "logprobs", "top_logprobs",
                 "echo", "prompt_logprobs", "return_token_ids")
_RESPONSE_KEYS = ("sha256", "size", "events", "done", "unparsed", "unparsed_events",
                  "choices", "usage", "model", "id", "prompt_token_ids", "prompt_logprobs")


@dataclass
class ServerRun:
    run_id: str
    record: dict[str, Any]  # the newest record's document
    manifests: dict[str, Any] = field(default_factory=dict)  # identity digest -> Manifest
    chain: list[dict[str, Any]] = field(default_factory=list)  # {since, manifest_digest}


@dataclass
class Served:
    exchanges: dict[str, Any]  # the bundle's exchanges/<client>.json document
    servers: list[ServerRun]


def _pick(doc: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: doc[k] for k in keys if isinstance(doc, dict) and k in doc}


def project(exchange: dict[str, Any]) -> dict[str, Any]:
    """One exchange as a bundle holds it: digests, sizes, tokens, receipt; nothing else."""
    out = _pick(exchange, _EXCHANGE_KEYS)
    from provenance.model.redact import redact_value

    out["request"] = {k: redact_value(k, v) if isinstance(v, str) and k != "sha256" else v
                      for k, v in _pick(exchange.get("request"), _REQUEST_KEYS).items()}
    out["response"] = _pick(exchange.get("response"), _RESPONSE_KEYS)
    out["receipt"] = _pick(exchange.get("receipt"), RECEIPT_KEYS)
    return out


def _chain(store, record) -> list[tuple[float | None, Any]]:
    """(since, record) of every record of a run, newest first (the `previous` links)."""
    out, rec = [], record
    for _ in range(10000):  # a chain is short; a cycle in a damaged store is not followed
        if rec is None:
            break
        started = rec.state == RunState.STARTED
        when = (rec.live or {}).get("updated_at") if started else rec.ended_at
        out.append((when or rec.started_at, rec))
        rec = store.get_record(rec.previous) if rec.previous else None
    return out


def _server_run(run_id: str, store_path: str | None, own) -> ServerRun:
    from provenance.store import open_store

    try:
        store = own if not store_path or Path(store_path).absolute() == own.root.absolute() \
            else open_store(store_path)
        info = store.get_run(run_id)
        chain = _chain(store, info.record)
        manifests = {rec.manifest_digest: store.run_manifest(rec) for _, rec in chain}
    except (ProvError, OSError) as exc:
        raise ProvError(f"the client talked to server run {run_id}, whose record cannot be "
                        f"read here ({exc}); publish where its store is readable") from None
    for digest, m in manifests.items():
        if m.digest() != digest:
            raise ProvError(f"server run {run_id}: a record names manifest {digest}, its "
                            f"stored manifest is {m.digest()}")
    steps = [{"since": since, "manifest_digest": rec.manifest_digest}
             for since, rec in reversed(chain)]
    return ServerRun(run_id, info.record.to_doc(), manifests, steps)


def collect(record: dict[str, Any]) -> Served | None:
    """The exchanges and server runs of a client run's record (None: no server run)."""
    from provenance.model.redact import strip_url_credentials
    from provenance.store import open_store

    entry = (record.get("run_dir") or {}).get(CLIENT_EXCHANGES)
    if not isinstance(entry, dict) or not isinstance(entry.get("digest"), str):
        return None
    own = open_store()
    try:
        doc = own.get_json(entry["digest"])
    except (ProvError, OSError, ValueError) as exc:
        raise ProvError(f"run {record.get('run_id')}: its {CLIENT_EXCHANGES} cannot be read "
                        f"({exc})") from None
    lines = [e for e in (doc.get("exchanges") or []) if isinstance(e, dict)] \
        if isinstance(doc, dict) else []
    stores = {s.get("run_id"): s.get("store") for s in doc.get("servers") or []
              if isinstance(s, dict)} if isinstance(doc, dict) else {}
    named = list(dict.fromkeys([*stores, *(e.get("server_run_id") for e in lines)]))
    servers = [_server_run(str(sid), stores.get(sid), own) for sid in named if sid]
    urls = {s.get("run_id"): strip_url_credentials(str(s["url"])) if s.get("url") else None
            for s in doc.get("servers") or [] if isinstance(s, dict)}
    out = {"kind": EXCHANGES_KIND, "client_run_id": record.get("run_id"),
           "servers": [{"run_id": s.run_id, "record": f"runs/{s.run_id}.json",
                        "url": urls.get(s.run_id),
                        "manifest_digest": s.record.get("manifest_digest"),
                        "record_chain": s.chain} for s in servers],
           "exchanges": [project(e) for e in lines]}
    return Served(out, servers)
