"""`RunRecord`: one run record, typed, read and written only at the store's edge.

A run is a chain of immutable record objects (records.py): the *started* record, then the
*complete* or *failed* one pointing back to it. On disk a record is canonical JSON; in
code it is this frozen dataclass. `from_doc` validates a document read from the store
(a malformed one raises `RecordError`, a ProvError: exit 2, one line, never a
traceback); `to_doc` writes it back field for field, so a record read and written again
has the same bytes. Fields a newer prov wrote and this one does not know are kept in
`extra`, never dropped.

`state` is the stored state (started, complete, failed, abandoned); whether a started run is
still *running* (*serving*, with live facts) or *abandoned* is the index's answer
(`RunInfo.state`); a later prov then finishes an abandoned run as `abandoned`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from provenance.model.errors import ProvError
from provenance.store.records import RECORD_SCHEMA, RUN_KIND
from provenance.store.states import STORED_STATES, RunState

if TYPE_CHECKING:  # annotations only (this module uses postponed annotations)
    from provenance.store.record_types import (
        Drift,
        GitFacts,
        LiveMark,
        LoadedLibrary,
        LogEntry,
        OutputEntry,
        Resources,
        RunFacts,
        SnapshotUse,
        StoredFile,
        Supervisor,
    )


class RecordError(ProvError):
    """A run record that does not have the shape `prov exec` writes."""


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    state: RunState  # started | complete | failed | abandoned (a later prov's: recover.py)
    command: tuple[str, ...]
    started_at: str
    manifest: str  # the snapshot manifest object (the environment before the command)
    manifest_digest: str  # the run manifest's identity digest (what every command shows)
    cwd: str | None = None
    name: str | None = None
    tags: dict[str, str] | None = None
    params: dict[str, Any] | None = None  # the run's declared parameters, as given
    snapshot: SnapshotUse | None = None
    git: GitFacts | None = None
    supervisor: Supervisor | None = None
    env_extra: dict[str, str] | None = None
    interpreter: str | None = None
    previous: str | None = None  # the record this one supersedes
    # a started record updated while the command runs (exec/live.py): update number, time
    live: LiveMark | None = None
    # written when the run ends
    ended_at: str | None = None
    duration_s: float | None = None
    exit_status: int | None = None
    signal: str | None = None
    error: str | None = None
    logs: dict[str, LogEntry] | None = None  # stdout, stderr
    outputs: dict[str, OutputEntry] | None = None  # by the path declared
    run_dir: dict[str, StoredFile] | None = None  # by the path in the run directory
    facts: RunFacts | None = None
    run_manifest: str | None = None  # the run's manifest object (store.manifests)
    loaded_libraries: list[LoadedLibrary] | None = None
    library_samples: int | None = None
    drift: Drift | None = None
    resources: Resources | None = None
    warnings: list[str] | None = None
    schema_version: int = RECORD_SCHEMA
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.state, RunState):  # a word given by a caller: one of the enum
            object.__setattr__(self, "state", RunState(self.state))

    # -- reading -------------------------------------------------------------------------
    @classmethod
    def from_doc(cls, doc: Any, origin: str = "run record") -> RunRecord:
        """Validate a record document (as stored, `kind` and `schema_version` included)."""
        if not isinstance(doc, Mapping):
            raise RecordError(f"{origin}: not a JSON object")
        if doc.get("kind", RUN_KIND) != RUN_KIND:
            raise RecordError(f"{origin}: kind {doc.get('kind')!r} is not {RUN_KIND!r}")
        schema = doc.get("schema_version", RECORD_SCHEMA)
        if not isinstance(schema, int) or schema > RECORD_SCHEMA:
            raise RecordError(f"{origin}: schema_version {schema!r} is newer than this prov's "
                              f"({RECORD_SCHEMA})")
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in doc.items():
            if key == "kind":
                continue
            if key in _FIELDS and key != "extra" and value is not None:
                values[key] = _checked(key, value, origin)
            else:
                extra[key] = value
        missing = [k for k in _REQUIRED if k not in values]
        if missing:
            raise RecordError(f"{origin}: missing {', '.join(missing)}")
        if values["state"] not in STORED_STATES:
            raise RecordError(f"{origin}: state {values['state']!r} is not one of "
                              f"{', '.join(STORED_STATES)}")
        values["state"] = RunState(values["state"])
        values["command"] = tuple(values["command"])
        values["schema_version"] = schema
        return cls(**values, extra=extra)

    # -- writing -------------------------------------------------------------------------
    def to_doc(self) -> dict[str, Any]:
        """The record's document, as stored."""
        doc: dict[str, Any] = {"kind": RUN_KIND}
        for f in _FIELD_LIST:
            value = getattr(self, f.name)
            if f.name == "extra" or value is None:
                continue
            doc[f.name] = list(value) if f.name == "command" else value
        doc.update(self.extra)
        return doc

    def replace(self, **changes: Any) -> RunRecord:
        """A copy with `changes` (a field set to None is left out of the document)."""
        return dataclasses.replace(self, **changes)

    # -- reading conveniences ------------------------------------------------------------
    @property
    def run_manifest_object(self) -> str:
        """The object holding the run's manifest (the snapshot while the run is started)."""
        return self.run_manifest or self.manifest

    def log_digest(self, label: str) -> str | None:
        entry = (self.logs or {}).get(label)
        return entry.get("digest") if isinstance(entry, dict) else None


_FIELD_LIST = [f for f in dataclasses.fields(RunRecord)]
_FIELDS = {f.name for f in _FIELD_LIST}
_REQUIRED = ("run_id", "state", "command", "started_at", "manifest", "manifest_digest")
_STR = ("run_id", "state", "started_at", "manifest", "manifest_digest", "cwd", "name",
        "interpreter", "previous", "ended_at", "signal", "error", "run_manifest")
_DICT = ("tags", "params", "snapshot", "git", "supervisor", "env_extra", "logs", "outputs",
         "run_dir", "facts", "drift", "resources", "live")


def _checked(key: str, value: Any, origin: str) -> Any:
    """`value` if it has the type field `key` holds; RecordError otherwise."""
    if key in _STR:
        ok = isinstance(value, str)
    elif key in _DICT:
        ok = isinstance(value, dict)
    elif key == "command":
        ok = isinstance(value, list | tuple) and all(isinstance(a, str) for a in value)
    elif key in ("loaded_libraries", "warnings"):
        ok = isinstance(value, list)
    elif key in ("exit_status", "library_samples"):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif key == "duration_s":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        ok = True
    if not ok:
        raise RecordError(f"{origin}: field {key!r} has the wrong type "
                          f"({type(value).__name__})")
    return value
