"""Secrets in image configs and build history never reach the facts."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from containers import scan_image
from containers.scan import redact_command
from tests.fixtures.oci_pack import image_config, write_oci

SECRET = "hf_abcdefghijklmnopqrstuvwxyz012345"


def test_redact_command_keeps_shape() -> None:
    cmd = f"/bin/sh -c export HF_TOKEN={SECRET} &&  pip install --index-url https://u:pw@h/s A=1"
    out = redact_command(cmd)
    assert SECRET not in out and "pw@" not in out
    assert out.startswith("/bin/sh -c export HF_TOKEN=<redacted> &&  pip install")
    assert out.endswith(" A=1")


def test_secrets_in_config_and_history(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.addfile(tarfile.TarInfo("empty"), io.BytesIO(b""))
    layer = buf.getvalue()
    cfg = json.loads(image_config([layer], [f"RUN --mount=x HF_TOKEN={SECRET} make"], []))
    cfg["config"]["Env"] = [f"API_KEY={SECRET}", "MODE=fast"]
    cfg["config"]["Cmd"] = ["serve", "--api-key", SECRET]
    cfg["config"]["Labels"] = {"deploy.token": SECRET, "org": "x"}
    write_oci(tmp_path / "oci", [layer], json.dumps(cfg).encode(), "t")
    facts = scan_image(f"oci:{tmp_path / 'oci'}").facts()
    assert SECRET not in json.dumps(facts)
    assert facts["image"]["config"]["env"] == {"API_KEY": "<redacted>", "MODE": "fast"}
    assert facts["image"]["config"]["cmd"] == ["serve", "--api-key", "<redacted>"]
