"""The manifest model: a leaf package that imports nothing else of the project."""

from provenance.model.classes import REDACTED, LeafKind, classify
from provenance.model.errors import EXIT_CODES, ProvError
from provenance.model.keys import join_key, split_key
from provenance.model.manifest import (
    SCHEMA_VERSION,
    Manifest,
    ManifestError,
    canonical_json,
    flatten,
    sha256_digest,
)

__all__ = [
    "EXIT_CODES",
    "ProvError",
    "REDACTED",
    "SCHEMA_VERSION",
    "LeafKind",
    "Manifest",
    "ManifestError",
    "canonical_json",
    "classify",
    "flatten",
    "join_key",
    "sha256_digest",
    "split_key",
]
