"""The rooms' import rules (DESIGN.md, "Layout") as one table, checked over every module.

Every `import` and `from ... import` is read with `ast`, at module level and inside functions,
`try` blocks and `if TYPE_CHECKING:` alike: an arrow is an arrow wherever it is written.
A forbidden arrow fails the test with `file:line: from -> to` for each offender.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("provenance", "containers", "lockfiles", "runners")


@dataclass(frozen=True)
class Rule:
    """Modules under one of `rooms` may import their own room, anything under `deep` (a
    room's modules, submodules included) and exactly the modules in `public` (a room's
    public API: its package `__init__`, nothing below it)."""

    rooms: tuple[str, ...]
    deep: tuple[str, ...] = ()
    public: tuple[str, ...] = ()
    everything: bool = False


MODEL = "provenance.model"
# The snapshot and the collectors it runs are one room (one row of the table).
SNAPSHOT = ("provenance.snapshot", "provenance.collectors")
# Inside the collectors' room, the stdlib-only readers the snapshot and the probe share.
STANDALONE = "provenance.collectors.standalone"
# Packages whose path `prov exec` extends with another directory at run time: the probe
# loads the standalone readers as its own submodules (`from . import torch_state`), so such
# an import is an arrow to the reader (the probe's `READERS_VAR`, exec/probe/host.py).
EXTENDED_PATHS = {"provenance.exec.probe.inproc._prov_probe": STANDALONE}
# The rooms built on records: each is a room of its own, and reaches another only through
# its public API.
ON_RECORDS = ("provenance.sbom", "provenance.audit", "provenance.publish", "provenance.report",
              "provenance.selftest")
# A room's public API is its package: the names its `__init__.py` lists in `__all__`.
PUBLIC_APIS = ("containers", "lockfiles", "runners.api", "provenance.snapshot",
               "provenance.exec", *ON_RECORDS)

# THE TABLE (docs/development.md, "Rooms and import rules"), one rule per room. The most
# specific room (longest prefix) decides; a module that matches no room is an error (every
# module lives in a room).
RULES: tuple[Rule, ...] = (
    Rule((MODEL,)),
    # readers run inside another interpreter without prov (the snapshot's subprocess, the
    # in-process probe): a leaf; stdlib only and Python 3.8 syntax are checked by
    # tests/provenance/collectors/standalone/test_torch_state.py
    Rule((STANDALONE,)),
    Rule(("containers",), deep=(MODEL,)),
    Rule(("lockfiles",), deep=(MODEL,)),
    Rule(("provenance.store",), deep=(MODEL,)),
    Rule(SNAPSHOT, deep=(MODEL, *SNAPSHOT), public=("containers", "containers.catalogers")),
    Rule(("provenance.exec",), deep=(MODEL, *SNAPSHOT, "provenance.store")),
    Rule(("provenance.gate",), deep=(MODEL, "provenance.store")),
    *(Rule((room,), deep=(MODEL, "provenance.store", "provenance.gate"), public=PUBLIC_APIS)
      for room in ON_RECORDS),
    # the faces: every room, through its public API
    Rule(("provenance.cli",), deep=(MODEL,),
         public=(*PUBLIC_APIS, "provenance.store", "provenance.gate", "containers.catalogers")),
    # `python -m provenance`: the CLI's entry point and nothing else
    Rule(("provenance.__main__",), public=("provenance.cli",)),
    # `prov serve`'s front: a program run under the supervisor (its recorder is the probe's)
    Rule(("provenance.serve",), deep=(MODEL,)),
    Rule(("provenance",)),  # the package itself: `import provenance` stays cheap
    Rule(("runners",), deep=(MODEL,),
         public=("provenance.store", "provenance.gate", "provenance.exec")),
)

# Workers run inside engine environments (a vLLM venv) that see only `runners` and the
# stdlib-only manifest model (runners/launch.py, `_runners_only_path`): everything they
# import, transitively, stays inside these.
# (the selftest's workload is one too: a program run under `prov exec`, in the selftest's
# alternative environment as well, driving the runners' engines)
WORKERS = ("runners.worker", "runners.workstream.worker", "runners.selftest_workload")
WORKER_WORLD = ("runners", "provenance.model")

# `provenance/__init__.py` holds only `__version__`: anyone may read it.
OPEN_TO_ALL = ("provenance",)

# Who may import `runners`: only the CLI, and only through its one door.
RUNNERS_DOOR = "runners.api"

# Arrows that core's moves (#16 part A: the supervisor into provenance/exec/, the gate into
# provenance/gate/, one resolver, runners/api.py the only door) remove, as (source prefix,
# target prefix). The lead deletes this list at merge; an entry that no longer matches any
# arrow fails the test so the list cannot go stale.
PENDING_CORE: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Arrow:
    path: Path
    line: int
    source: str
    target: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.source} -> {self.target}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            found[module_name(path)] = path
    return found


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, name] if name else base)


def imports_of(path: Path, source: str, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, imported project module) for every import statement in the file."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(source, path.name == "__init__.py", node.level,
                                         node.module)
            # `from pkg import sub` is an arrow to the module pkg.sub when there is one
            subs = [_submodule(base, a.name, modules) for a in node.names]
            names = [a.name for a, sub in zip(node.names, subs, strict=True) if sub is None]
            subs = [sub for sub in subs if sub is not None]
            found += [(node.lineno, sub) for sub in subs]
            if names or not subs:
                found.append((node.lineno, base))
    return [(line, target) for line, target in found
            if target.split(".")[0] in PACKAGES]


def _submodule(base: str, name: str, modules: dict[str, Path]) -> str | None:
    """`pkg.name` when `from pkg import name` imports a module: not a name `pkg` exports in
    its `__all__` (a room's public API), and a module of that name exists."""
    if name in exported(base, modules):
        return None
    for package in (base, EXTENDED_PATHS.get(base)):
        if package is not None and f"{package}.{name}" in modules:
            return f"{package}.{name}"
    return None


def exported(package: str, modules: dict[str, Path]) -> set[str]:
    """The names a package's `__init__.py` lists in `__all__`."""
    path = modules.get(package)
    if path is None or path.name != "__init__.py":
        return set()
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return set(ast.literal_eval(node.value))
            except ValueError:  # computed (`sorted(_HOME)`): the package says
                return set(importlib.import_module(package).__all__)
    return set()


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def rule_for(module: str) -> tuple[str, Rule] | None:
    best: tuple[str, Rule] | None = None
    for rule in RULES:
        for room in rule.rooms:
            if _under(module, room) and (best is None or len(room) > len(best[0])):
                best = (room, rule)
    return best


def allowed(source: str, target: str) -> bool:
    found = rule_for(source)
    assert found is not None, f"{source} lives in no room of the table"
    _, rule = found
    if target in OPEN_TO_ALL:
        return True
    if _under(target, "runners") and not _under(source, "runners"):
        return _under(target, RUNNERS_DOOR) and (rule.everything or RUNNERS_DOOR in rule.public)
    if rule.everything:
        return True
    own = rule_for(target)
    if own is not None and own[1] is rule:
        return True
    if any(_under(target, deep) for deep in rule.deep):
        return True
    return target in rule.public


def all_arrows() -> tuple[dict[str, Path], list[Arrow]]:
    modules = all_modules()
    arrows = [Arrow(path, line, name, target)
              for name, path in modules.items()
              for line, target in imports_of(path, name, modules)]
    return modules, arrows


def test_every_arrow_is_allowed_by_the_table() -> None:
    _, arrows = all_arrows()
    bad = [a for a in arrows if not allowed(a.source, a.target)]
    offenders = [a for a in bad if _pending(a) is None]
    assert not offenders, "forbidden imports:\n" + "\n".join(map(str, offenders))
    stale = set(PENDING_CORE) - {_pending(a) for a in bad}
    assert not stale, f"PENDING_CORE lists arrows that no longer occur: {sorted(stale)}"


def _pending(arrow: Arrow) -> tuple[str, str] | None:
    for source, target in PENDING_CORE:
        if _under(arrow.source, source) and _under(arrow.target, target):
            return (source, target)
    return None


def _closure(start: str, arrows: list[Arrow]) -> dict[str, Arrow | None]:
    """Every module `start` imports, transitively, with the arrow that first reached it."""
    by_source: dict[str, list[Arrow]] = {}
    for arrow in arrows:
        by_source.setdefault(arrow.source, []).append(arrow)
    reached: dict[str, Arrow | None] = {start: None}
    todo = [start]
    while todo:
        for arrow in by_source.get(todo.pop(), []):
            if arrow.target not in reached:
                reached[arrow.target] = arrow
                todo.append(arrow.target)
    return reached


def _in_worker_world(module: str) -> bool:
    return module in OPEN_TO_ALL or any(_under(module, w) for w in WORKER_WORLD)


def test_workers_import_only_runners_and_the_model() -> None:
    modules, arrows = all_arrows()
    bad = []
    for worker in WORKERS:
        assert worker in modules, f"worker module {worker} is gone; update WORKERS"
        for target, arrow in _closure(worker, arrows).items():
            if arrow is not None and _in_worker_world(arrow.source) \
                    and not _in_worker_world(target):  # the arrow that leaves the world
                bad.append(f"{arrow} (reached from {worker})")
    assert not bad, f"workers import outside {WORKER_WORLD}:\n" + "\n".join(sorted(set(bad)))


def test_the_probe_and_the_snapshot_import_the_one_torch_reader() -> None:
    """Both sides of the shared reader are arrows the table sees (and allows)."""
    _, arrows = all_arrows()
    reader = f"{STANDALONE}.torch_state"
    sources = {a.source for a in arrows if a.target == reader}
    assert {"provenance.collectors.torch_probe",
            "provenance.exec.probe.inproc._prov_probe"} <= sources, sources


def test_every_module_lives_in_a_room() -> None:
    homeless = [name for name in all_modules() if rule_for(name) is None]
    assert not homeless, homeless


def test_the_checker_reads_nested_and_relative_imports(tmp_path: Path) -> None:
    """The checker itself: a function-level import, a relative one and `from pkg import sub`
    are all read, and the table says no to the arrows the rules forbid."""
    module = tmp_path / "read.py"
    module.write_text("from .errors import LockError\n"
                      "def f():\n    import containers.scan\n"
                      "    from provenance import model\n")
    modules = {"provenance.model": module}
    found = sorted(t for _, t in imports_of(module, "lockfiles.read", modules))
    assert found == ["containers.scan", "lockfiles.errors", "provenance.model"]
    assert not allowed("lockfiles.read", "containers.scan")
    assert allowed("lockfiles.read", "provenance.model.errors")
    assert not allowed("runners.repeat", "containers")
    assert not allowed("runners.repeat", "provenance.cli.output")
    assert not allowed("provenance.model.manifest", "provenance.store")
    assert not allowed("provenance.collectors.os_info", "containers.catalogers.dpkg")
    assert not allowed("provenance.cli.sbom_cmd", "containers.scan")
    assert allowed("provenance.cli.sbom_cmd", "containers")
    assert allowed("provenance.cli.run_cmd", "runners.api")
    assert not allowed("provenance.cli.sbom_cmd", "runners.repeat")
    # the rooms built on records are rooms of their own: public APIs only between them
    assert not allowed("provenance.sbom.source", "provenance.publish.bundle")
    assert allowed("provenance.publish.bundle", "provenance.sbom")
    assert allowed("provenance.publish.bundle", "provenance.gate.compare")


def test_a_name_a_package_exports_is_an_arrow_to_the_package(tmp_path: Path) -> None:
    """`from pkg import render` is an arrow to `pkg` when `render` is in pkg's `__all__`,
    even where a module `pkg.render` exists; otherwise to the module."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text('__all__ = ["render"]\n')
    module = tmp_path / "use.py"
    module.write_text("from provenance.sbom import render, build\n")
    modules = {"provenance.sbom": package / "__init__.py",
               "provenance.sbom.render": package / "render.py",
               "provenance.sbom.build": package / "build.py"}
    found = sorted(t for _, t in imports_of(module, "provenance.publish.use", modules))
    assert found == ["provenance.sbom", "provenance.sbom.build"]


def test_every_room_of_provenance_has_its_own_rule_and_row() -> None:
    """Each package under provenance/ is a room the table names itself (the collectors and
    the snapshot share one, as the docs' table says), and the docs' table lists it."""
    docs = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    rooms = sorted(p.parent.name for p in (ROOT / "provenance").glob("*/__init__.py"))
    named = {room for rule in RULES for room in rule.rooms}
    for room in rooms:
        assert f"provenance.{room}" in named, f"provenance/{room}/ has no rule of its own"
        assert f"`provenance/{room}/`" in docs, f"docs/development.md has no row for {room}"


# Command modules that import another command's private names (none left: core's one
# `compare_runs`, provenance/cli/gating.py and runners/api.py removed them).
PENDING_CORE_PRIVATE: set[tuple[str, str]] = set()


def test_no_command_imports_another_commands_private_names() -> None:
    """A command module may use another's public helpers, never its `_private` ones."""
    bad, seen = [], set()
    for name, path in all_modules().items():
        if not _under(name, "provenance.cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.ImportFrom) and node.module
                    and _under(node.module, "provenance.cli") and node.module != name):
                continue
            private = [a.name for a in node.names if a.name.startswith("_")]
            if private and (name, node.module) in PENDING_CORE_PRIVATE:
                seen.add((name, node.module))
            elif private:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name} -> "
                           f"{node.module}.{{{', '.join(private)}}}")
    assert not bad, "private names imported across commands:\n" + "\n".join(bad)
    stale = PENDING_CORE_PRIVATE - seen
    assert not stale, f"PENDING_CORE_PRIVATE lists imports that no longer occur: {stale}"
