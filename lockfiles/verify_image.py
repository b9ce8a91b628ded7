"""An image against its lock (`prov verify --lock IMAGE-LOCK [SOURCE]`): which lock it is,
which image to scan, how much of it, and every difference (`image_lock.compare`).

The scanner is passed in (`containers.scan_image`, by the CLI): this room reads locks and
imports only the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockfiles.errors import LockError
from lockfiles.image_lock import Difference, compare, read_lock
from lockfiles.kind import LockKind, lock_kind


@dataclass(frozen=True)
class ImageCheck:
    source: str  # the image scanned: the SOURCE given, else the one the lock recorded
    lock: dict[str, Any]  # the lock's document
    facts: dict[str, Any]  # the image's facts now
    differences: list[Difference]

    @property
    def match(self) -> bool:
        return not self.differences


def check_image_lock(lock: Path, source: str | None,
                     scan_image: Callable[..., Any]) -> ImageCheck:
    """Scan the image (`scan_image(source, verify_files=, all_files=)`) and compare it with
    the image lock at `lock`; bad input raises a ProvError."""
    from provenance.model.inputs import read_text

    text = read_text(lock, "lock")  # regular files only, bounded, strict UTF-8
    kind = lock_kind(text, str(lock))
    if kind is LockKind.PYLOCK:
        raise LockError(f"{lock}: an environment lock; check it with `prov verify --lock` alone")
    if kind is not LockKind.IMAGE:
        raise LockError(f"{lock}: not a lock prov knows (no kind or lock-version)")
    doc = read_lock(text, str(lock))
    source = source or doc["image"].get("source")
    if not source:
        raise LockError(f"{lock}: no SOURCE given and none recorded in the lock")
    # a format-1 lock has no file checks to compare: its image is not re-hashed per file
    # a lock pinned with --all-files recorded the unlisted files: they are compared too
    all_files = bool((doc.get("coverage") or {}).get("all_files"))
    scan = scan_image(source, verify_files="files" in doc, all_files=all_files)
    facts = scan.facts()
    return ImageCheck(source, doc, facts, compare(doc, facts, scan.file_checks()))
