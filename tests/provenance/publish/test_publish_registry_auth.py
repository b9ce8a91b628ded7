"""`prov publish --to registry:` and `prov verify registry:` against a registry that wants a
bearer token (docker-registry in `auth: token` mode): the push goes through the one registry
client, which asks the realm for a pull,push token with the Docker config's credentials;
the credentials never reach the bundle, the output, or the artifact skopeo reads back."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.provenance.sbom.helpers_sbom import prov

USER, PASSWORD = "prov", "s3cret-Pa55word-push"


@pytest.fixture(scope="module")
def token_registry(tmp_path_factory):
    from tests.fixtures.images import build_test_image
    from tests.fixtures.registry import start_registry
    from tests.fixtures.token_auth import auth_config, docker_config, start_token_server

    work = tmp_path_factory.mktemp("reg-auth")
    token = start_token_server(work / "token", USER, PASSWORD)
    reg = start_registry(auth=auth_config(token))
    try:
        subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds",
                        f"{USER}:{PASSWORD}", f"oci:{build_test_image().small_oci}:nightly",
                        f"docker://{reg.host}/private/img:nightly"],
                       check=True, capture_output=True, timeout=120)
        env = {"DOCKER_CONFIG": str(docker_config(work / "dc", reg.host, USER, PASSWORD))}
        snap = work / "img.json"
        r = prov("snapshot", "--image", f"registry:{reg.host}/private/img:nightly", "-o",
                 str(snap), "-f", "json", timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        yield reg, token, work, env
    finally:
        reg.stop()
        token.stop()


def test_push_and_verify_with_token_auth(token_registry):
    reg, token, work, env = token_registry
    res = work / "agreement.json"
    res.write_text(json.dumps({"metric": "top1_agreement", "value": 0.93}))
    pushed = prov("publish", str(res), "--manifest", str(work / "img.json"), "--to",
                  f"registry:{reg.host}/private/img", timeout=300, env=env)
    assert pushed.returncode == 0, pushed.stderr
    ref = pushed.stdout.strip()
    assert ref.startswith(f"registry:{reg.host}/private/img@sha256:")
    assert any(h.startswith("Basic ") for h in token.requests)  # the realm got the creds

    raw = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false", "--creds",
                          f"{USER}:{PASSWORD}", f"docker://{reg.host}/private/img@"
                          + ref.split("@", 1)[1]],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    assert json.loads(raw)["artifactType"] == "application/vnd.prov.bundle.v1"
    verified = prov("verify", ref, "--json", "--no-signature", timeout=300, env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    for text in (raw, pushed.stdout, pushed.stderr, verified.stdout, verified.stderr):
        assert PASSWORD not in text and f"{USER}:" not in text


def test_push_without_credentials_is_one_line(token_registry, tmp_path):
    reg, _token, work, _env = token_registry
    res = work / "r.json"
    res.write_text("{}")
    r = prov("publish", str(res), "--manifest", str(work / "img.json"), "--to",
             f"registry:{reg.host}/private/img", env={"DOCKER_CONFIG": str(tmp_path)})
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "token request failed" in r.stderr or "access denied" in r.stderr, r.stderr
