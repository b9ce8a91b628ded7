"""Session fixtures: the test image (cached), a real registry and a real Docker daemon."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.fixtures.dockerd import Dockerd, start_dockerd
from tests.fixtures.images import TAG, BuiltImage, build_test_image
from tests.fixtures.registry import Registry, start_registry


@pytest.fixture(scope="session")
def image() -> BuiltImage:
    return build_test_image()


@pytest.fixture(scope="session")
def registry() -> Iterator[Registry]:
    reg = start_registry()
    try:
        yield reg
    finally:
        reg.stop()


@pytest.fixture(scope="session")
def dockerd() -> Iterator[Dockerd]:
    d = start_dockerd()
    old = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = d.url  # docker:REF sources find this daemon
    try:
        yield d
    finally:
        if old is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = old
        d.stop()


@dataclass
class Pushed:
    ref: str  # "127.0.0.1:PORT/prov/img:nightly"
    registry_digest: str  # what the registry answered the push with
    local_ref: str


@pytest.fixture(scope="session")
def pushed(image: BuiltImage, registry: Registry, dockerd: Dockerd) -> Pushed:
    """The test image loaded into the daemon (`docker load`) and pushed to the registry."""
    client = dockerd.client()
    with open(image.archive, "rb") as fh:
        loaded = client.images.load(fh.read())
    img = loaded[0]
    ref = f"{registry.host}/prov/img:{TAG}"
    img.tag(f"{registry.host}/prov/img", TAG)
    for line in client.images.push(f"{registry.host}/prov/img", TAG, stream=True, decode=True):
        if "error" in line:
            raise RuntimeError(line["error"])
    digests = client.images.get(ref).attrs["RepoDigests"]
    client.close()
    assert digests, "a push must give a registry digest in RepoDigests"
    return Pushed(ref, digests[0].split("@")[1], "prov/img:nightly")
