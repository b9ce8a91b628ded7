"""Turn what a user typed into a Manifest: a manifest file, a stored manifest, or a run.

Order: an existing file path wins; otherwise the store (found from the cwd, or
$PROV_STORE) is asked for a run id prefix (as git resolves commits) and for a manifest
digest prefix (the object digest or the identity digest `prov snapshot` prints). A prefix
that names both a run and a manifest is refused as ambiguous.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provenance.model import Manifest
from provenance.model.errors import ProvError


@dataclass
class Resolved:
    ref: str
    type: str  # "file", "manifest" or "run"
    manifest: Manifest
    object: str | None = None  # the stored manifest object, if stored
    run: Any = None  # provenance.store.RunInfo for a run

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ref": self.ref,
            "type": self.type,
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


def resolve(ref: str, store=None) -> Resolved:
    """What `ref` names: a manifest file, a run (id prefix) or a stored manifest (digest)."""
    path = Path(ref)
    # os.path.exists, not Path.exists: a 100,000-character run id is no file name, and the
    # OSError saying so (ENAMETOOLONG) means "not a file": the store is asked
    if os.path.exists(path):
        return Resolved(ref, "file", Manifest.read(path))  # a ManifestError is a ProvError
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
        return Resolved(ref, "run", store.run_manifest(run.record),
                        run.record.run_manifest_object, run)
    if manifest_obj:
        return Resolved(ref, "manifest", store.manifest_object(manifest_obj), manifest_obj)
    raise ProvError(f"{ref}: no such manifest file, run or stored manifest in {store.root}")


def resolve_run(ref: str, store=None, option: str = "--run") -> Resolved:
    """A run that `ref` names (id or unique prefix), for commands that need a run."""
    try:
        resolved = resolve(ref, store)
    except ProvError as exc:
        raise ProvError(f"{option} {ref}: {exc}", exc.exit_code) from None
    if resolved.type != "run" or resolved.run is None:
        raise ProvError(f"{option} {ref}: not a run (it names a {resolved.type})")
    return resolved


def load_manifest(ref: str) -> Manifest:
    """A manifest from a file path, a stored manifest digest (prefix) or a run id (prefix)."""
    return resolve(ref).manifest
