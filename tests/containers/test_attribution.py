"""Layer attribution across layers, and distroless `status.d` databases."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from containers import scan_image
from tests.fixtures.oci_pack import image_config, write_oci


def _stanza(name: str, version: str) -> str:
    return (
        f"Package: {name}\nStatus: install ok installed\nArchitecture: amd64\n"
        f"Version: {version}\n\n"
    )


def _layer(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _meta(name: str, version: str) -> bytes:
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n".encode()


def test_package_layer_is_the_one_that_introduced_its_version(tmp_path: Path) -> None:
    site = "usr/local/lib/python3.12/site-packages"
    l0 = _layer(
        {
            "var/lib/dpkg/status": (_stanza("base", "1") + _stanza("curl", "7")).encode(),
            f"{site}/numpy-1.0.dist-info/METADATA": _meta("numpy", "1.0"),
            f"{site}/torch-2.0.dist-info/METADATA": _meta("torch", "2.0"),
        }
    )
    l1 = _layer(
        {
            "var/lib/dpkg/status": (
                _stanza("base", "1") + _stanza("curl", "8") + _stanza("git", "2")
            ).encode(),
            f"{site}/.wh.torch-2.0.dist-info": b"",
            f"{site}/torch-2.1.dist-info/METADATA": _meta("torch", "2.1"),
        }
    )
    l2 = _layer({"etc/motd": b"hello\n"})
    layers = [l0, l1, l2]
    config = image_config(layers, ["base", "upgrade", "motd"], [])
    write_oci(tmp_path / "oci", layers, config, "t")
    scan = scan_image(f"oci:{tmp_path / 'oci'}")
    dpkg = scan.os["dpkg"]
    assert {k: (v["version"], v["layer"]) for k, v in dpkg.items()} == {
        "base": ("1", 0),
        "curl": ("8", 1),
        "git": ("2", 1),
    }
    py = scan.python["packages"]
    assert {k: (v["version"], v["layer"]) for k, v in py.items()} == {
        "numpy": ("1.0", 0),
        "torch": ("2.1", 1),
    }
    assert [li.created_by for li in scan.layers] == ["base", "upgrade", "motd"]


def test_distroless_status_d(tmp_path: Path) -> None:
    layer = _layer(
        {
            "var/lib/dpkg/status.d/base-files": _stanza("base-files", "12.4").encode(),
            "var/lib/dpkg/status.d/base-files.md5sums": b"abc  etc/debian_version\n",
            "var/lib/dpkg/status.d/tzdata": b"Package: tzdata\nVersion: 2024a\nArchitecture: all\n",
        }
    )
    write_oci(tmp_path / "oci", [layer], image_config([layer], ["distroless"], []), "t")
    scan = scan_image(f"oci:{tmp_path / 'oci'}")
    assert {k: v["version"] for k, v in scan.os["dpkg"].items()} == {
        "base-files": "12.4",
        "tzdata": "2024a",
    }
