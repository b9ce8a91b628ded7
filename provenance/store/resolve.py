"""The one resolver of what a user typed: a manifest file, a stored manifest, or a run.

Order: an existing file path wins; otherwise the store (found from the cwd, or
$PROV_STORE) is asked for a run id prefix (as git resolves commits) and for a manifest
digest prefix (the object digest or the identity digest `prov snapshot` prints). A prefix
that names both a run and a manifest is refused as ambiguous. Every command that takes a
run or a manifest (`diff`, `compare`, `sbom`, `audit`, `publish`, `lock`, `verify`) comes
here, so each refusal is worded once; an image is scanned by `provenance.sbom.source`,
which asks this module for everything else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from provenance.model import Manifest
from provenance.model.errors import ProvError

MAX_REF = 256  # longer than any run id, digest or sane path a user types


class ResolvedKind(StrEnum):
    FILE = "file"  # a manifest file
    MANIFEST = "manifest"  # a stored manifest (object or identity digest, or a prefix)
    RUN = "run"  # a recorded run (id or prefix)


@dataclass
class Resolved:
    ref: str
    kind: ResolvedKind
    manifest: Manifest
    object: str | None = None  # the stored manifest object, if stored
    run: Any = None  # provenance.store.RunInfo for a run

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ref": self.ref,
            "type": self.kind,
            "manifest_digest": self.manifest.digest(),
        }
        if self.object:
            out["manifest"] = self.object
        if self.run is not None:
            out["run_id"] = self.run.run_id
            out["record"] = self.run.record_digest
            if self.run.name:
                out["name"] = self.run.name
        return out


def resolve(ref: str, store=None, option: str = "") -> Resolved:
    """What `ref` names: a manifest file, a run (id prefix) or a stored manifest (digest).
    `option` (`--run`, `--manifest`) starts every refusal, so it says what was asked."""
    try:
        return _resolve(ref, store)
    except ProvError as exc:
        if not option:
            raise
        raise ProvError(f"{option} {exc}", exc.exit_code) from None


def _resolve(ref: str, store) -> Resolved:
    # os.path.exists, not Path.exists: a name past the filesystem's limit is no file name,
    # and the OSError saying so (ENAMETOOLONG) means "not a file": the store is asked
    if os.path.exists(ref):
        # a ManifestError is a ProvError
        return Resolved(ref, ResolvedKind.FILE, Manifest.read(Path(ref)))
    if len(ref) > MAX_REF or not ref.isprintable():
        raise ProvError(f"{ref[:40]!r}...: no such manifest file, and not a run id or digest "
                        "(those are short hex strings)")
    from provenance.store import open_store

    store = store or open_store()
    if not (store.root / "objects").is_dir():
        raise ProvError(f"{ref}: no such manifest file (and no store at {store.root})")
    bare = ref.removeprefix("sha256:")
    run_ids = [] if ref.startswith("sha256:") else store.find_runs(ref)
    manifest_obj = store.resolve_manifest(bare) if len(bare) >= 4 else None
    if len(run_ids) > 1:
        raise ProvError(f"{ref}: ambiguous run id prefix ({len(run_ids)} runs match)")
    if run_ids and manifest_obj:
        raise ProvError(
            f"{ref}: ambiguous: names both run {run_ids[0]} and manifest {manifest_obj}"
        )
    if run_ids:
        run = store.get_run(run_ids[0])
        return Resolved(ref, ResolvedKind.RUN, store.run_manifest(run.record),
                        run.record.run_manifest_object, run)
    if manifest_obj:
        return Resolved(ref, ResolvedKind.MANIFEST, store.manifest_object(manifest_obj),
                        manifest_obj)
    raise ProvError(f"{ref}: no such manifest file, run or stored manifest in {store.root}")


def resolve_run(ref: str, store=None, option: str = "--run") -> Resolved:
    """A run that `ref` names (id or unique prefix), for commands that need a run."""
    resolved = resolve(ref, store, option)
    if resolved.kind is not ResolvedKind.RUN or resolved.run is None:
        raise ProvError(f"{option} {ref}: not a run (it names a {resolved.kind})")
    return resolved


def load_manifest(ref: str, option: str = "") -> Manifest:
    """A manifest from a file path, a stored manifest digest (prefix) or a run id (prefix)."""
    return resolve(ref, option=option).manifest


def one_of(options: dict[str, Any]) -> str | None:
    """The one option given among `options` (name -> value), or None; two or more are
    refused in one line, the same for every command that takes a source."""
    given = [name for name, value in options.items() if value is not None]
    if len(given) > 1:
        raise ProvError(f"give at most one of {', '.join(options)} (got {', '.join(given)})")
    return given[0] if given else None
