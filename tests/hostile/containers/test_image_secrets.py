"""Secrets in an image's config never reach what prov writes about the image (issue #30):
the image manifest (`prov snapshot --image`), the image lock (`prov pin`) and the image SBOM
(`prov sbom --image`).

The image is built in code (an OCI layout, four layers, no daemon) with secrets where
Dockerfiles put them: ENV values (by name and by shape), labels, Cmd and Entrypoint in
exec and shell form, and history lines (`RUN sshpass -p PW ...`, build args `|1
NPM_TOKEN=...`, a value of ENV echoed by a later RUN, found by value only). What is not a
secret (package versions, digests, paths, a version label) stays visible.
"""

from __future__ import annotations

import json
import tomllib

import pytest

from tests.fixtures.oci_pack import image_config, write_oci
from tests.fixtures.scale_images import OS_RELEASE, SITE, _tar
from tests.helpers import run_prov
from tests.hostile import fresh_secrets as fresh

DB_PASSWORD = fresh.word(11)  # low entropy: hidden by its name, then by value in history
PEM_BLOCK, PEM_LINE = fresh.pem_body("RSA PRIVATE KEY")
SECRETS = {
    "env by name": DB_PASSWORD,
    "env by shape": (hf := "hf_" + fresh.rand(34)),
    "env url password": (url_pw := fresh.word(12)),
    "label token": (label_token := fresh.word(12)),
    "cmd --api-key": (api_key := fresh.word(12)),
    "cmd shell redis-cli -a": (redis := fresh.word(12)),
    "entrypoint sshpass -p": (sshpass := fresh.word(12)),
    "history sshpass -p": (run_pw := fresh.word(12)),
    "history build arg": (npm := fresh.word(12)),
    "history curl -u": (curl_pw := fresh.word(12)),
    "history echo of an ENV value": DB_PASSWORD,
    "history PEM private key": PEM_LINE,
}
HISTORY = [
    f"RUN /bin/sh -c sshpass -p {run_pw} scp pkg.tar build@host.internal:/srv # buildkit",
    f"|1 NPM_TOKEN={npm} /bin/sh -c npm ci && pip install torch==2.5.1",
    f"/bin/sh -c echo {DB_PASSWORD} > /etc/app.conf && curl -u me:{curl_pw} "
    "https://files.internal/x.tgz -o x.tgz",
    f"RUN /bin/sh -c cat > /root/.ssh/id_rsa <<EOF\n{PEM_BLOCK}EOF",
]


def _layer(n: int) -> bytes:
    files = [("etc/os-release", OS_RELEASE)]
    if n == 0:
        files.append((f"{SITE}/six-1.17.0.dist-info/METADATA",
                      b"Metadata-Version: 2.1\nName: six\nVersion: 1.17.0\n"))
    return _tar(files + [(f"layer{n}.txt", b"x")])


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    root = tmp_path_factory.mktemp("secret-image")
    layers = [_layer(n) for n in range(len(HISTORY))]
    config = json.loads(image_config(layers, HISTORY, [
        "PATH=/usr/local/bin:/usr/bin", "LANG=C.UTF-8", f"DB_PASSWORD={DB_PASSWORD}",
        f"VLLM_NOTE=pulled with {hf}",
        f"PIP_INDEX_URL=https://ci:{url_pw}@pypi.internal/simple"]))
    config["config"]["Labels"] = {"org.opencontainers.image.version": "1.2.3",
                                  "deploy.token": label_token}
    config["config"]["Cmd"] = ["serve", "--api-key", api_key, "--port", "8000"]
    config["config"]["Entrypoint"] = ["/bin/sh", "-c",
                                      f"sshpass -p {sshpass} ssh -p 2222 h.internal true && "
                                      f"redis-cli -a {redis} ping"]
    write_oci(root / "oci", layers, json.dumps(config).encode(), "t")
    source = f"oci:{root / 'oci'}"
    out = {}
    for label, args in {"snapshot --image": ["snapshot", "--image", source, "--json"],
                        "sbom --image": ["sbom", "--image", source],
                        "pin": ["pin", source, "--out", str(root / "image.lock.toml")]}.items():
        p = run_prov(*args, env={"PROV_STORE": str(root / "store")}, timeout=300)
        assert p.returncode == 0, (label, p.stderr)
        out[label], out[f"{label} (stderr)"] = p.stdout, p.stderr
    out["image lock"] = (root / "image.lock.toml").read_text()
    return out


def test_no_image_secret_reaches_a_manifest_lock_or_sbom(image):
    leaks = [(surface, label) for surface, text in image.items()
             for label, secret in SECRETS.items() if secret in text]
    assert not leaks


def test_what_is_not_secret_stays_visible(image):
    manifest = json.loads(image["snapshot --image"])
    config = manifest["image"]["config"]
    assert config["env"]["PATH"] == "/usr/local/bin:/usr/bin"
    assert config["env"]["PIP_INDEX_URL"] == "https://<redacted>@pypi.internal/simple"
    assert config["labels"]["org.opencontainers.image.version"] == "1.2.3"
    assert config["cmd"] == ["serve", "--api-key", "<redacted>", "--port", "8000"]
    assert "ssh -p 2222 h.internal" in config["entrypoint"][2]
    history = [layer["created_by"] for layer in manifest["image"]["layers"].values()]
    assert "pip install torch==2.5.1" in history[1] and "build@host.internal:/srv" in history[0]
    assert "echo <redacted> > /etc/app.conf" in history[2]  # by value: DB_PASSWORD's
    lock = tomllib.loads(image["image lock"])
    assert [layer["created_by"] for layer in lock["layers"]] == history
    assert manifest["python"]["packages"]["six"]["version"] == "1.17.0"
