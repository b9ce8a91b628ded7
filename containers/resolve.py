"""From an index or manifest document to the config and layer descriptors of one image.

Untrusted JSON is validated here, at the edge: every digest is checked for shape, every
document for the fields it must have, every blob is re-hashed against its digest, and an
index that (directly or through others) points back to itself is refused.
"""

from __future__ import annotations

import platform as _platform
from dataclasses import dataclass, field
from typing import Any, Protocol

from containers import jsondoc
from containers.digest import check_digest, sha256_of
from containers.errors import ImageError
from containers.limits import MAX_CONFIG_ENTRIES, MAX_LAYERS, check_count

MAX_DOCUMENT = 8 << 20
MAX_DEPTH = 8

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
ACCEPT = ", ".join((*INDEX_TYPES, *MANIFEST_TYPES))


class Blobs(Protocol):
    """What every source offers: verified small documents and verified blob streams."""

    def document(self, digest: str, what: str) -> bytes: ...

    def open(self, digest: str, size: int | None, what: str) -> Any: ...


@dataclass(frozen=True)
class Descriptor:
    digest: str
    size: int | None
    media_type: str


@dataclass
class Resolved:
    index_digest: str | None
    manifest_digest: str
    manifest_media_type: str
    config_digest: str
    config: dict[str, Any]
    layers: list[Descriptor]
    platform: str
    manifest_synthesized: bool = False
    annotations: dict[str, str] = field(default_factory=dict)


def host_platform() -> str:
    machine = _platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}.get(machine, machine)
    return f"linux/{arch}"


def parse_json(data: bytes, what: str) -> dict[str, Any]:
    doc = jsondoc.load(data, what)
    if not isinstance(doc, dict):
        raise ImageError(f"{what}: malformed JSON: expected an object")
    return doc


def descriptor(obj: Any, what: str) -> Descriptor:
    if not isinstance(obj, dict):
        raise ImageError(f"{what}: descriptor is not an object")
    digest = check_digest(obj.get("digest"), what)
    size = obj.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise ImageError(f"{what}: bad size {size!r}")
    media = obj.get("mediaType", "")
    if not isinstance(media, str):
        raise ImageError(f"{what}: bad mediaType")
    return Descriptor(digest, size, media)


def _platform_of(entry: dict[str, Any]) -> str:
    plat = entry.get("platform")
    if not isinstance(plat, dict):
        return ""
    text = f"{plat.get('os', '')}/{plat.get('architecture', '')}"
    if plat.get("variant"):
        text += f"/{plat['variant']}"
    return text


def _is_attestation(entry: dict[str, Any]) -> bool:
    notes = entry.get("annotations")
    if isinstance(notes, dict) and notes.get("vnd.docker.reference.type") == "attestation-manifest":
        return True
    return _platform_of(entry) == "unknown/unknown"


def choose(index: dict[str, Any], what: str, want_platform: str | None, tag: str | None) -> dict:
    """Pick one entry of an index: by tag (OCI layout ref.name), then by platform."""
    entries = index.get("manifests")
    if not isinstance(entries, list) or not entries:
        raise ImageError(f"{what}: index has no manifests")
    if not all(isinstance(e, dict) for e in entries):
        raise ImageError(f"{what}: index entries must be objects")
    candidates = [e for e in entries if not _is_attestation(e)]
    if tag is not None:
        named = [
            e
            for e in candidates
            if isinstance(e.get("annotations"), dict)
            and e["annotations"].get("org.opencontainers.image.ref.name") == tag
        ]
        if not named:
            raise ImageError(f"{what}: no image tagged {tag!r}")
        candidates = named
    if len(candidates) == 1:
        return candidates[0]
    if tag is None:
        _refuse_several_tags(candidates, what)
    wanted = want_platform or host_platform()
    match = [e for e in candidates if _platform_of(e) == wanted]
    if not match:
        match = [e for e in candidates if _platform_of(e).startswith(wanted + "/")]
    if len(match) >= 1:
        return match[0]
    found = sorted({_platform_of(e) or "?" for e in candidates})
    raise ImageError(f"{what}: no manifest for platform {wanted} (has: {', '.join(found)})")


def _ref_name(entry: dict[str, Any]) -> str | None:
    notes = entry.get("annotations")
    name = notes.get("org.opencontainers.image.ref.name") if isinstance(notes, dict) else None
    return name if isinstance(name, str) else None


def _refuse_several_tags(candidates: list[dict], what: str) -> None:
    """An OCI layout with several tagged images and no platform to tell them apart (as
    umoci and `skopeo copy oci:DIR:TAG` write them): the user must name the tag."""
    if any(_platform_of(e) for e in candidates):
        return  # a multi-platform index: the platform decides
    tags = sorted({t for t in (_ref_name(e) for e in candidates) if t})
    if len(tags) > 1:
        raise ImageError(
            f"{what}: the layout holds {len(candidates)} images; name one as "
            f"oci:PATH:TAG (tags: {', '.join(tags)})"
        )


def resolve(
    blobs: Blobs,
    root: bytes,
    root_digest: str | None,
    what: str,
    want_platform: str | None = None,
    tag: str | None = None,
    root_is_layout_index: bool = False,
) -> Resolved:
    """Walk from `root` (an index or a manifest) to one image's manifest and config.

    `root_is_layout_index`: the root is an OCI layout's index.json, which is not itself a
    content-addressed document, so its digest is not the image's index digest.
    """
    seen: set[str] = set()
    if root_digest:
        seen.add(root_digest)
    doc = parse_json(root, what)
    index_digest: str | None = None
    digest = root_digest
    depth = 0
    first = True
    while _is_index(doc):
        depth += 1
        if depth > MAX_DEPTH:
            raise ImageError(f"{what}: indexes nested deeper than {MAX_DEPTH}")
        if not (first and root_is_layout_index):
            index_digest = digest
        entry = choose(doc, what, want_platform, tag if first else None)
        first = False
        desc = descriptor(entry, f"{what}: index entry")
        if desc.digest in seen:
            raise ImageError(f"{what}: index refers to itself ({desc.digest}); refused")
        seen.add(desc.digest)
        data = blobs.document(desc.digest, f"{what}: {desc.digest}")
        doc = parse_json(data, f"{what}: {desc.digest}")
        digest = desc.digest
    if digest is None:
        raise ImageError(f"{what}: manifest has no digest")
    media = doc.get("mediaType") or OCI_MANIFEST
    if doc.get("schemaVersion") != 2:
        raise ImageError(f"{what}: manifest {digest}: unsupported schemaVersion")
    config_desc = descriptor(doc.get("config"), f"{what}: manifest {digest} config")
    raw_layers = doc.get("layers")
    if not isinstance(raw_layers, list):
        raise ImageError(f"{what}: manifest {digest}: no layers list")
    check_count(len(raw_layers), MAX_LAYERS, f"{what}: manifest {digest}: layers")
    layers = [
        descriptor(x, f"{what}: manifest {digest} layer {i}") for i, x in enumerate(raw_layers)
    ]
    config_bytes = blobs.document(config_desc.digest, f"{what}: config {config_desc.digest}")
    config = parse_json(config_bytes, f"{what}: config {config_desc.digest}")
    check_config(config, len(layers), f"{what}: config {config_desc.digest}")
    plat = f"{config.get('os', '')}/{config.get('architecture', '')}"
    if config.get("variant"):
        plat += f"/{config['variant']}"
    notes = doc.get("annotations") if isinstance(doc.get("annotations"), dict) else {}
    return Resolved(
        index_digest=index_digest,
        manifest_digest=digest,
        manifest_media_type=str(media),
        config_digest=config_desc.digest,
        config=config,
        layers=layers,
        platform=plat,
        annotations={str(k): str(v) for k, v in notes.items()},
    )


def _is_index(doc: dict[str, Any]) -> bool:
    return doc.get("mediaType") in INDEX_TYPES or (
        "manifests" in doc and "layers" not in doc and "config" not in doc
    )


def check_config(config: dict[str, Any], n_layers: int, what: str) -> list[str]:
    """The config's DiffIDs, checked against the manifest's layer count."""
    rootfs = config.get("rootfs")
    if not isinstance(rootfs, dict) or not isinstance(rootfs.get("diff_ids"), list):
        raise ImageError(f"{what}: no rootfs.diff_ids")
    check_count(len(rootfs["diff_ids"]), MAX_LAYERS, f"{what}: rootfs.diff_ids")
    diff_ids = [check_digest(d, f"{what}: diff_id") for d in rootfs["diff_ids"]]
    if len(diff_ids) != n_layers:
        raise ImageError(
            f"{what}: {len(diff_ids)} diff_ids for {n_layers} layers; refused"
        )
    history = config.get("history", [])
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        raise ImageError(f"{what}: malformed history")
    check_count(len(history), MAX_CONFIG_ENTRIES, f"{what}: history entries")
    _check_run_config(config.get("config"), what)
    return diff_ids


_STR_LISTS = ("Env", "Entrypoint", "Cmd")


def _check_run_config(cfg: Any, what: str) -> None:
    """The OCI `config` object's shape: what prov records from it must have the spec's types
    (Env/Entrypoint/Cmd lists of strings or null, Labels an object of strings)."""
    if cfg is None:
        return
    if not isinstance(cfg, dict):
        raise ImageError(f"{what}: config is {type(cfg).__name__}, not an object; refused")
    for key in _STR_LISTS:
        value = cfg.get(key)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise ImageError(f"{what}: config.{key} is not a list of strings; refused")
    labels = cfg.get("Labels")
    if labels is not None and not (
        isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values())
    ):
        raise ImageError(f"{what}: config.Labels is not an object of strings; refused")
    for key in ("WorkingDir", "User"):
        if cfg.get(key) is not None and not isinstance(cfg[key], str):
            raise ImageError(f"{what}: config.{key} is not a string; refused")
    for key, value in cfg.items():  # Env, Labels, ExposedPorts, Volumes, Cmd, ...
        if isinstance(value, list | dict):
            check_count(len(value), MAX_CONFIG_ENTRIES, f"{what}: config.{key} entries")


def verified_document(data: bytes, digest: str, what: str) -> bytes:
    if len(data) > MAX_DOCUMENT:
        raise ImageError(f"{what}: document larger than {MAX_DOCUMENT} bytes; refused")
    got = sha256_of(data)
    if got != digest:
        raise ImageError(f"{what}: digest mismatch: expected {digest}, got {got}")
    return data
