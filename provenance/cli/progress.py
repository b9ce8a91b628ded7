"""The one progress display of prov's CLI: rich progress bars on stderr, drawn only when stderr
is a terminal (piped or redirected, stderr gets nothing from here) and cleared when the work
ends. Image scans draw a bar per layer (`bars`); counted work (`prov lock`'s hash look-ups,
`prov snapshot --verify-files` re-hashing files) draws one line through `counter`."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from provenance.cli.output import is_terminal, no_color

Step = Callable[..., None]


def live(quiet: bool = False) -> bool:
    """Whether progress is drawn: stderr is a terminal and the caller is not `quiet`."""
    return not quiet and is_terminal(sys.stderr)


def bars(*columns: Any, quiet: bool = False) -> Any:
    """A transient rich `Progress` on stderr with `columns`, or None when not `live`: the
    caller then does its work without one."""
    if not live(quiet):
        return None
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True, no_color=no_color())
    return Progress(*columns, console=console, transient=True)


@contextmanager
def counter(label: str, total: int | None = None, quiet: bool = False) -> Iterator[Step]:
    """`step(what="", done=None, total=None)`: one more item done (or `done` of `total`,
    for work counted elsewhere), drawn as `label done/total what`; a no-op off a terminal.
    Thread-safe (look-ups and hashing run in thread pools); redrawn at most 10 times a
    second, and always for the first item."""
    if not live(quiet):  # rich is not even imported
        yield lambda what="", done=None, total=None: None
        return
    from rich.progress import TextColumn

    shown = bars(TextColumn(label), TextColumn("{task.completed:.0f}{task.fields[of]}"),
                 TextColumn("{task.fields[what]}"))
    lock, last = threading.Lock(), [0.0]
    with shown:
        task = shown.add_task("", total=total, of=f"/{total}" if total else "", what="")

        def step(what: str = "", done: int | None = None, total: int | None = None) -> None:
            with lock:
                now = time.monotonic()
                redraw = now - last[0] >= 0.1
                if redraw:
                    last[0] = now
                extra = {} if total is None else {"total": total, "of": f"/{total}"}
                if done is None:
                    shown.update(task, advance=1, what=what[:60], **extra)
                else:
                    shown.update(task, completed=done, what=what[:60], **extra)
                if redraw:
                    shown.refresh()

        yield step
