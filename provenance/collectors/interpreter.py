"""The interpreter a user named with `--python`: checked before it runs, and refused when the
collector could not inspect it (bad input, exit 2: nothing is stored or written)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError
from provenance.model.facts import reason_of


def interpreter_path(python: str) -> str:
    """`--python` must name an executable file (a bare name is looked up on PATH, as the
    shell would); anything else is bad input (exit 2)."""
    if os.sep not in python:
        python = shutil.which(python) or python
    path = Path(python)
    if not path.exists():
        raise ProvError(f"--python {python}: no such file")
    if path.is_dir():
        raise ProvError(f"--python {python}: a directory, not an interpreter")
    if not os.access(path, os.X_OK):
        raise ProvError(f"--python {python}: not executable")
    return python


def require_python_section(python: str, facts: dict[str, Any]) -> None:
    """An interpreter the user named that could not be inspected is bad input (a manifest
    whose python section is `unavailable` would otherwise be stored)."""
    section = facts.get("python")
    if isinstance(section, dict):
        return
    raise ProvError(f"--python {python}: not a Python interpreter prov can inspect "
                    f"({reason_of(section)})")
