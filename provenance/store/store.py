"""The run store: objects plus the SQLite index, behind one small API."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provenance.model import Manifest, ManifestError
from provenance.model.errors import ProvError
from provenance.model.inputs import shown
from provenance.model.redact import KnownSecrets, redact_record, store_key
from provenance.model.text import clean
from provenance.store import index as idx
from provenance.store.manifests import run_manifest
from provenance.store.objects import (
    FULL_ERRNOS,
    ObjectStore,
    StoreFull,
    StreamWriter,
    split_digest,
    store_full,
)
from provenance.store.records import (
    COMPARISON_KIND,
    RECORD_SCHEMA,
    RUN_KIND,
    effective_state,
    encode,
    index_row,
    now_iso,
)
from provenance.store.run_record import RunRecord
from provenance.store.states import FINAL_STATES, RunState

STORE_DIR = ".prov"
REINDEX_HINT = "run `prov store reindex` to rebuild it from the objects"


class IndexUnreadable(ProvError):
    """index.sqlite is not a whole SQLite database (truncated, overwritten, corrupt)."""


class StoreBroken(ProvError):
    """The store path is there but is no usable store: a symlink loop, `objects/` that is a
    file, an index that cannot be opened (exit 2: the path the user gave is not a store)."""


class StoreReadOnly(ProvError):
    """A write to a store on a read-only mount (or one this user may not write)."""


class _Index:
    """The index connection, with corruption said once, in one line naming reindex.

    Rows are fetched inside `execute`: SQLite reports a damaged page while stepping, which
    a caller iterating a cursor would otherwise meet as a raw sqlite3 error."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    def _unreadable(self, exc: sqlite3.Error) -> IndexUnreadable:
        return IndexUnreadable(f"{self.path} is unreadable ({exc}); {REINDEX_HINT}")

    def execute(self, sql: str, params=()) -> _Rows:
        try:
            return _Rows(self.conn.execute(sql, params).fetchall())
        except sqlite3.Error as exc:
            if idx.is_corruption(exc):
                raise self._unreadable(exc) from None
            if "full" in str(exc):  # SQLITE_FULL: "database or disk is full"
                raise StoreFull(f"{self.path}: cannot write the index (disk full)") from None
            raise

    def executescript(self, sql: str) -> None:
        self.conn.executescript(sql)

    def close(self) -> None:
        self.conn.close()


class _Rows(list):
    def fetchone(self):
        return self[0] if self else None

    def fetchall(self) -> list:
        return list(self)


def _prefix_span(prefix: str) -> tuple[str, str]:
    """The key range of the ids and digests starting with hex `prefix`: a range scan over
    the primary key, never a LIKE pattern (SQLite refuses a 100,000-character one as "too
    complex"); every character after a hex prefix sorts below 'g'."""
    return prefix, prefix + "g"


def find_git_root(start: Path) -> Path | None:
    """The nearest directory holding `.git` (a directory, or a file for worktrees)."""
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def default_store_path(cwd: Path | None = None) -> Path:
    env = os.environ.get("PROV_STORE")
    if env:
        return Path(env).expanduser().absolute()
    cwd = (cwd or Path.cwd()).absolute()
    return (find_git_root(cwd) or cwd) / STORE_DIR


@dataclass
class RunInfo:
    """A run as the index lists it; `record` is loaded on demand by `Store.get_run`."""

    run_id: str
    state: RunState  # running, serving, abandoned, complete, failed
    record_digest: str
    name: str | None
    started_at: str
    ended_at: str | None
    exit_status: int | None
    manifest_digest: str | None
    command: list[str]
    record: RunRecord | None = None


# Who finishes a run found abandoned (a started record whose supervisor is gone): exec's
# recovery, registered by the CLI (the store may not import exec). Called with the store and
# the RunInfo; returns the RunInfo after recovery (or the same one).
RECOVER_ABANDONED: Any = None


def on_abandoned(recover: Any) -> None:
    """Who finishes an abandoned run's record when a reader finds it: `recover(store, info)
    -> RunInfo` (the CLI passes `provenance.exec.recover`: the store may not import exec)."""
    global RECOVER_ABANDONED
    RECOVER_ABANDONED = recover


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.objects = ObjectStore(root)
        self.runs_dir = root / "runs"
        # one SQLite connection per thread: runners may supervise several runs at once
        self._local = threading.local()
        self._known: dict[str, KnownSecrets] = {}  # run id -> what its redaction hid

    @contextlib.contextmanager
    def hiding(self, run_id: str, known: KnownSecrets) -> Iterator[None]:
        """While a run is supervised, every record of it this store writes has the values its
        redaction hid (environment, argv, tags, params: model.redact.KnownSecrets) removed
        wherever they appear again (the values live in memory only)."""
        self._known[run_id] = known
        try:
            yield
        finally:
            self._known.pop(run_id, None)

    # -- set-up -----------------------------------------------------------------
    def _ensure_layout(self) -> None:
        """Create the layout on first write; every writer comes through here."""
        self.require_writable()
        if (self.root / "objects").is_dir():
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # The store never shows up as untracked files of the repository it sits in.
            ignore = self.root / ".gitignore"
            if not ignore.exists():
                ignore.write_text("*\n")
            (self.root / "objects").mkdir(exist_ok=True)
        except OSError as exc:
            if exc.errno in FULL_ERRNOS:
                raise store_full(exc, self.root) from None
            raise

    def prepare_for_writes(self) -> None:
        """Make the layout and open the index now: a store that cannot take a run (full,
        damaged, read-only) says so before a writer has done any work."""
        self._ensure_layout()
        _ = self.db

    @property
    def writable(self) -> bool:
        """Whether this process may write the store (False on a read-only mount; root
        passes mode bits, so access() is asked, which also sees EROFS). Asked with the
        effective ids and capabilities, as the writes themselves will be (a process of
        another uid with CAP_DAC_OVERRIDE writes where plain access() would say no)."""
        probe = self.root
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent  # a store not made yet is made under its nearest ancestor
        return os.access(probe, os.W_OK, effective_ids=True)

    def require_writable(self) -> None:
        if not self.writable:
            raise StoreReadOnly(f"{self.root} is read-only: this command writes the store")

    @property
    def db(self) -> _Index:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _Index(self._connect(), self.root / "index.sqlite")
            self._local.conn = conn
        return conn

    def _connect(self) -> sqlite3.Connection:
        path = self.root / "index.sqlite"
        try:
            if self.writable:
                self._ensure_layout()
                return idx.connect(path)
            if not path.exists():
                raise ProvError(f"{path} is absent and the store is read-only: "
                                f"{REINDEX_HINT} where it can be written")
            return idx.connect_readonly(path)
        except sqlite3.Error as exc:
            if idx.is_corruption(exc) or not self.writable:
                raise IndexUnreadable(f"{path} is unreadable ({exc}); {REINDEX_HINT}") from None
            if "full" in str(exc):  # SQLITE_FULL while a first reader creates the index
                raise StoreFull(f"{path}: cannot create the index (disk full); free space "
                                "in the store's filesystem") from None
            raise StoreBroken(f"{path}: cannot open the index ({exc})") from None

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- objects ----------------------------------------------------------------
    def put_bytes(self, data: bytes, kind: str = "blob") -> str:
        self._ensure_layout()
        digest = self.objects.put_bytes(data)
        with idx.transaction(self.db) as conn:
            idx.add_object(conn, digest, kind, len(data))
        return digest

    def put_object(self, data: bytes) -> str:
        """Write `data` as an object without its own index row: the run record that points
        at it indexes it (`create_run`/`finalize_run`'s `extra_objects`), in one transaction."""
        self._ensure_layout()
        return self.objects.put_bytes(data)

    def put_file(self, path: Path) -> tuple[str, int]:
        """Copy a file into the objects (streamed); (digest, size). Indexed as put_object."""
        self._ensure_layout()
        return self.objects.put_file(path)

    def object_writer(self, prefix: str = "obj-") -> StreamWriter:
        """A streaming writer for large content (logs): bounded memory; `close()` -> digest."""
        self._ensure_layout()
        return self.objects.writer(prefix)

    def get_bytes(self, digest: str) -> bytes:
        return self.objects.get_bytes(self.resolve_object(digest))

    def get_json(self, digest: str) -> dict[str, Any]:
        try:
            doc = json.loads(self.get_bytes(digest))
        except ValueError:
            raise ProvError(f"object {digest} is not a JSON document") from None
        if not isinstance(doc, dict):
            raise ProvError(f"object {digest} is not a JSON document")
        return doc

    def resolve_object(self, prefix: str) -> str:
        hexpart = split_digest(prefix)
        if len(hexpart) == 64:
            return f"sha256:{hexpart}"
        found = self.objects.resolve_prefix(prefix)
        if not found:
            raise ProvError(f"{prefix}: no such object in {self.root}")
        if len(found) > 1:
            raise ProvError(f"{prefix}: ambiguous object prefix ({len(found)} objects match)")
        return found[0]

    # -- manifests --------------------------------------------------------------
    def put_manifest(
        self, manifest: Manifest, *, text: str | None = None, digest: str | None = None
    ) -> str:
        """Store `manifest` as a JSON object; returns the object digest.

        `text` (its `to_json()`) and `digest` may be passed when the caller has them already:
        both walk every leaf, which costs tens of ms for a large environment.
        """
        return self.put_manifest_text(text if text is not None else manifest.to_json(),
                                      digest or manifest.digest())

    def put_manifest_text(self, text: str, digest: str) -> str:
        """Store a manifest document (its JSON text) whose identity digest is `digest`."""
        self._ensure_layout()
        data = text.encode("utf-8")
        obj = self.objects.put_bytes(data)
        with idx.transaction(self.db) as conn:
            idx.add_object(conn, obj, "manifest", len(data))
            conn.execute(
                "INSERT OR IGNORE INTO manifests (object, manifest_digest, created_at) "
                "VALUES (?, ?, ?)",
                (obj, digest, now_iso()),
            )
        return obj

    def manifest_digest_of(self, obj: str) -> str | None:
        """The identity digest recorded for the stored manifest object `obj`."""
        row = self.db.execute("SELECT manifest_digest FROM manifests WHERE object = ?",
                              (obj,)).fetchone()
        return row["manifest_digest"] if row else None

    def resolve_manifest(self, prefix: str) -> str | None:
        """Object digest for a manifest object prefix or a manifest (identity) digest prefix."""
        try:
            hexpart = split_digest(prefix)
        except ProvError:
            return None
        if not 4 <= len(hexpart) <= 64:
            return None
        span = _prefix_span(f"sha256:{hexpart}")
        rows = self.db.execute(
            "SELECT object FROM manifests WHERE object >= ? AND object < ?", span
        ).fetchall()
        if len(rows) > 1:
            raise ProvError(f"{prefix}: ambiguous manifest prefix ({len(rows)} match)")
        if rows:
            return rows[0]["object"]
        rows = self.db.execute(
            "SELECT DISTINCT manifest_digest FROM manifests "
            "WHERE manifest_digest >= ? AND manifest_digest < ?", span
        ).fetchall()
        if len(rows) > 1:
            raise ProvError(f"{prefix}: ambiguous manifest digest prefix ({len(rows)} match)")
        if not rows:
            return None
        # Every object with this identity digest has the same identity; take the newest.
        row = self.db.execute(
            "SELECT object FROM manifests WHERE manifest_digest = ? "
            "ORDER BY created_at DESC LIMIT 1",
            (rows[0]["manifest_digest"],),
        ).fetchone()
        return row["object"]

    def load_manifest(self, digest_prefix: str) -> Manifest:
        obj = self.resolve_manifest(digest_prefix)
        if obj is None:
            raise ProvError(f"{digest_prefix}: no such manifest in {self.root}")
        return self.manifest_object(obj)

    def manifest_object(self, digest: str) -> Manifest:
        """A stored manifest. Its bytes are checked against the object's name (get_bytes);
        its recorded identity digest is not re-checked: it is what the classification table
        of the prov that wrote it gave, and a later prov may classify a key otherwise (the
        gate then compares by today's table, which is what a refusal must follow)."""
        try:
            return Manifest.loads(self.get_bytes(digest).decode("utf-8"), origin=digest,
                                  verify=False)
        except ManifestError as exc:
            raise ProvError(str(exc)) from None

    # -- runs -------------------------------------------------------------------
    def _put_record(self, doc: dict[str, Any], extra_objects=(), manifest=None) -> str:
        self._ensure_layout()
        # the one backstop: whatever a caller put in a record, no secret is stored
        doc = redact_record(doc, store_key(self.root), self._known.get(str(doc.get("run_id"))))
        doc = clean(doc)  # a name or path that is not UTF-8 is kept as `\xNN` (model/text)
        data = encode(doc)
        digest = self.objects.put_bytes(data)
        with idx.transaction(self.db) as conn:
            idx.add_object(conn, digest, "run", len(data))
            for d, kind, size in extra_objects:
                idx.add_object(conn, d, kind, size)
            if manifest is not None:
                conn.execute(
                    "INSERT OR IGNORE INTO manifests (object, manifest_digest, created_at) "
                    "VALUES (?, ?, ?)",
                    (manifest[0], manifest[1], doc.get("started_at") or now_iso()),
                )
            idx.upsert_run(conn, index_row(doc, digest))
        return digest

    def create_run(
        self, record: RunRecord, manifest: tuple[str, str] | None = None, extra_objects=()
    ) -> str:
        """Record a started run (objects first, then the index rows); returns its digest.

        `manifest` is (object digest, identity digest) of its already stored manifest.
        """
        doc = {**record.to_doc(), "kind": RUN_KIND, "schema_version": RECORD_SCHEMA,
               "state": RunState.STARTED}
        self._ensure_layout()
        return self._put_record(doc, extra_objects, manifest)

    def update_started(self, record: RunRecord, previous: str, extra_objects=()) -> str:
        """A newer started record of a running run (its live facts: exec/live.py), pointing at
        `previous`; the index row follows it (state "serving" when it holds `live`)."""
        if record.state != RunState.STARTED:
            raise ValueError("an update of a started run must be started")
        doc = {**record.to_doc(), "kind": RUN_KIND, "schema_version": RECORD_SCHEMA,
               "previous": previous}
        return self._put_record(doc, extra_objects)

    def finalize_run(self, record: RunRecord, previous: str, extra_objects=()) -> str:
        """Write the final record of a run (state complete or failed), pointing at `previous`."""
        if record.state not in FINAL_STATES:
            raise ValueError(f"final state must be one of {', '.join(FINAL_STATES)}")
        self._ensure_layout()
        doc = {**record.to_doc(), "kind": RUN_KIND, "schema_version": RECORD_SCHEMA,
               "previous": previous}
        return self._put_record(doc, extra_objects)

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    @staticmethod
    def _info(row: sqlite3.Row) -> RunInfo:
        return RunInfo(
            run_id=row["run_id"],
            state=effective_state(
                row["state"], row["sup_host"], row["sup_pid"], row["sup_boot"], row["sup_start"]
            ),
            record_digest=row["record"],
            name=row["name"],
            started_at=row["started_at"],
            ended_at=row["ended_at"],
            exit_status=row["exit_status"],
            manifest_digest=row["manifest_digest"],
            command=json.loads(row["command"]),
        )

    def list_runs(self, limit: int | None = None) -> list[RunInfo]:
        sql = "SELECT * FROM runs ORDER BY started_at DESC, run_id"
        params: tuple = ()
        if limit:
            sql += " LIMIT ?"
            params = (limit,)
        return [self._recovered(self._info(r)) for r in self.db.execute(sql, params)]

    def _recovered(self, info: RunInfo) -> RunInfo:
        """`info`, finished by RECOVER_ABANDONED first when its run is abandoned and its
        newest record is still the started one (a later record of the run says abandoned)."""
        if info.state != RunState.ABANDONED or RECOVER_ABANDONED is None or not self.writable:
            return info
        row = self.db.execute("SELECT state FROM runs WHERE run_id = ?",
                              (info.run_id,)).fetchone()
        if row is None or row["state"] in FINAL_STATES:
            return info
        return RECOVER_ABANDONED(self, info)

    def find_runs(self, prefix: str) -> list[str]:
        if not prefix or set(prefix.lower()) - set("0123456789abcdef"):
            return []
        rows = self.db.execute(
            "SELECT run_id FROM runs WHERE run_id >= ? AND run_id < ?",
            _prefix_span(prefix.lower()),
        ).fetchall()
        return [r["run_id"] for r in rows]

    def get_run(self, prefix: str) -> RunInfo:
        """A run by id or unique id prefix (as git resolves commits), record loaded."""
        ids = self.find_runs(prefix)
        if not ids:
            raise ProvError(f"{prefix}: no such run in {self.root}")
        if len(ids) > 1:
            raise ProvError(f"{prefix}: ambiguous run id prefix ({len(ids)} runs match)")
        row = self.db.execute("SELECT * FROM runs WHERE run_id = ?", (ids[0],)).fetchone()
        info = self._recovered(self._info(row))
        info.record = self.get_record(info.record_digest)
        return info

    def get_record(self, digest: str) -> RunRecord:
        """The run record object `digest`, validated (RecordError if it is not one)."""
        return RunRecord.from_doc(self.get_json(digest), origin=f"run record {digest}")

    def run_manifest(self, record: RunRecord) -> Manifest:
        """The run's manifest, as `prov exec` built and stored it when the run ended.

        A started run has only its snapshot; a record written before prov stored the run's
        manifest (no `run_manifest`) is completed by the same rule, from its `facts`."""
        if record.run_manifest:
            return self.manifest_object(record.run_manifest)
        base = self.manifest_object(record.manifest)
        return run_manifest(base, facts=record.facts) if record.facts else base

    # -- comparisons ------------------------------------------------------------
    def put_comparison(self, doc: dict[str, Any]) -> str:
        doc = clean({**doc, "kind": COMPARISON_KIND, "schema_version": RECORD_SCHEMA})
        data = encode(doc)
        self._ensure_layout()
        digest = self.objects.put_bytes(data)
        with idx.transaction(self.db) as conn:
            idx.add_object(conn, digest, "comparison", len(data))
            conn.execute(
                "INSERT OR IGNORE INTO comparisons (object, a, b, created_at) VALUES (?, ?, ?, ?)",
                (digest, doc["a"]["ref"], doc["b"]["ref"], doc.get("created_at", now_iso())),
            )
        return digest

    def list_comparisons(self) -> list[dict[str, Any]]:
        return [
            dict(r) for r in self.db.execute("SELECT * FROM comparisons ORDER BY created_at DESC")
        ]

    # -- maintenance --------------------------------------------------------------
    def reindex(self):
        from provenance.store.maintenance import reindex

        self.require_writable()
        return reindex(self)

    def gc(self, **options):
        from provenance.store.gc import gc

        self.require_writable()
        return gc(self, **options)

    def fsck(self):
        from provenance.store.maintenance import fsck

        return fsck(self)


def open_store(path: str | Path | None = None) -> Store:
    """The store at `path`, else $PROV_STORE, else `.prov/` at the git root (or cwd).

    A path that is there but is no usable store (a symlink loop, `objects/` that is a file)
    is refused as StoreBroken, so no reader mistakes it for an empty store."""
    try:
        root = Path(path).expanduser().absolute() if path else default_store_path()
    except FileNotFoundError:  # Path.cwd() of a deleted working directory
        raise StoreBroken("cannot locate the store: the working directory no longer exists "
                          "(set PROV_STORE to an absolute path)") from None
    problem = layout_problem(root)
    if problem:
        raise StoreBroken(f"{shown(root)}: {problem}")
    return Store(root)


# What a store directory holds, and what each entry must be.
_LAYOUT = {"objects": stat.S_ISDIR, "tmp": stat.S_ISDIR, "runs": stat.S_ISDIR,
           "index.sqlite": stat.S_ISREG}


def layout_problem(root: Path) -> str | None:
    """Why `root` is not a usable store, or None (a store not made yet is usable)."""
    try:
        st = os.stat(root)
    except (FileNotFoundError, NotADirectoryError):
        if os.path.islink(root):
            return f"a symlink to {shown(os.readlink(root))}, which does not exist"
        above = next((p for p in root.parents if os.path.lexists(p)), None)
        if above is not None and not above.is_dir():  # PROV_STORE under a regular file
            return f"store path is under {shown(above)}, which is not a directory"
        return None
    except OSError as exc:  # ELOOP, ENAMETOOLONG, EACCES
        if exc.errno == errno.ELOOP:
            return "store path is a symlink loop"
        return f"store path cannot be used ({exc.strerror or exc})"
    if not stat.S_ISDIR(st.st_mode):
        return "store path exists and is not a directory"
    for name, is_kind in _LAYOUT.items():
        try:
            mode = os.stat(root / name).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            what = "a symlink loop" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
            return f"the store is damaged: {name} cannot be used ({what})"
        if not is_kind(mode):
            want = "a directory" if is_kind is stat.S_ISDIR else "a file"
            return f"the store is damaged: {name} is not {want}"
    return None
