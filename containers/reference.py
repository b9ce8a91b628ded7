"""Image references (`[host[:port]/]repo[:tag][@sha256:...]`) and source strings."""

from __future__ import annotations

import re
from dataclasses import dataclass

from containers.digest import check_digest
from containers.errors import ImageError

_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REPO = re.compile(rf"^{_PART}(?:/{_PART})*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
DOCKER_HUB = "docker.io"
KINDS = ("docker-archive", "oci", "docker", "registry")
SOURCES_HELP = (
    "docker-archive:PATH (a `docker save` tar), oci:PATH (an OCI layout dir or tar), "
    "registry:HOST/REPO:TAG (no daemon needed) or docker:REF (a running daemon)"
)


@dataclass(frozen=True)
class Reference:
    host: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def name(self) -> str:
        return f"{self.host}/{self.repository}"

    def __str__(self) -> str:
        text = self.name
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    def pinned(self, digest: str) -> str:
        return f"{self.name}@{digest}"


def parse_reference(text: str) -> Reference:
    ref = text.strip()
    digest = None
    if "@" in ref:
        ref, digest = ref.split("@", 1)
        check_digest(digest, f"reference {text!r}")
    tag = None
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        ref, tag = ref.rsplit(":", 1)
        if not _TAG.match(tag):
            raise ImageError(f"reference {text!r}: bad tag {tag!r}")
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        host, repo = first, rest
    else:
        host, repo = DOCKER_HUB, ref
        if "/" not in repo:
            repo = f"library/{repo}"
    if not _REPO.match(repo):
        raise ImageError(f"reference {text!r}: bad repository name {repo!r}")
    if tag is None and digest is None:
        tag = "latest"
    return Reference(host, repo, tag, digest)


def split_source(source: str) -> tuple[str, str]:
    """`kind:value`; a bare reference means the Docker daemon."""
    kind, sep, value = source.partition(":")
    if sep and kind in KINDS and not value:
        raise ImageError(f"{source!r}: nothing after {kind}:")
    if sep and kind in ("oci-archive", "docker-daemon"):
        kind, value = ("oci" if kind == "oci-archive" else "docker"), value
    elif not (sep and kind in KINDS):
        kind, value = "docker", source
    if kind in ("docker", "registry") and not value.isascii():
        # OCI distribution's reference grammar is ASCII; the daemon's HTTP client would choke
        raise ImageError(f"{source!r}: an image reference is ASCII (letters, digits, ._-/:@)")
    return kind, value
