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


@pytest.mark.parametrize("source", ["\udcff\udcfe", "registry:h/r\u00e9:t", "docker:vllm\u2028"])
def test_a_reference_outside_ascii_is_refused_before_any_daemon_or_registry(source: str) -> None:
    with pytest.raises(ImageError, match="an image reference is ASCII"):
        split_source(source)


def test_a_path_outside_ascii_is_still_a_path() -> None:
    assert split_source("oci:/tmp/\u00e9") == ("oci", "/tmp/\u00e9")
