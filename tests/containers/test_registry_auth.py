"""A registry that asks for a bearer token: credentials come from the Docker config, are
sent only to the token realm, and never reach the manifest or the lock."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from containers import ImageError, scan_image
from lockfiles.image_lock import lock_from_facts
from tests.fixtures.images import BuiltImage
from tests.fixtures.registry import start_registry
from tests.fixtures.token_auth import auth_config, docker_config, start_token_server

USER, PASSWORD = "prov", "s3cret-Pa55word-xyz"


@pytest.fixture()
def token_registry(tmp_path: Path):
    token = start_token_server(tmp_path / "token", USER, PASSWORD)
    reg = start_registry(auth=auth_config(token))
    try:
        yield reg, token
    finally:
        reg.stop()
        token.stop()


def test_token_auth_with_docker_config_credentials(
    image: BuiltImage, token_registry, tmp_path: Path, monkeypatch
) -> None:
    reg, token = token_registry
    ref = f"{reg.host}/private/img:nightly"
    subprocess.run(
        [
            "skopeo",
            "copy",
            "--quiet",
            "--dest-tls-verify=false",
            "--dest-creds",
            f"{USER}:{PASSWORD}",
            f"oci:{image.small_oci}:nightly",
            f"docker://{ref}",
        ],
        check=True,
    )
    # no credentials: one clear line
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "empty"))
    with pytest.raises(ImageError, match="token request failed|access denied"):
        scan_image(f"registry:{ref}")
    # credentials from the Docker config
    monkeypatch.setenv(
        "DOCKER_CONFIG", str(docker_config(tmp_path / "dc", reg.host, USER, PASSWORD))
    )
    scan = scan_image(f"registry:{ref}")
    facts = scan.facts()
    assert facts["image"]["reference"].startswith(f"{reg.host}/private/img@sha256:")
    assert any(h.startswith("Basic ") for h in token.requests)
    text = json.dumps(facts) + lock_from_facts(facts)
    assert PASSWORD not in text and USER + ":" not in text
