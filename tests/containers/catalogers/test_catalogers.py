"""The pure parse functions, on small real-shaped inputs."""

from __future__ import annotations

import json

from containers.catalogers import cuda, dpkg, python_dist

STATUS = """Package: libc6
Status: install ok installed
Architecture: amd64
Multi-Arch: same
Version: 2.36-9+deb12u4
Source: glibc

Package: gone
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0

Package: bash
Status: install ok installed
Architecture: amd64
Version: 5.2.15-2+b2
Source: bash (5.2.15-2)
"""


def test_dpkg_status() -> None:
    pkgs = {p.key: p for p in dpkg.parse_status(STATUS)}
    assert set(pkgs) == {"libc6:amd64", "bash"}
    assert pkgs["bash"].source_version == "5.2.15-2"
    assert pkgs["libc6:amd64"].source == "glibc"


def test_dpkg_status_d_distroless() -> None:
    entry = "Package: tzdata\nVersion: 2024a-0+deb12u1\nArchitecture: all\n"
    (pkg,) = dpkg.parse_status_d_entry(entry)
    assert (pkg.name, pkg.version, pkg.state) == ("tzdata", "2024a-0+deb12u1", "installed")


def test_dpkg_list_owned() -> None:
    text = "/.\n/usr/lib/python3/dist-packages/six-1.16.0.egg-info\n/usr/lib/python3/dist-packages/six.py\n"
    assert dpkg.parse_list_owned(text) == ["/usr/lib/python3/dist-packages/six-1.16.0.egg-info"]


def test_python_fingerprint_ignores_installer_files_and_bytecode() -> None:
    a = python_dist.record_rows(
        "pkg/__init__.py,sha256=abc,10\npkg-1.0.dist-info/RECORD,,\n"
        "pkg-1.0.dist-info/INSTALLER,sha256=x,4\npkg/__pycache__/x.pyc,sha256=zz,3\n"
        "../../../bin/tool,sha256=qq,5\n"
    )
    b = python_dist.record_rows(
        "pkg/__init__.py,sha256=abc,10\npkg-1.0.dist-info/INSTALLER,sha256=y,3\n"
    )
    assert python_dist.content_fingerprint(a) == python_dist.content_fingerprint(b)
    c = python_dist.record_rows("pkg/__init__.py,sha256=abd,10\n")
    assert python_dist.content_fingerprint(c) != python_dist.content_fingerprint(a)


def test_python_names_and_headers() -> None:
    assert python_dist.normalize_name("Foo.Bar_baz") == "foo-bar-baz"
    assert python_dist.headers("Metadata-Version: 2.1\nName: x\nVersion: 1\n\nName: body") == {
        "Name": "x",
        "Version": "1",
    }
    assert python_dist.parse_conda_meta(json.dumps({"name": "numpy", "version": "1.26.4"})) == {
        "name": "numpy",
        "version": "1.26.4",
    }
    assert python_dist.parse_conda_meta("[1]") == {}


def test_cuda() -> None:
    doc = {"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, "libcublas": {"version": "12.4.5.8"}}
    assert cuda.parse_version_json(json.dumps(doc)) == {"cuda": "12.4.1", "libcublas": "12.4.5.8"}
    assert cuda.library_version("libcudnn.so.9.1.0") == ("cudnn", "9.1.0")
    assert cuda.library_version("libnccl.so.2") == ("nccl", "2")
    assert cuda.library_version("libfoo.so.1") is None


def test_record_digest_reads_base64_and_hex_by_length() -> None:
    import base64
    import hashlib

    from containers.catalogers import record_digest

    raw = hashlib.sha256(b"x").digest()
    b64 = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    assert record_digest(f"sha256={b64}") == ("sha256", raw)  # PEP 376: 43 characters
    assert record_digest(f"sha256={raw.hex()}") == ("sha256", raw)  # dh-python: 64 hex
    assert record_digest(f"sha256={b64}=") == ("sha256", raw)  # padding tolerated
    sha512 = hashlib.sha512(b"x").digest()
    enc = base64.urlsafe_b64encode(sha512).rstrip(b"=").decode()
    assert record_digest(f"sha512={enc}") == ("sha512", sha512)
    for bad in ("", "sha256=", "sha256=abc", f"sha256={raw.hex()[:-1]}", f"nope={b64}",
                f"sha256={b64[:-1]}!", f"md5={b64}"):
        assert record_digest(bad) is None, bad
