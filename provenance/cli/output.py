"""Shared console helpers (rich is imported on first use, not at CLI start)."""

from __future__ import annotations

import json
import sys
from typing import Any


def console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def plain_rows(rows: list[tuple[str, str]], stream=None) -> None:
    """Aligned `label  text` lines; bold labels on a terminal. Plain print: rich costs ~25 ms."""
    stream = stream or sys.stdout
    bold = stream.isatty()
    for label, text in rows:
        head = f"{label:>8}"
        stream.write((f"\033[1m{head}\033[0m" if bold else head) + f"  {text}\n")
