"""docs/reference/environment.md names every `PROV_*` variable the code reads, and only those.

Read by prov: every string literal `PROV_...` in the packages (a variable's name appears in
the code only where it is read or set), except prefixes tested with `startswith`. Read by the
tests and benchmarks: literals in a read of the environment (`os.environ.get("PROV_...")`,
`os.getenv`, `os.environ["PROV_..."]`); the names they only pass to a program they run are
that program's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "environment.md"
PACKAGES = ("provenance", "runners", "containers", "lockfiles")
NAME = re.compile(r"PROV_[A-Z0-9_]*[A-Z0-9]")


def _literals(tree: ast.AST) -> set[str]:
    prefixes = {id(a) for node in ast.walk(tree) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith"
                for a in node.args}
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and NAME.fullmatch(node.value)
            and id(node) not in prefixes}


def _environment_reads(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            func = ast.unparse(node.func)
            if ("environ" in func and func.endswith(".get")) or func.endswith("getenv"):
                found |= {a.value for a in node.args[:1] if isinstance(a, ast.Constant)}
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and "environ" in ast.unparse(node.value) \
                and isinstance(node.slice, ast.Constant):
            found.add(node.slice.value)
    return {n for n in found if isinstance(n, str) and NAME.fullmatch(n)}


def read_by_code() -> dict[str, str]:
    """Variable -> the first file that reads it."""
    out: dict[str, str] = {}
    for folder in (*PACKAGES, "tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            names = _literals(tree) if folder in PACKAGES else _environment_reads(tree)
            for name in sorted(names):
                out.setdefault(name, str(path.relative_to(ROOT)))
    return out


def documented() -> set[str]:
    return {m.group(1) for m in re.finditer(r"^\| `(PROV_[A-Z0-9_]+)`", PAGE.read_text(), re.M)}


def test_every_variable_the_code_reads_is_documented():
    missing = {n: where for n, where in read_by_code().items() if n not in documented()}
    assert not missing, f"read but not in {PAGE.relative_to(ROOT)}: {missing}"


def test_every_documented_variable_is_read():
    stale = documented() - set(read_by_code())
    assert not stale, f"{PAGE.relative_to(ROOT)} names variables nothing reads: {stale}"
