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


def change_table(title: str, changes, con) -> None:
    """Grouped by section; keys are never truncated (folded on a narrow terminal)."""
    from itertools import groupby

    from rich.table import Table

    from provenance.cli.output import short

    table = Table(title=title, title_justify="left")
    table.add_column("section", style="bold", no_wrap=True)
    longest = max((len(c.key) for c in changes), default=10)
    table.add_column("key", overflow="fold", min_width=min(longest, 70))
    table.add_column("", justify="center", no_wrap=True)
    table.add_column("A", overflow="fold")
    table.add_column("B", overflow="fold")
    marks = {
        "added": "[green]+[/green]",
        "removed": "[red]-[/red]",
        "changed": "[yellow]~[/yellow]",
    }
    for section, group in groupby(changes, key=lambda c: c.section):
        for i, c in enumerate(group):
            a = "(absent)" if c.change == "added" else short(c.a, 40)
            b = "(absent)" if c.change == "removed" else short(c.b, 40)
            table.add_row(section if i == 0 else "", c.key, marks[c.change], a, b)
    con.print(table)
