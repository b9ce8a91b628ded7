"""The snapshot: every collector under its timeout, built into one manifest; its cache for
`prov exec`; the git state of a working directory.

Public surface:
- `take_snapshot(SnapshotOptions) -> (Manifest, warnings)`: collect this interpreter's
  environment, or another interpreter's (`SnapshotOptions.python`), now;
- `cached_snapshot(python=None, use_cache=True) -> CachedSnapshot`, `fresh_snapshot(python)`,
  `still_valid(snap, python)`: the snapshot `prov exec` records, kept until anything it
  depends on changes (`provenance.collectors.stamped`, prov's one cache);
- `git_state(cwd) -> (facts, diff)`: repository, HEAD, branch, dirty flag, diff;
- `interpreter_path(python)`: the interpreter `--python` names, checked;
  `require_python_section(python, facts)`: refuses a snapshot with no Python section.
The collectors (`provenance/collectors/`) are this room's internals.
"""

from provenance.collectors.interpreter import interpreter_path, require_python_section
from provenance.snapshot.cache import CachedSnapshot, cached_snapshot, fresh_snapshot, still_valid
from provenance.snapshot.gitstate import git_state
from provenance.snapshot.take import SnapshotOptions, take_snapshot

__all__ = ["CachedSnapshot", "SnapshotOptions", "cached_snapshot", "fresh_snapshot",
           "git_state", "interpreter_path", "require_python_section", "still_valid",
           "take_snapshot"]
