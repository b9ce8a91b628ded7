"""`docker:REF` (and a bare REF): a running Docker daemon through the Docker SDK.

The image is inspected (Id is the config digest; RepoDigests name the registry's manifest
digest), then `docker save` is streamed to a temporary file (the archive's index comes last,
so it cannot be read front to back) and read like any docker-archive. The daemon's save
synthesizes a manifest whose digest is not the registry's: it is flagged, and the
registry's digest from RepoDigests becomes the pinned reference.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from containers.errors import ImageError
from containers.reference import SOURCES_HELP
from containers.sources import Opened


def _client(source: str):
    try:
        import docker
        import docker.errors
    except ImportError:
        raise ImageError(
            f"{source}: the Docker SDK is not installed (pip install docker); other sources "
            f"work without it: {SOURCES_HELP}"
        ) from None
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:  # the SDK raises several unrelated types when no daemon
        first = (str(exc).splitlines() or [""])[0][:160]
        raise ImageError(
            f"{source}: no Docker daemon reachable ({first}); without a daemon use "
            f"{SOURCES_HELP}"
        ) from None
    return client


def open_daemon(source: str, value: str, platform: str | None) -> Opened:
    import docker.errors

    from containers.sources.docker_archive import open_docker_archive

    client = _client(source)
    try:
        try:
            image = client.images.get(value)
        except docker.errors.ImageNotFound:
            raise ImageError(f"{source}: no such image in the daemon") from None
        except docker.errors.APIError as exc:
            raise ImageError(f"{source}: daemon error: {exc.explanation or exc}") from None
        attrs = image.attrs
        image_id = str(attrs.get("Id", ""))
        repo_digests = sorted(attrs.get("RepoDigests") or [])
        repo_tags = sorted(attrs.get("RepoTags") or [])
        tmpdir = Path(tempfile.mkdtemp(prefix="prov-docker-save-"))
        try:
            path = tmpdir / "image.tar"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                for chunk in image.save(named=False):
                    fh.write(chunk)
            opened = open_docker_archive(source, str(path), platform)
        except BaseException:
            shutil.rmtree(tmpdir, ignore_errors=True)
            raise
        opened._cleanup.insert(0, lambda: shutil.rmtree(tmpdir, ignore_errors=True))
    finally:
        client.close()
    if image_id and image_id != opened.resolved.config_digest:
        opened.close()
        raise ImageError(
            f"{source}: daemon says {image_id}, the saved config is "
            f"{opened.resolved.config_digest}; refused"
        )
    opened.repo_tags = repo_tags
    opened.repo_digests = repo_digests
    if repo_digests:
        # the registry's manifest digest; prefer the repository the user named
        wanted = value.split("@")[0].rsplit(":", 1)[0] if "/" in value or ":" in value else value
        chosen = next((d for d in repo_digests if d.split("@")[0] == wanted), repo_digests[0])
        opened.reference = chosen
    opened.resolved.manifest_synthesized = True
    opened.notes.append(
        f"{source}: manifest synthesized by the daemon's save; the registry's is in repo_digests"
        if repo_digests
        else f"{source}: image never pushed or pulled: no registry digest known"
    )
    return opened
