"""The exchange lines of `<run dir>/server/<server run id>.jsonl`, checked at the edge.

A line is untrusted JSON from another process: a line that is not a JSON object of the
probe's format is counted and skipped, never fatal; a file is read up to a bound.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "prov-exchange/1"  # _prov_probe/exchange.py's
MAX_FILE_BYTES = 256 * 1024 * 1024


@dataclass
class ServerLines:
    """The lines of one server run, in the order their requests started."""

    run_id: str
    store: str | None
    lines: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0


def _valid(doc: Any, run_id: str) -> bool:
    return (isinstance(doc, dict) and doc.get("format") == FORMAT
            and doc.get("server_run_id") == run_id
            and isinstance(doc.get("request"), dict) and isinstance(doc.get("response"), dict))


def _started(doc: dict[str, Any]) -> float:
    t = doc.get("started_at")
    return float(t) if isinstance(t, (int, float)) else 0.0


def read_server_file(path: Path) -> ServerLines:
    """One server's file: its run id is the file's name."""
    run_id = path.name.removesuffix(".jsonl")
    out = ServerLines(run_id, None)
    with path.open("rb") as fh:
        data = fh.read(MAX_FILE_BYTES)
    for raw in data.splitlines():
        try:
            doc = json.loads(raw)
        except ValueError:
            out.skipped += 1
            continue
        if not _valid(doc, run_id):
            out.skipped += 1
            continue
        if out.store is None and isinstance(doc.get("server_store"), str):
            out.store = doc["server_store"]
        out.lines.append(doc)
    out.lines.sort(key=_started)
    return out


def read_servers(server_dir: Path) -> list[ServerLines]:
    """Every server run a client talked to, by the files the server-side probes wrote."""
    if not server_dir.is_dir():
        return []
    return [read_server_file(p) for p in sorted(server_dir.glob("*.jsonl")) if p.is_file()]
