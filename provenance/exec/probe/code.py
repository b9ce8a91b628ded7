"""The code a run actually ran: its command line, its script, the files of every module
imported, checked against the RECORD of the distribution that installed them.

An in-place edit of an imported dependency (version and RECORD unchanged) shows as
`code.modules.<dist>.edited.<file>`; the hashes are cached by (device, inode, size,
mtime), so an unchanged environment costs stats, not reads. Files of the interpreter's
own standard library are not checked (the interpreter build is in the snapshot).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence

from provenance.exec.probe.argv import Places, command_identity
from provenance.exec.probe.installed import Installed, site_root
from provenance.exec.probe.processes import Process
from provenance.model.run_sections import CodeSection, ModuleFact, ScriptFact


def command_facts(command: Sequence[str] | None, places: Places,
                  key: bytes | None = None) -> CodeSection:
    """`code.command` (the line as typed, redacted, paths written by what they are: context)
    and its identity, `code.program` and `code.args.*` (argv.py). With the store's `key` a
    hidden word is a keyed digest: two runs whose hidden words differ still differ."""
    argv = list(command or [])
    if not argv:
        return {}
    from provenance.model.redact import redact_argv

    argv = redact_argv([str(a) for a in argv], key)
    program, rest = argv[0], argv[1:]
    typed = [os.path.basename(program), *(_as_place(a, places) for a in rest)]
    return {"command": typed, **command_identity(argv, places)}


def _as_place(arg: str, places: Places) -> str:
    """`--out=/x/run3` -> `--out=<output>` where /x/run3 is a declared output."""
    flag, eq, value = arg.partition("=") if arg.startswith("-") else ("", "", arg)
    name = places.name_of(value)
    return arg if name is None else flag + eq + name


def script_facts(main: Process | None, hasher) -> ScriptFact | None:
    if main is None or not main.script or not isinstance(main.script.get("path"), str):
        return None
    path = main.script["path"]
    _size, digest = hasher.hash(path)
    out: ScriptFact = {"path": path, "sha256": digest}
    try:
        st = os.stat(path)
        seen = [main.script.get(k) for k in ("size", "mtime_ns", "inode", "device")]
        if seen != [st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev]:
            out["changed_during_run"] = True
    except OSError:
        out["changed_during_run"] = True
    return out


def _matches_record(digest: str, record_hash: str) -> bool | None:
    """None when RECORD states no sha256 for the file (RECORD itself, .pyc)."""
    algo, _, value = record_hash.partition("=")
    if algo != "sha256" or not digest.startswith("sha256:"):
        return None
    raw = bytes.fromhex(digest[len("sha256:"):])
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode() == value


def module_facts(processes: list[Process], installed: Installed, hasher) -> CodeSection:
    """`code.modules.<dist>` for every distribution whose files a process imported, and
    `code.unrecorded.<file>` for imported files in site-packages that no RECORD lists."""
    files = sorted({f for p in processes for f in p.modules.values() if os.path.isfile(f)})
    dists: dict[str, ModuleFact] = {}
    unrecorded: dict[str, str] = {}
    for path in files:
        root = site_root(path)
        if root is None:
            continue
        owned = installed.wheel(path)
        if owned is None:
            unrecorded[os.path.relpath(path, root)] = hasher.hash(path)[1]
            continue
        entry = dists.setdefault(owned.dist, {"version": owned.version, "files_checked": 0})
        digest = hasher.hash(path)[1]
        same = _matches_record(digest, owned.record_hash)
        if same is None:
            continue
        entry["files_checked"] += 1
        if not same:
            entry.setdefault("edited", {})[owned.relpath] = digest
    out: CodeSection = {"modules": dict(sorted(dists.items()))}
    if unrecorded:
        out["unrecorded"] = dict(sorted(unrecorded.items()))
    return out
