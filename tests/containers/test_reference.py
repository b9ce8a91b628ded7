from __future__ import annotations

import pytest

from containers.errors import ImageError
from containers.reference import parse_reference, split_source


@pytest.mark.parametrize(
    ("text", "host", "repo", "tag"),
    [
        ("vllm/vllm-openai:nightly", "docker.io", "vllm/vllm-openai", "nightly"),
        ("ubuntu", "docker.io", "library/ubuntu", "latest"),
        ("127.0.0.1:5000/prov/img:nightly", "127.0.0.1:5000", "prov/img", "nightly"),
        ("localhost/a/b", "localhost", "a/b", "latest"),
        ("ghcr.io/o/r@sha256:" + "a" * 64, "ghcr.io", "o/r", None),
    ],
)
def test_parse(text: str, host: str, repo: str, tag: str | None) -> None:
    ref = parse_reference(text)
    assert (ref.host, ref.repository, ref.tag) == (host, repo, tag)


@pytest.mark.parametrize("bad", ["UPPER/case", "a@sha256:123", "a/b:c:d", "x:-bad"])
def test_bad_references(bad: str) -> None:
    with pytest.raises(ImageError):
        parse_reference(bad)


def test_sources() -> None:
    assert split_source("oci:/x") == ("oci", "/x")
    assert split_source("registry:h/r:t") == ("registry", "h/r:t")
    assert split_source("vllm/vllm-openai:nightly") == ("docker", "vllm/vllm-openai:nightly")
    assert split_source("docker-archive:/a.tar") == ("docker-archive", "/a.tar")
