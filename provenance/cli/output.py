"""Shared console helpers (rich is imported on first use, not at CLI start)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def no_color() -> bool:
    """NO_COLOR (https://no-color.org): set and non-empty means no ANSI styling at all."""
    return bool(os.environ.get("NO_COLOR"))


def is_terminal(stream=None) -> bool:
    stream = stream or sys.stdout
    return hasattr(stream, "isatty") and stream.isatty()


def console(stderr: bool = False):
    """A rich console; piped (not a terminal) it prints tables as plain tab-separated rows."""
    from rich.console import Console
    from rich.table import Table

    class _Console(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            if not self.is_terminal and len(objects) == 1 and isinstance(objects[0], Table):
                self.file.write(plain_table(objects[0]))
                return
            super().print(*objects, **kwargs)

    if no_color():  # no colour, no bold: rich alone would keep bold and dim
        return _Console(stderr=stderr, highlight=False, soft_wrap=True, color_system=None,
                        no_color=True)
    return _Console(stderr=stderr, highlight=False, soft_wrap=True)


def plain_table(table) -> str:
    """A rich Table as text: its title on a line, then tab-separated header and rows."""
    from rich.text import Text

    def plain(cell: Any) -> str:
        text = cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain
        return text.replace("\t", " ").replace("\n", " ")

    lines = [plain(table.title)] if table.title else []
    if table.show_header and any(str(c.header) for c in table.columns):
        lines.append("\t".join(plain(c.header) for c in table.columns))
    columns = [list(c.cells) for c in table.columns]
    lines += ["\t".join(plain(cell) for cell in row) for row in zip(*columns, strict=False)]
    return "".join(line + "\n" for line in lines)


def table(title: str, columns: list[str], rows: list[list[str]], styled=None,
          no_wrap: tuple[str, ...] = ()) -> None:
    """A rich table on a terminal; piped, tab-separated columns under a header line, never
    truncated, so `cut -f1` gets whole ids. `styled` maps a row to its rich-markup cells;
    the columns in `no_wrap` (ids) keep each cell on one line however narrow the terminal."""
    if not is_terminal():
        sys.stdout.write("\t".join(columns) + "\n")
        for row in rows:
            sys.stdout.write("\t".join(cell.replace("\t", " ") for cell in row) + "\n")
        return
    from rich.table import Table
    from rich.text import Text

    shown = [styled(row) if styled else row for row in rows]
    t = Table(title=title, title_justify="left")
    for i, col in enumerate(columns):
        keep = col in no_wrap
        width = max((Text.from_markup(r[i]).cell_len for r in shown), default=0) if keep else None
        t.add_column(col, overflow="fold", no_wrap=keep, min_width=width)
    for row in shown:
        t.add_row(*row)
    console().print(t)


def seconds_between(started: str | None, ended: str | None) -> float | None:
    """Seconds between two of the store's UTC timestamps, or None when either is missing."""
    import datetime as dt

    if not started or not ended:
        return None
    try:
        return (dt.datetime.fromisoformat(ended.replace("Z", "+00:00"))
                - dt.datetime.fromisoformat(started.replace("Z", "+00:00"))).total_seconds()
    except ValueError:
        return None


def duration(seconds: float | None) -> str:
    """The one duration format (`prov runs` and `prov show` print the same for a run)."""
    if seconds is None:
        return ""
    return f"{seconds:.2f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def state_text(state: str, exit_status: int | None, signal: str | None = None) -> str:
    """`failed (exit 7)`, `failed (SIGKILL)`, `complete`, `running`."""
    from provenance.store import RunState

    if state == RunState.FAILED and signal:
        return f"failed ({signal})"
    if state == RunState.FAILED and exit_status not in (None, 0):
        return f"failed (exit {exit_status})"
    return str(state)


def print_json(data: Any) -> None:
    from provenance.model.text import json_text

    sys.stdout.write(json_text(data, indent=2, sort_keys=True) + "\n")


def short(value: Any, width: int = 60) -> str:
    """Shortened for a terminal; piped output is never truncated (ids must stay copyable)."""
    text = value if isinstance(value, str) else json.dumps(value)
    if len(text) <= width or not is_terminal():
        return text
    return text[: width - 1] + "…"


def plain_rows(rows: list[tuple[str, str]], stream=None) -> None:
    """Aligned `label  text` lines; bold labels on a terminal. Plain print: rich costs ~25 ms."""
    stream = stream or sys.stdout
    bold = is_terminal(stream) and not no_color()
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
            first = i == 0 or not con.is_terminal  # piped: every row names its section
            table.add_row(section if first else "", c.key, marks[c.change], a, b)
    con.print(table)
