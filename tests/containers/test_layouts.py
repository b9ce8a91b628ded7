"""Layout variants: oci-archive tars, Docker 25+ OCI-inside archives, nested indexes with
platforms and attestation manifests, progress events."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from containers import ImageError, scan_image
from tests.fixtures.oci_pack import image_config, sha, write_oci


def _layer(os_id: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        data = f"ID={os_id}\n".encode()
        info = tarfile.TarInfo("etc/os-release")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _tar_dir(src: Path, out: Path, extra: dict[str, bytes] | None = None) -> None:
    with tarfile.open(out, "w") as tf:
        for path in sorted(src.rglob("*")):
            tf.add(path, arcname=str(path.relative_to(src)), recursive=False)
        for name, data in (extra or {}).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def test_oci_archive_tar(tmp_path: Path) -> None:
    layer = _layer("tarred")
    write_oci(tmp_path / "dir", [layer], image_config([layer], ["x"], []), "v1")
    _tar_dir(tmp_path / "dir", tmp_path / "img.tar")
    a = scan_image(f"oci:{tmp_path / 'dir'}")
    b = scan_image(f"oci:{tmp_path / 'img.tar'}")
    c = scan_image(f"oci:{tmp_path / 'img.tar'}:v1")
    assert a.config_digest == b.config_digest == c.config_digest
    assert b.os["release"] == {"id": "tarred"}
    with pytest.raises(ImageError, match="no image tagged"):
        scan_image(f"oci:{tmp_path / 'img.tar'}:v2")


def test_docker_25_oci_inside_archive(tmp_path: Path) -> None:
    """Docker 25+ `docker save`: an OCI layout with uncompressed layers plus manifest.json."""
    layer = _layer("d25")
    config = image_config([layer], ["x"], [])
    out = tmp_path / "dir"
    write_oci(out, [layer], config, "latest")
    # rewrite the manifest with the uncompressed layer, as the classic store saves it
    index = json.loads((out / "index.json").read_text())
    manifest = json.loads((out / "blobs/sha256" / index["manifests"][0]["digest"][7:]).read_bytes())
    (out / "blobs/sha256" / sha(layer)[7:]).write_bytes(layer)
    manifest["layers"] = [
        {
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": sha(layer),
            "size": len(layer),
        }
    ]
    data = json.dumps(manifest).encode()
    (out / "blobs/sha256" / sha(data)[7:]).write_bytes(data)
    index["manifests"][0].update(digest=sha(data), size=len(data))
    index["manifests"][0]["annotations"]["io.containerd.image.name"] = "docker.io/prov/d25:latest"
    (out / "index.json").write_text(json.dumps(index))
    legacy = [
        {
            "Config": f"blobs/sha256/{sha(config)[7:]}",
            "RepoTags": ["prov/d25:latest"],
            "Layers": [f"blobs/sha256/{sha(layer)[7:]}"],
        }
    ]
    _tar_dir(out, tmp_path / "save.tar", {"manifest.json": json.dumps(legacy).encode()})
    scan = scan_image(f"docker-archive:{tmp_path / 'save.tar'}")
    img = scan.facts()["image"]
    assert img["config_digest"] == sha(config)
    assert img["manifest_digest"] == sha(data)
    assert img["manifest_synthesized"] is True
    assert img["repo_tags"] == ["prov/d25:latest"]


def test_nested_index_platforms_and_attestations(tmp_path: Path) -> None:
    out = tmp_path / "oci"
    digests = {}
    for arch in ("amd64", "arm64"):
        layer = _layer(arch)
        cfg = json.loads(image_config([layer], ["x"], []))
        cfg["architecture"] = arch
        write_oci(out, [layer], json.dumps(cfg).encode(), arch)
        index = json.loads((out / "index.json").read_text())
        digests[arch] = index["manifests"][0]
    attest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": digests["amd64"]["digest"],
        "layers": [],
    }
    attest_bytes = json.dumps(attest).encode()
    (out / "blobs/sha256" / sha(attest_bytes)[7:]).write_bytes(attest_bytes)
    inner = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {**digests["arm64"], "platform": {"os": "linux", "architecture": "arm64"}},
            {
                "mediaType": attest["mediaType"],
                "digest": sha(attest_bytes),
                "size": len(attest_bytes),
                "platform": {"os": "unknown", "architecture": "unknown"},
                "annotations": {"vnd.docker.reference.type": "attestation-manifest"},
            },
            {**digests["amd64"], "platform": {"os": "linux", "architecture": "amd64"}},
        ],
    }
    inner_bytes = json.dumps(inner).encode()
    (out / "blobs/sha256" / sha(inner_bytes)[7:]).write_bytes(inner_bytes)
    (out / "index.json").write_text(
        json.dumps(
            {
                "schemaVersion": 2,
                "manifests": [
                    {
                        "mediaType": inner["mediaType"],
                        "digest": sha(inner_bytes),
                        "size": len(inner_bytes),
                        "annotations": {"org.opencontainers.image.ref.name": "multi"},
                    }
                ],
            }
        )
    )
    amd = scan_image(f"oci:{out}", platform="linux/amd64")
    arm = scan_image(f"oci:{out}", platform="linux/arm64")
    assert amd.os["release"] == {"id": "amd64"} and arm.os["release"] == {"id": "arm64"}
    assert amd.facts()["image"]["index_digest"] == sha(inner_bytes)
    assert amd.facts()["image"]["manifest_digest"] == digests["amd64"]["digest"]
    with pytest.raises(ImageError, match="no manifest for platform linux/s390x"):
        scan_image(f"oci:{out}", platform="linux/s390x")


def test_progress_events(tmp_path: Path) -> None:
    layers = [_layer("a"), _layer("b")]
    write_oci(tmp_path / "oci", layers, image_config(layers, ["x", "y"], []), "t")
    events: list[tuple[str, int]] = []
    scan_image(f"oci:{tmp_path / 'oci'}", progress=lambda e, i, done, total: events.append((e, i)))
    starts = [i for e, i in events if e == "start"]
    ends = [i for e, i in events if e == "end"]
    assert starts == ends == [0, 1]
    assert ("advance", 0) in events
