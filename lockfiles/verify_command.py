"""`prov verify --lock FILE [SOURCE]`: an image (or, later, an environment) against its lock.

Dispatches on the lock's kind: an image lock (`kind = "prov-image-lock"`) is checked by
scanning SOURCE (default: the source recorded in the lock) and comparing. Environment locks
(PEP 751 pylock.toml, uv.lock, requirements.txt) are routed by `prov verify` to
`provenance.cli.lock_cmd` before reaching here; one that does is refused clearly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lockfiles.image_lock import IMAGE_LOCK_KIND, Difference, LockError, compare, read_lock

EXIT_MATCH, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2


def _error(message: str) -> int:
    print(f"prov: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def lock_kind(text: str) -> str:
    """`prov-image-lock`, `pylock` or `unknown`, from the lock's text."""
    import tomlkit

    try:
        doc = tomlkit.parse(text)
    except Exception as exc:
        raise LockError(f"malformed TOML: {exc}") from None
    if doc.get("kind") == IMAGE_LOCK_KIND:
        return IMAGE_LOCK_KIND
    if "lock-version" in doc and "packages" in doc:
        return "pylock"
    return "unknown"


def verify_lock_command(lock: Path, source: str | None, as_json: bool) -> int:
    from provenance.model.inputs import InputError, read_text

    try:
        text = read_text(lock, "lock")
    except InputError as exc:
        return _error(str(exc))
    try:
        kind = lock_kind(text)
    except LockError as exc:
        return _error(f"{lock}: {exc}")
    if kind == IMAGE_LOCK_KIND:
        return _verify_image(lock, text, source, as_json)
    if kind == "pylock":
        return _error(f"{lock}: an environment lock; check it with `prov verify --lock` alone")
    return _error(f"{lock}: not a lock prov knows (no kind or lock-version)")


def _verify_image(lock: Path, text: str, source: str | None, as_json: bool) -> int:
    from containers import ImageError, scan_image

    try:
        doc = read_lock(text, str(lock))
    except LockError as exc:
        return _error(str(exc))
    source = source or doc["image"].get("source")
    if not source:
        return _error(f"{lock}: no SOURCE given and none recorded in the lock")
    try:
        scan = scan_image(source)
    except ImageError as exc:
        return _error(str(exc))
    facts = scan.facts()
    diffs = compare(doc, facts)
    if as_json:
        _print_json(lock, source, doc, facts, diffs)
    else:
        _print_table(lock, source, doc, facts, diffs)
    return EXIT_MISMATCH if diffs else EXIT_MATCH


def _print_json(lock: Path, source: str, doc: dict, facts: dict, diffs: list[Difference]) -> None:
    out: dict[str, Any] = {
        "lock": str(lock),
        "source": source,
        "match": not diffs,
        "locked": {k: doc["image"].get(k) for k in ("config_digest", "manifest_digest")},
        "now": {k: facts["image"].get(k) for k in ("config_digest", "manifest_digest")},
        "differences": [
            {"key": d.key, "change": d.change, "locked": d.locked, "now": d.now} for d in diffs
        ],
    }
    sys.stdout.write(json.dumps(out, indent=2, sort_keys=True) + "\n")


def _print_table(lock: Path, source: str, doc: dict, facts: dict, diffs: list[Difference]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(highlight=False, soft_wrap=True)
    if not diffs:
        con.print(
            f"[green]matches its lock[/green]: {source} is {facts['image']['config_digest']} "
            f"({len(doc.get('packages', {}))} packages)"
        )
        return
    con.print(f"[red]does not match its lock[/red] {lock}: {len(diffs)} difference(s)")
    for label, image in (("locked", doc["image"]), ("now", facts["image"])):
        for key in ("manifest_digest", "config_digest"):
            con.print(f"{label:>7} {key:<16} {image.get(key)}")
    table = Table(show_lines=False)
    table.add_column("key", style="bold", overflow="fold")
    table.add_column("change")
    table.add_column("locked", overflow="fold")
    table.add_column("now", overflow="fold")
    for d in diffs:
        table.add_row(d.key, d.change, _text(d.locked), _text(d.now))
    con.print(table)


def _text(value: Any) -> str:
    return "" if value is None else str(value)
