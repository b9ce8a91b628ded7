"""Turn what a user typed (a manifest path; later a store digest or run id) into a Manifest."""

from __future__ import annotations

from pathlib import Path

from provenance.errors import ProvError
from provenance.model import Manifest, ManifestError


def load_manifest(ref: str) -> Manifest:
    """A manifest from a file path. Store digests and run ids are resolved by the store."""
    path = Path(ref)
    if path.exists():
        try:
            return Manifest.read(path)
        except ManifestError as exc:
            raise ProvError(str(exc)) from None
    raise ProvError(f"{ref}: no such manifest file")
