"""Which cells are finished: `<store>/sweeps/cells.jsonl`, one line per finished cell.

Each line names a `prov.sweep.cell` object (the authority) by digest, with the cell key and
the manifest digest of the environment it ran in. A line is written (append, fsync) only
after the cell's objects are merged and its cell object is stored, so a ^C or a crash leaves
at worst a missing line (the cell runs again), never a line without its objects. A torn last
line is skipped. The journal is a cache: the cell objects are what counts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def path_for(store) -> Path:
    return Path(store.root) / "sweeps" / "cells.jsonl"


def append(store, entry: dict[str, Any]) -> None:
    p = path_for(store)
    p.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n"
    fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def entries(store) -> list[dict[str, Any]]:
    p = path_for(store)
    if not p.is_file():
        return []
    out = []
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue  # a torn line from a killed writer
        if isinstance(doc, dict) and isinstance(doc.get("key"), str):
            out.append(doc)
    return out
