"""What the user named as the source of an SBOM, an audit, a bundle or a lock, as a `Subject`.

The one place the source options are read (`prov sbom`, `audit`, `publish`, `lock`, `verify
--lock`): `--run` and `--manifest` go through the store's resolver
(`provenance.store.resolve`, which words every refusal), `--image` is scanned here, and no
option means this environment (or `--python`'s).
"""

from __future__ import annotations

import sys
from pathlib import Path

from provenance.model import Manifest, ManifestError
from provenance.model.errors import ProvError
from provenance.model.text import escape_surrogates
from provenance.sbom.subjects import Subject, published_run
from provenance.store import ResolvedKind, one_of, resolve, resolve_run


def resolve_subject(
    image: str | None = None, run: str | None = None, manifest: str | Path | None = None,
    scan=None, python: str | None = None, verify_files: bool = False,
) -> Subject:
    """`scan`: how to read an image (the CLI passes its scan with a progress bar);
    `python`, `verify_files`: how to snapshot an environment when no source is named."""
    one_of({"--image": image, "--run": run, "--manifest": manifest, "--python": python})
    if manifest is not None:
        return _manifest_subject(str(manifest))
    if run is not None:
        resolved = resolve_run(run)
        m = resolved.manifest
        return Subject(m, label=f"run {resolved.run.run_id}", kind="run",
                       run=published_run(resolved.run.record), local=is_local(m))
    if image is not None:
        return Subject(scan_image_manifest(image, scan), label=image, kind="image")
    return this_environment(python, verify_files)


def _manifest_subject(ref: str) -> Subject:
    """A manifest file, or one the store holds (a run's, or a stored snapshot's)."""
    resolved = resolve(ref, option="--manifest")
    # a file name that is not UTF-8 is named `\xNN` in the SBOM (model/text)
    label = escape_surrogates(Path(ref).name) if resolved.kind is ResolvedKind.FILE else ref
    m = resolved.manifest
    return Subject(m, label=label, kind="manifest", local=is_local(m))


def this_environment(python: str | None = None, verify_files: bool = False) -> Subject:
    from provenance.snapshot import SnapshotOptions, take_snapshot

    m, _warnings = take_snapshot(SnapshotOptions(python=python, verify_files=verify_files))
    return Subject(m, label="environment", kind="environment",
                   local=python is None or is_local(m))


def is_local(m: Manifest) -> bool:
    """The manifest was taken of this very interpreter (so its metadata can be read)."""
    return m.get("python.executable") == sys.executable and m.get("python.prefix") == sys.prefix


def scan_image_manifest(source: str, scanner=None) -> Manifest:
    from containers import scan_image

    scan = (scanner or scan_image)(source)
    try:
        return Manifest(facts=scan.facts())
    except ManifestError as exc:
        raise ProvError(f"--image {source}: {exc}") from None
