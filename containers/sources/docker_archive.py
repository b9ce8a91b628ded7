"""`docker-archive:PATH`: a `docker save` tar, legacy (manifest.json) or OCI-inside (25+).

A classic-store save holds uncompressed layers, so its manifest is synthesized by the
daemon (legacy archives hold none at all; one is synthesized here): its digest is not the
registry's and is flagged as such. The config digest is the anchor that survives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from containers import jsondoc
from containers.digest import VerifyingReader, sha256_of
from containers.errors import ImageError
from containers.limits import MAX_LAYERS, check_count
from containers.resolve import (
    DOCKER_MANIFEST,
    Descriptor,
    Resolved,
    check_config,
    parse_json,
    verified_document,
)
from containers.sources import Opened
from containers.sources.oci_layout import open_layout
from containers.sources.tree import Tree

LAYER_TAR = "application/vnd.docker.image.rootfs.diff.tar"
CONFIG = "application/vnd.docker.container.image.v1+json"


def _manifest_json(tree: Tree, source: str) -> list[dict[str, Any]]:
    if not tree.exists("manifest.json"):
        return []
    raw = tree.read("manifest.json")
    doc = jsondoc.load(raw, f"{source}: manifest.json")
    if not isinstance(doc, list) or not all(isinstance(x, dict) for x in doc):
        raise ImageError(f"{source}: manifest.json: expected a list of objects")
    return doc


def _pick(entries: list[dict[str, Any]], source: str, tag: str | None) -> dict[str, Any]:
    if tag is not None:
        for entry in entries:
            if tag in (entry.get("RepoTags") or []):
                return entry
        raise ImageError(f"{source}: no image tagged {tag!r} in the archive")
    if len(entries) != 1:
        raise ImageError(f"{source}: {len(entries)} images in the archive; add :REPO:TAG")
    return entries[0]


class _LegacyBlobs:
    """Blobs of a legacy archive: config and layer files named by manifest.json."""

    def __init__(self, tree: Tree, by_digest: dict[str, str]) -> None:
        self.tree = tree
        self.by_digest = by_digest

    def document(self, digest: str, what: str) -> bytes:
        name = self.by_digest.get(digest)
        if name is None:
            raise ImageError(f"{what}: not in the archive")
        return verified_document(self.tree.read(name), digest, what)

    def open(self, digest: str, size: int | None, what: str) -> VerifyingReader:
        name = self.by_digest.get(digest)
        if name is None:
            raise ImageError(f"{what}: not in the archive")
        return VerifyingReader(self.tree.open(name), digest, size, what)


def open_docker_archive(source: str, value: str, platform: str | None) -> Opened:
    path, tag = Path(value), None
    if not path.exists() and value.count(":") >= 1:
        head, _, rest = value.partition(":")
        if Path(head).exists():
            path, tag = Path(head), rest
    tree = Tree(path, source)
    try:
        opened = _open(source, tree, platform, tag)
    except BaseException:
        tree.close()
        raise
    opened._cleanup.append(tree.close)
    return opened


def _open(source: str, tree: Tree, platform: str | None, tag: str | None) -> Opened:
    entries = _manifest_json(tree, source)
    if tree.exists("oci-layout") and tree.exists("index.json"):
        opened = open_layout(source, tree, "", platform, None)
        if entries:
            entry = _pick(entries, source, tag) if tag or len(entries) == 1 else entries[0]
            opened.repo_tags = sorted(entry.get("RepoTags") or [])
        opened.resolved.manifest_synthesized = all(
            d.media_type.endswith(".tar") for d in opened.resolved.layers
        )
        return opened
    if not entries:
        raise ImageError(f"{source}: not a docker-archive (no manifest.json)")
    entry = _pick(entries, source, tag)
    config_name = entry.get("Config")
    layer_names = entry.get("Layers")
    if not isinstance(config_name, str) or not isinstance(layer_names, list):
        raise ImageError(f"{source}: manifest.json entry lacks Config or Layers")
    check_count(len(layer_names), MAX_LAYERS, f"{source}: manifest.json Layers")
    if not all(isinstance(n, str) for n in layer_names):
        raise ImageError(f"{source}: manifest.json Layers must be file names")
    config_bytes = tree.read(config_name)
    config_digest = sha256_of(config_bytes)
    config = parse_json(config_bytes, f"{source}: config {config_digest}")
    diff_ids = check_config(config, len(layer_names), f"{source}: config {config_digest}")
    by_digest = {config_digest: config_name}
    layers = []
    for diff_id, name in zip(diff_ids, layer_names, strict=True):
        by_digest[diff_id] = name
        layers.append(Descriptor(diff_id, tree.size(name), LAYER_TAR))
    # the manifest a registry push from this daemon would start from; not the registry's
    manifest = {
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST,
        "config": {"mediaType": CONFIG, "size": len(config_bytes), "digest": config_digest},
        "layers": [
            {"mediaType": d.media_type, "size": d.size, "digest": d.digest} for d in layers
        ],
    }
    manifest_bytes = json.dumps(manifest, indent=3).encode()
    plat = f"{config.get('os', '')}/{config.get('architecture', '')}"
    if config.get("variant"):
        plat += f"/{config['variant']}"
    if platform and platform != plat:
        raise ImageError(f"{source}: image is {plat}, not {platform}")
    resolved = Resolved(
        index_digest=None,
        manifest_digest=sha256_of(manifest_bytes),
        manifest_media_type=DOCKER_MANIFEST,
        config_digest=config_digest,
        config=config,
        layers=layers,
        platform=plat,
        manifest_synthesized=True,
    )
    return Opened(
        source=source,
        resolved=resolved,
        blobs=_LegacyBlobs(tree, by_digest),
        repo_tags=sorted(entry.get("RepoTags") or []),
    )
