"""Resolve what the user asked an SBOM or audit for into a `Subject`."""

from __future__ import annotations

import sys
from pathlib import Path

from provenance.model import Manifest, ManifestError
from provenance.model.errors import ProvError
from provenance.model.text import escape_surrogates
from provenance.publish.inputs import Subject, load_run


def resolve_subject(
    image: str | None = None, run: str | None = None, manifest: Path | None = None,
    scan=None,
) -> Subject:
    """`scan`: how to read an image (the CLI passes its scan with a progress bar)."""
    options = (("--image", image), ("--run", run), ("--manifest", manifest))
    given = [name for name, v in options if v]
    if len(given) > 1:
        raise ProvError(f"give one of --image, --run, --manifest (got {', '.join(given)})")
    if manifest is not None:
        m = Manifest.read(manifest)
        # a file name that is not UTF-8 is named `\xNN` in the SBOM (model/text)
        label = escape_surrogates(Path(manifest).name)
        return Subject(m, label=label, kind="manifest", local=is_local(m))
    if run is not None:
        info, m = load_run(run)
        return Subject(m, label=f"run {info.run_id}", kind="run", run=info, local=is_local(m))
    if image is not None:
        return Subject(scan_image_manifest(image, scan), label=image, kind="image")
    return this_environment()


def this_environment() -> Subject:
    from provenance.snapshot import SnapshotOptions, take_snapshot

    m, _warnings = take_snapshot(SnapshotOptions())
    return Subject(m, label="environment", kind="environment", local=True)


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
