"""What a layer's media type promises, and what prov does when the bytes disagree (issue #30).

The OCI image spec (manifest.md, `layers[].mediaType`) lists the layer types every
implementation MUST support (tar, tar+gzip and their deprecated non-distributable forms;
media-types.md adds tar+zstd) and says an unknown type MUST be ignored, while also requiring
the final filesystem to be the result of applying every layer. An unpacker cannot do both:
runtimes and umoci refuse a layer type they do not know (image-spec PR #816), and only
transfer tools (skopeo) pass such layers through. prov computes the filesystem, so:

- an unknown layer media type is refused (one line, exit 2): reading its bytes as a tar
  would be a guess, and skipping it would describe a filesystem the image does not have;
- a known type whose bytes are compressed otherwise (a `+gzip` layer holding zstd, a plain
  `.tar` holding gzip) is read by its bytes, as containerd and Docker do (both sniff the
  magic bytes), and warned about: the warning is recorded in the scan, its lock and its
  manifest.
"""

from __future__ import annotations

from containers.errors import ImageError

_OCI = "application/vnd.oci.image.layer."
_DOCKER = "application/vnd.docker.image.rootfs."
# media type -> the compression its bytes must have ("none": a plain tar)
LAYER_TYPES: dict[str, str] = {
    _OCI + "v1.tar": "none",
    _OCI + "v1.tar+gzip": "gzip",
    _OCI + "v1.tar+zstd": "zstd",
    _OCI + "nondistributable.v1.tar": "none",
    _OCI + "nondistributable.v1.tar+gzip": "gzip",
    _OCI + "nondistributable.v1.tar+zstd": "zstd",
    _DOCKER + "diff.tar": "none",  # what a docker-archive's manifest.json implies
    _DOCKER + "diff.tar.gzip": "gzip",
    _DOCKER + "foreign.diff.tar.gzip": "gzip",
}


def check_layer_type(media_type: str, what: str) -> None:
    """Refuse a layer whose media type prov (like a runtime) cannot unpack."""
    if media_type not in LAYER_TYPES:
        shown = repr(media_type[:120]) if media_type else "none"
        raise ImageError(f"{what}: layer media type {shown} is not a filesystem layer prov "
                         "can unpack (OCI tar, tar+gzip, tar+zstd or Docker's rootfs diff); "
                         "refused")


def compression_note(media_type: str, sniffed: str, what: str) -> str | None:
    """A warning when the bytes' compression is not the one the media type names."""
    expected = LAYER_TYPES.get(media_type)
    if expected is None or expected == sniffed:
        return None
    return (f"{what}: labelled {media_type} ({expected}) but its bytes are {sniffed}; read "
            f"as {sniffed}, as containerd and Docker do")
