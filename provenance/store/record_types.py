"""The shapes of a run record's sections (`RunRecord`'s fields), typed.

TypedDicts: at run time each is the dict the record always held, so the canonical JSON,
and with it every record digest, is unchanged; for a reader they name the keys. Entries a
writer adds only sometimes are `NotRequired`. `facts` stays a mapping of manifest sections
(the probe's `runtime`, `code`, `inputs`, `server`, ...): its keys are the manifest's.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

# The run's own facts: manifest sections by name (exec/facts.py), merged into its manifest.
RunFacts = dict[str, Any]


class SnapshotUse(TypedDict):
    """How the started record's snapshot was taken."""

    cache: str  # "hit" or "miss"
    warnings: list[str]


class GitFacts(TypedDict):
    """The working tree the command ran in (provenance/gitstate.py); `diff` is the stored
    object of the uncommitted changes, secrets hidden."""

    repository: bool
    root: NotRequired[str]
    head: NotRequired[str]  # a commit, or `none: no commits yet`
    branch: NotRequired[str]
    remotes: NotRequired[dict[str, str]]
    dirty: NotRequired[bool]
    changed: NotRequired[list[str]]
    untracked: NotRequired[list[str]]
    error: NotRequired[str]
    diff: NotRequired[str]
    diff_size: NotRequired[int]
    diff_secrets_redacted: NotRequired[int]


class Supervisor(TypedDict):
    """Who supervised the run: a started run whose supervisor is gone is abandoned."""

    host: str
    pid: int
    boot_id: str
    start_ticks: int
    prov_version: NotRequired[str]


class LiveMark(TypedDict):
    """A started record rewritten while the command runs (exec/live.py)."""

    update: int
    updated_at: str
    engines: NotRequired[dict[str, Any]]


class LogEntry(TypedDict):
    digest: str  # the stored log object
    size: int
    truncated: NotRequired[str]  # why the store kept less ("disk full")


class OutputEntry(TypedDict):
    """A declared output when the run ended (exec/outputs.py)."""

    type: str  # file, dir, broken-link, unreadable, missing
    digest: NotRequired[str]  # a file's sha256, a directory's tree object
    size: NotRequired[int]
    files: NotRequired[int]
    target: NotRequired[str]  # a broken link's
    error: NotRequired[str]  # why it was unreadable


class StoredFile(TypedDict):
    """A file of the run directory, ingested into the store (or why not)."""

    digest: NotRequired[str]
    size: NotRequired[int]
    link: NotRequired[str]  # a symbolic link's target, not followed
    error: NotRequired[str]  # why it could not be read


class LoadedLibrary(TypedDict):
    """A file the run's processes had mapped (exec/libraries.py)."""

    path: str
    name: str
    size: NotRequired[int]
    sha256: NotRequired[str]  # or why not: `unavailable: ...`, `not compared: ...`
    jit: NotRequired[dict[str, Any]]


class DriftChange(TypedDict):
    key: str
    change: str
    a: Any
    b: Any


class Drift(TypedDict):
    """Whether the environment changed while the command ran (exec/drift.py)."""

    checked: bool
    detected: bool
    resnapshot: NotRequired[bool]
    manifest_after: NotRequired[str]
    manifest_digest_after: NotRequired[str]
    changes: NotRequired[list[DriftChange]]  # the first 500
    changes_total: NotRequired[int]


class Resources(TypedDict):
    """CPU and memory of the command and of prov (exec/record.py)."""

    child_cpu_s: float | None
    child_max_rss_kb: int | None
    prov_cpu_s: float
    prov_cpu_while_running_s: float
    prov_max_rss_kb: int | None
    descendants_max_rss_kb: int
