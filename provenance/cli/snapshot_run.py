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


def summary_lines(facts: dict[str, Any], digest: str) -> list[tuple[str, str]]:
    """(label, text) rows for the human summary."""
    rows: list[tuple[str, str]] = []
    py = facts.get("python")
    if isinstance(py, dict):
        rows.append(
            (
                "python",
                f"{py.get('implementation')} {py.get('version')}  "
                f"{len(py.get('packages', {}))} packages  ({py.get('executable')})",
            )
        )
    else:
        rows.append(("python", str(py)))
    os_ = facts.get("os")
    if isinstance(os_, dict):
        rel = os_.get("release")
        name = rel.get("pretty_name", "?") if isinstance(rel, dict) else str(rel)
        kinds = _database_counts(os_)
        libc = os_.get("libc", {})
        rows.append(
            (
                "os",
                f"{name}  {libc.get('name', '')} {libc.get('version', '')}  "
                + ("  ".join(kinds) or "no package database"),
            )
        )
    cpu = facts.get("cpu")
    if isinstance(cpu, dict):
        rows.append(
            (
                "cpu",
                f"{cpu.get('model')}  {cpu.get('cores_available')} cores  "
                f"{len(cpu.get('isa_flags', []))} ISA flags",
            )
        )
    gpu = facts.get("gpu")
    if isinstance(gpu, dict):
        devices = gpu.get("devices", {})
        if devices:
            names = sorted({str(d.get("name")) for d in devices.values()})
            rows.append(
                (
                    "gpu",
                    f"{gpu.get('count')} x {', '.join(names)}  driver {gpu.get('driver')}  "
                    f"CUDA {gpu.get('cuda_driver')}",
                )
            )
        else:
            rows.append(("gpu", f"none ({gpu.get('driver')})"))
    else:
        rows.append(("gpu", str(gpu)))
    torch = facts.get("torch")
    if isinstance(torch, dict) and torch.get("version"):
        flags = torch.get("flags") if isinstance(torch.get("flags"), dict) else {}
        rows.append(
            (
                "torch",
                f"{torch.get('version')}  CUDA {torch.get('cuda_runtime')}  "
                f"cuDNN {torch.get('cudnn')}  CPU {flags.get('cpu_capability')}",
            )
        )
    eng = facts.get("engines")
    if isinstance(eng, dict) and eng:
        rows.append(
            ("engines", "  ".join(f"{k} {v.get('version')}" for k, v in sorted(eng.items())))
        )
    env = facts.get("env")
    if isinstance(env, dict):
        from provenance.model.classes import REDACTED

        redacted = sum(1 for v in env.values() if v == REDACTED)
        rows.append(("env", f"{len(env)} relevant variables ({redacted} redacted)"))
    rows.append(("digest", digest))
    return rows


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
