"""Workers run inside other interpreters (a vLLM venv) that see only the `runners` package and
the stdlib-only manifest model (runners/launch.py builds that path), so nothing a worker
imports, even lazily inside a function, may import any other part of `provenance`."""

from __future__ import annotations

import ast
from pathlib import Path

RUNNERS = Path(__file__).resolve().parents[2] / "runners"


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def module_path(name: str) -> Path | None:
    rel = Path(*name.split("."))
    for candidate in (RUNNERS.parent / rel.with_suffix(".py"), RUNNERS.parent / rel / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def test_worker_closure_imports_only_the_model_of_provenance():
    seen: set[str] = set()
    todo = ["runners.worker"]
    offenders = []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = module_path(name)
        if path is None:
            continue
        for imported in imported_modules(path):
            model = imported == "provenance.model" or imported.startswith("provenance.model.")
            if imported.startswith("provenance.") and not model:
                offenders.append(f"{name} imports {imported}")
            if imported.startswith("runners"):
                todo.append(imported)
                parts = imported.split(".")
                todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
    assert len(seen) > 3  # the walk really followed the worker's imports
    assert offenders == []
