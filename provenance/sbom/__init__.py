"""CycloneDX 1.6 SBOMs for environments, images and runs (`prov sbom`), and what an SBOM and
a bundle are about: their subjects (`Subject`, `PublishedResult`, `PublishedRun`, a run's
record read in one place, `published_run`) and the models a run read (`models_read`).

cyclonedx-python-lib is imported inside functions only, so `import provenance.sbom` is cheap.
"""

from provenance.sbom.build import BuiltBom, build_bom, prov_version, serial_for
from provenance.sbom.models_read import (
    ROLE_FILES,
    ROLE_MODEL,
    ROLE_TOKENIZER,
    Load,
    ModelFile,
    ModelRead,
    models_read,
)
from provenance.sbom.render import FORMATS, render, validate
from provenance.sbom.source import resolve_subject
from provenance.sbom.subjects import PublishedResult, PublishedRun, Subject, published_run

__all__ = [
    "FORMATS",
    "ROLE_FILES",
    "ROLE_MODEL",
    "ROLE_TOKENIZER",
    "BuiltBom",
    "Load",
    "ModelFile",
    "ModelRead",
    "PublishedResult",
    "PublishedRun",
    "Subject",
    "build_bom",
    "models_read",
    "prov_version",
    "published_run",
    "render",
    "resolve_subject",
    "serial_for",
    "validate",
]
