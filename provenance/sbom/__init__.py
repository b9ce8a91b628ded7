"""CycloneDX 1.6 SBOMs for environments, images and runs (`prov sbom`).

cyclonedx-python-lib is imported inside functions only, so `import provenance.sbom` is cheap.
"""

from provenance.sbom.build import BuiltBom, build_bom, serial_for
from provenance.sbom.render import FORMATS, render, validate
from provenance.sbom.source import resolve_subject

__all__ = [
    "FORMATS",
    "BuiltBom",
    "build_bom",
    "render",
    "resolve_subject",
    "serial_for",
    "validate",
]
