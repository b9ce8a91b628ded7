"""`prov snapshot` itself: what the typer command in `snapshot_cmd` calls."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError


def _database_counts(os_facts: dict[str, Any]) -> list[str]:
    """`734 dpkg`, `15 apk`: the OS package databases a host or an image holds."""
    return [f"{len(os_facts[k])} {k}" for k in ("dpkg", "apk") if isinstance(os_facts.get(k), dict)]


Row = tuple[str, str]


def _python_row(py: Any) -> Row:
    if not isinstance(py, dict):
        return ("python", str(py))
    return ("python", f"{py.get('implementation')} {py.get('version')}  "
                      f"{len(py.get('packages', {}))} packages  ({py.get('executable')})")


def _os_row(os_: Any) -> Row | None:
    if not isinstance(os_, dict):
        return None
    rel = os_.get("release")
    name = rel.get("pretty_name", "?") if isinstance(rel, dict) else str(rel)
    libc = os_.get("libc", {})
    return ("os", f"{name}  {libc.get('name', '')} {libc.get('version', '')}  "
                  + ("  ".join(_database_counts(os_)) or "no package database"))


def _cpu_row(cpu: Any) -> Row | None:
    if not isinstance(cpu, dict):
        return None
    return ("cpu", f"{cpu.get('model')}  {cpu.get('cores_available')} cores  "
                   f"{len(cpu.get('isa_flags', []))} ISA flags")


def _gpu_row(gpu: Any) -> Row:
    if not isinstance(gpu, dict):
        return ("gpu", str(gpu))
    devices = gpu.get("devices", {})
    if not devices:
        return ("gpu", f"none ({gpu.get('driver')})")
    names = sorted({str(d.get("name")) for d in devices.values()})
    return ("gpu", f"{gpu.get('count')} x {', '.join(names)}  driver {gpu.get('driver')}  "
                   f"CUDA {gpu.get('cuda_driver')}")


def _torch_row(torch: Any) -> Row | None:
    if not (isinstance(torch, dict) and torch.get("version")):
        return None
    flags = torch.get("flags") if isinstance(torch.get("flags"), dict) else {}
    return ("torch", f"{torch.get('version')}  CUDA {torch.get('cuda_runtime')}  "
                     f"cuDNN {torch.get('cudnn')}  CPU {flags.get('cpu_capability')}")


def _engines_row(eng: Any) -> Row | None:
    if not (isinstance(eng, dict) and eng):
        return None
    return ("engines", "  ".join(f"{k} {v.get('version')}" for k, v in sorted(eng.items())))


def _env_row(env: Any) -> Row | None:
    if not isinstance(env, dict):
        return None
    from provenance.model.classes import REDACTED

    redacted = sum(1 for v in env.values() if v == REDACTED)
    return ("env", f"{len(env)} relevant variables ({redacted} redacted)")


# section of the facts -> its summary row (None: no row), in the order they are printed
_ROWS = (("python", _python_row), ("os", _os_row), ("cpu", _cpu_row), ("gpu", _gpu_row),
         ("torch", _torch_row), ("engines", _engines_row), ("env", _env_row))


def summary_lines(facts: dict[str, Any], digest: str) -> list[Row]:
    """(label, text) rows for the human summary."""
    rows = [row for key, make in _ROWS if (row := make(facts.get(key))) is not None]
    return [*rows, ("digest", digest)]


def run_snapshot(
    out: Path | None,
    fmt: str,
    as_json: bool,
    python: str | None,
    verify_files: bool,
    image: str | None,
) -> None:
    """`prov snapshot`: collect, store (or write --out), print the summary."""
    if fmt not in ("toml", "json"):
        raise ProvError(f"--format must be toml or json, not {fmt!r}")
    if out is not None and out.parent and not out.parent.exists():
        raise ProvError(f"{out.parent}: directory does not exist")
    if image is not None:
        _snapshot_image(image, out, fmt, as_json)
        return
    if python is not None:
        from provenance.snapshot import interpreter_path, require_python_section

        python = interpreter_path(python)
    from provenance.snapshot import SnapshotOptions, take_snapshot

    with _rehash_progress(verify_files, as_json) as progress:
        options = SnapshotOptions(python=python, verify_files=verify_files, progress=progress)
        manifest, warnings = take_snapshot(options)
    if python is not None:
        require_python_section(python, manifest.facts)
    stored = None
    digest = manifest.digest()
    text = manifest.to_json() if as_json or out is None else None
    if out is not None:
        manifest.write(out, fmt)
    else:  # kept in the run store, so `prov diff`/`prov compare` can name it by digest
        from provenance.store import open_store

        store = open_store()
        try:
            stored = store.put_manifest(manifest, text=text, digest=digest)
        finally:
            store.close()  # the index is checkpointed and closed here, not at exit
    if as_json:
        sys.stdout.write(text)
    from provenance.cli.output import plain_rows

    rows = summary_lines(manifest.facts, digest)
    rows += [("warning", w) for w in warnings]
    if out is not None:
        rows.append(("written", str(out)))
    if stored is not None:
        rows.append(("stored", stored))
    plain_rows(rows, sys.stderr if as_json else sys.stdout)


def rehash_progress_wanted(verify_files: bool, as_json: bool) -> bool:
    """--verify-files draws progress when stderr is a terminal; with --json it is quiet, as
    an image scan of this command is."""
    if not verify_files:
        return False
    from provenance.cli.progress import live

    return live(quiet=as_json)


@contextmanager
def _rehash_progress(verify_files: bool, as_json: bool) -> Iterator[Any]:
    """`progress(done, total)` for the snapshot's re-hashing, or None when none is drawn."""
    if not rehash_progress_wanted(verify_files, as_json):
        yield None
        return
    from provenance.cli.progress import counter

    with counter("re-hashing installed files:") as step:
        yield lambda done, total: step(done=done, total=total)


def _snapshot_image(source: str, out: Path | None, fmt: str, as_json: bool) -> None:
    """`--image`: the image's manifest (image, os, python, cuda sections)."""
    from provenance.cli.image_scan import scan_with_progress
    from provenance.cli.output import plain_rows
    from provenance.model import Manifest

    scan = scan_with_progress(source, quiet=as_json)
    manifest = Manifest(scan.facts())
    if out is not None:
        manifest.write(out, fmt)
    if as_json:
        sys.stdout.write(manifest.to_json())
    img = manifest.facts["image"]
    rel = scan.os.get("release")
    name = rel.get("pretty_name", "?") if isinstance(rel, dict) else str(rel)
    rows = [
        ("image", f"{img.get('reference') or source}  {img['platform']}"),
        ("config", img["config_digest"]),
        ("layers", str(len(img["layers"]))),
        ("os", f"{name}  " + ("  ".join(_database_counts(scan.os)) or "no package database")),
        ("python", f"{len(scan.python['packages'])} packages"),
        ("digest", manifest.digest()),
    ]
    rows += [("warning", w) for w in scan.warnings]
    if out is not None:
        rows.append(("written", str(out)))
    plain_rows(rows, sys.stderr if as_json else sys.stdout)
