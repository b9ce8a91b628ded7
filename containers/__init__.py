"""Container images: references, digests, daemonless readers, layer walking, catalogers.

Public API (small, like sigstore-python's): `scan_image(source, verify_files=False) ->
ImageScan`, `ImageScan.facts()` (manifest sections `image`, `os`, `python`, `cuda`; CUDA
libraries with the package that ships each file), `ImageScan.file_checks()` (with
`verify_files`: every package's files re-hashed in the same pass, see `containers.verify`),
`ImageError`, `SOURCES_HELP`, and the one registry client `Registry` with its
`RegistryError` (pull and push: `prov publish --to registry:` uses it). Everything else is
private. Imports are lazy so that the stdlib-only catalogers (used by the host collectors,
even inside foreign Python 3.8 interpreters) can be imported without pulling in the scanner.

May import only the manifest model (`provenance.model`, redaction included).
"""

from __future__ import annotations

__all__ = ["KINDS", "SOURCES_HELP", "ImageError", "ImageScan", "Registry", "RegistryError",
           "scan_image"]


def __getattr__(name: str) -> object:  # no `typing` import: foreign interpreters load this
    if name == "scan_image":
        from containers.scan import scan_image

        return scan_image
    if name == "ImageScan":
        from containers.scan import ImageScan

        return ImageScan
    if name == "ImageError":
        from containers.errors import ImageError

        return ImageError
    if name in ("Registry", "RegistryError"):
        from containers import registry

        return getattr(registry, name)
    if name == "KINDS":
        from containers.verify import KINDS

        return KINDS
    if name == "SOURCES_HELP":
        from containers.reference import SOURCES_HELP

        return SOURCES_HELP
    raise AttributeError(name)
