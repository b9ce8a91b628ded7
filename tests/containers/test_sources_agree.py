"""The same image through docker:, registry:, docker-archive: and oci: is the same image."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from containers import scan_image
from tests.containers.conftest import Pushed
from tests.fixtures.images import BuiltImage


def _catalog(scan) -> dict:
    return {
        "dpkg": {k: v["version"] for k, v in scan.os["dpkg"].items()},
        "python": {
            k: (v["version"], v.get("fingerprint"), v["layer"])
            for k, v in scan.python["packages"].items()
        },
        "shadowed": {k: v.get("shadowed") for k, v in scan.python["packages"].items()},
        "release": scan.os["release"],
        "diff_ids": [li.diff_id for li in scan.layers],
    }


def test_four_sources_agree(image: BuiltImage, pushed: Pushed, dockerd) -> None:
    scans = {
        "oci": scan_image(f"oci:{image.oci}"),
        "docker-archive": scan_image(f"docker-archive:{image.archive}"),
        "registry": scan_image(f"registry:{pushed.ref}"),
        "docker": scan_image(f"docker:{pushed.ref}"),
    }
    configs = {name: s.config_digest for name, s in scans.items()}
    assert len(set(configs.values())) == 1, configs
    base = _catalog(scans["oci"])
    assert len(base["dpkg"]) > 50 and len(base["python"]) >= 4
    for name, s in scans.items():
        assert _catalog(s) == base, name
    # the registry's manifest digest is what the push reported; the daemon's save
    # synthesizes its own, which is flagged, and RepoDigests carries the registry's
    reg = scans["registry"].facts()["image"]
    assert reg["manifest_digest"] == pushed.registry_digest
    assert reg["manifest_synthesized"] is False
    dk = scans["docker"].facts()["image"]
    assert dk["manifest_synthesized"] is True
    assert dk["manifest_digest"] != pushed.registry_digest
    assert dk["reference"] == f"{pushed.ref.rsplit(':', 1)[0]}@{pushed.registry_digest}"
    # layers pushed by the daemon are gzip-compressed; their DiffIDs still match
    assert {li.compression for li in scans["registry"].layers} == {"gzip"}
    assert {li.compression for li in scans["docker"].layers} == {"none"}


def test_bare_reference_tries_the_daemon(pushed: Pushed, dockerd) -> None:
    scan = scan_image(pushed.ref)
    assert scan.opened.resolved.manifest_synthesized


def test_daemon_save_reads_like_skopeo_archive(image: BuiltImage, pushed: Pushed, dockerd) -> None:
    """`skopeo copy` (a writer nobody here wrote) to docker-archive and oci agrees too."""
    with tempfile.TemporaryDirectory(prefix="prov-skopeo-") as tmp:
        arch = Path(tmp) / "skopeo.tar"
        oci = Path(tmp) / "skopeo-oci"
        for dest in (f"docker-archive:{arch}:prov/img:nightly", f"oci:{oci}:nightly"):
            subprocess.run(
                [
                    "skopeo",
                    "copy",
                    "--quiet",
                    "--src-tls-verify=false",
                    f"docker://{pushed.ref}",
                    dest,
                ],
                check=True,
            )
        a = scan_image(f"docker-archive:{arch}")
        o = scan_image(f"oci:{oci}:nightly")
        ref = scan_image(f"oci:{image.oci}")
    # skopeo's docker-archive keeps the config byte for byte; its OCI conversion rewrites
    # the config (media types), so there only the layers and the catalog must agree
    assert a.config_digest == ref.config_digest
    assert _catalog(a) == _catalog(o) == _catalog(ref)
    assert o.facts()["image"]["manifest_synthesized"] is False
