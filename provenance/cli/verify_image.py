"""`prov verify --lock IMAGE-LOCK [SOURCE]`: the image checked against its lock
(`lockfiles.verify_image`), rendered as a table or JSON.

Environment locks (PEP 751 pylock.toml, uv.lock, requirements.txt) are routed by
`prov verify` to `provenance.cli.lock_cmd` before reaching here; one that does is refused.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lockfiles import image_lock
from provenance.model.errors import EXIT_DIFFERS, EXIT_OK


def verify_image_lock(lock: Path, source: str | None, as_json: bool) -> int:
    """0 when the image matches its lock, 1 when it differs; bad input raises ProvError."""
    from containers import scan_image
    from lockfiles import check_image_lock

    check = check_image_lock(lock, source, scan_image)
    show = _print_json if as_json else _print_table
    show(lock, check.source, check.lock, check.facts, check.differences)
    return EXIT_OK if check.match else EXIT_DIFFERS


def _print_json(lock: Path, source: str, doc: dict, facts: dict,
                diffs: list[image_lock.Difference]) -> None:
    out: dict[str, Any] = {
        "lock": str(lock),
        "source": source,
        "match": not diffs,
        "locked": {k: doc["image"].get(k) for k in ("config_digest", "manifest_digest")},
        "now": {k: facts["image"].get(k) for k in ("config_digest", "manifest_digest")},
        "differences": [
            {"key": d.key, "change": d.change, "locked": d.locked, "now": d.now}
            | ({"path": d.path, "layer": d.layer} if d.path else {})
            | ({"installed": d.installed} if d.installed is not None else {})
            | ({"other": d.other} if d.other else {})
            for d in diffs
        ],
    }
    sys.stdout.write(json.dumps(out, indent=2, sort_keys=True) + "\n")


def _print_table(lock: Path, source: str, doc: dict, facts: dict,
                 diffs: list[image_lock.Difference]) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from provenance.cli.output import console

    con = console()  # what the image or the lock says is text, never markup
    if not diffs:
        con.print(
            f"[green]matches its lock[/green]: {escape(source)} is "
            f"{escape(str(facts['image']['config_digest']))} "
            f"({len(doc.get('packages', {}))} packages)"
        )
        return
    con.print(f"[red]does not match its lock[/red] {escape(str(lock))}: {len(diffs)} "
              "difference(s)")
    for label, image in (("locked", doc["image"]), ("now", facts["image"])):
        for key in ("manifest_digest", "config_digest"):
            con.print(f"{label:>7} {key:<16} {escape(str(image.get(key)))}")
    table = Table(show_lines=False)
    table.add_column("key", style="bold", overflow="fold")
    table.add_column("change")
    table.add_column("locked", overflow="fold")
    table.add_column("now", overflow="fold")
    for d in diffs:
        if not d.path:
            table.add_row(*(Text(str(v)) for v in (d.key, d.change, _text(d.locked),
                                                   _text(d.now))))
    if table.row_count:
        con.print(table)
    for d in diffs:
        if d.path:  # one line per file: package, path, kind and why, old and new digests
            why = finding_text(d.change, d.layer, d.installed, d.other)
            con.print(
                f"[bold]{escape(d.key[len('files.'):])}[/bold] {escape(d.path)}: {escape(why)} "
                f"(locked {escape(_text(d.locked) or '-')}, now {escape(_text(d.now) or '-')})"
            )


def finding_text(kind: str, layer: Any, installed: Any = None, other: str = "") -> str:
    """A file finding in words: its kind (the lock's name for it) and why."""
    if kind == "modified":
        if layer is not None and installed is not None and layer > installed:
            return f"modified after install (written in layer {layer}, installed in {installed})"
        return f"modified: differs from its package's claim (written in layer {layer})"
    if kind == "shared":
        return f"shared: claimed by two packages, the file is {other}'s (layer {layer})"
    if kind == "dpkg_intact":
        return f"dpkg_intact: differs from RECORD, matches dpkg's md5sums of {other}"
    if kind == "missing":
        where = f" in layer {layer}" if layer is not None else ""
        return f"missing: deleted{where}"
    if kind == "never_installed":
        return "never_installed: listed, never written by any layer"
    if kind == "unclaimed":
        return f"unclaimed: no package lists it (written in layer {layer})"
    if kind == "unlisted":
        return f"unlisted: no package lists it (written in layer {layer})"
    return kind  # "restored"


def _text(value: Any) -> str:
    return "" if value is None else str(value)
