"""An image scan with a progress bar per layer on stderr, shared by `prov pin` and
`prov snapshot --image` (a plain module, not a command, so both may import it)."""

from __future__ import annotations

from typing import Any


def scan_with_progress(
    source: str,
    quiet: bool = False,
    platform: str | None = None,
    verify_files: bool = False,
    all_files: bool = False,
) -> Any:
    """Scan an image with a progress bar per layer on stderr (ImageError is a ProvError:
    the CLI prints it once). `verify_files`: every file a package claims is re-hashed in the
    same pass (`prov pin`); `all_files`: files no package lists are recorded too."""
    from containers import scan_image
    from provenance.cli.progress import bars, live

    if not live(quiet):
        return scan_image(
            source, platform=platform, verify_files=verify_files, all_files=all_files
        )
    from rich.progress import BarColumn, DownloadColumn, TextColumn, TransferSpeedColumn

    shown = bars(TextColumn("layer {task.fields[layer]:>3}"), BarColumn(), DownloadColumn(),
                 TransferSpeedColumn())
    tasks: dict[int, Any] = {}
    with shown as bar:

        def progress(event: str, index: int, done: int, total: int | None) -> None:
            if event == "start":
                tasks[index] = bar.add_task("", layer=index, total=total)
            elif index in tasks:
                bar.update(tasks[index], completed=done)
                if event == "end":
                    bar.update(tasks[index], completed=total or done)

        return scan_image(
            source, progress=progress, platform=platform, verify_files=verify_files,
            all_files=all_files,
        )
