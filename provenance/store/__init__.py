"""The run store: content-addressed immutable objects plus a rebuildable SQLite index.

Layout of a store (default `.prov/` at the git root of the cwd, else the cwd; $PROV_STORE
overrides):

    objects/sha256/ab/cdef...   immutable objects, named by the sha256 of their bytes
    index.sqlite (+ -wal, -shm)  the index of runs, manifests and comparisons (WAL mode)
    tmp/                         temp files being written (fsynced, then renamed into objects/)
    runs/<run id>/               PROV_RUN_DIR of a running run; ingested into objects at its end
"""

from provenance.store.merge import export_objects, import_objects, run_closure
from provenance.store.objects import CorruptObject
from provenance.store.records import encode, now_iso
from provenance.store.resolve import (
    Resolved,
    ResolvedKind,
    load_manifest,
    one_of,
    resolve,
    resolve_run,
)
from provenance.store.run_record import RecordError, RunRecord
from provenance.store.states import RunState
from provenance.store.store import (
    RunInfo,
    Store,
    default_store_path,
    find_git_root,
    on_abandoned,
    open_store,
)

__all__ = [
    "CorruptObject",
    "encode",
    "export_objects",
    "import_objects",
    "load_manifest",
    "now_iso",
    "one_of",
    "resolve",
    "resolve_run",
    "run_closure",
    "RecordError",
    "Resolved",
    "ResolvedKind",
    "RunInfo",
    "RunRecord",
    "RunState",
    "Store",
    "default_store_path",
    "find_git_root",
    "on_abandoned",
    "open_store",
]
