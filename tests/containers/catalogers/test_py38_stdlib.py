"""The catalogers the host collector runs inside foreign interpreters stay stdlib-only and
parse as Python 3.8 (`prov snapshot --python /path/to/python3.8`)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FOREIGN = [
    "containers/__init__.py",
    "containers/catalogers/__init__.py",
    "containers/catalogers/base.py",
    "containers/catalogers/python_dist.py",
    "containers/catalogers/dpkg.py",
    "containers/catalogers/os_release.py",
    "provenance/collectors/python_env.py",
    "provenance/collectors/stamped.py",  # stamps are taken in the inspected interpreter
]
ALLOWED = {"containers", "provenance"}  # the project's own stdlib-only modules


@pytest.mark.parametrize("rel", FOREIGN)
def test_parses_as_python38_and_imports_stdlib_only(rel: str) -> None:
    source = (ROOT / rel).read_text()
    tree = ast.parse(source, feature_version=(3, 8))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top in ALLOWED, f"{rel}: imports {name}"
        # annotations are strings (from __future__), so 3.9+ generics in them are fine,
        # but not in runtime expressions such as isinstance() or subscripted builtins
    assert "from __future__ import annotations" in source or rel.endswith("__init__.py")
