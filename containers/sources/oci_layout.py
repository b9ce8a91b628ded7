"""`oci:PATH[:TAG]`: an OCI image layout, as a directory or a tar (oci-archive)."""

from __future__ import annotations

from pathlib import Path

from containers import jsondoc
from containers.errors import ImageError
from containers.resolve import parse_json, resolve
from containers.sources import Opened
from containers.sources.tree import Tree, TreeBlobs


def _split_tag(value: str) -> tuple[Path, str | None]:
    path = Path(value)
    if path.exists():
        return path, None
    head, sep, tag = value.rpartition(":")
    if sep and head and "/" not in tag and Path(head).exists():
        return Path(head), tag
    return path, None


def open_oci(source: str, value: str, platform: str | None) -> Opened:
    path, tag = _split_tag(value)
    tree = Tree(path, source)
    try:
        opened = open_layout(source, tree, "", platform, tag)
    except BaseException:
        tree.close()
        raise
    opened._cleanup.append(tree.close)
    return opened


def open_layout(
    source: str, tree: Tree, prefix: str, platform: str | None, tag: str | None
) -> Opened:
    """An OCI layout rooted at `prefix` inside `tree` (docker-archive reuses this)."""
    if not tree.exists(prefix + "oci-layout"):
        raise ImageError(f"{source}: not an OCI image layout (no oci-layout file)")
    layout = parse_json(tree.read(prefix + "oci-layout"), f"{source}: oci-layout")
    if layout.get("imageLayoutVersion") != "1.0.0":
        raise ImageError(f"{source}: unsupported imageLayoutVersion")
    index = tree.read(prefix + "index.json")
    blobs = TreeBlobs(tree, prefix)
    resolved = resolve(blobs, index, None, source, platform, tag, root_is_layout_index=True)
    tags = []
    try:
        for entry in jsondoc.load(index, source).get("manifests", []):
            name = (entry.get("annotations") or {}).get("io.containerd.image.name")
            if isinstance(name, str):
                tags.append(name)
    except (ImageError, AttributeError):
        pass
    return Opened(source=source, resolved=resolved, blobs=blobs, repo_tags=sorted(set(tags)))
