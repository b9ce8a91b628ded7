"""The pure parse functions, on small real-shaped inputs."""

from __future__ import annotations

import json

from containers.catalogers import apk, cuda, dpkg, python_dist

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
    # the stdlib-only copy (it runs where packaging may be missing) agrees with packaging's
    from importlib.metadata import distributions

    from packaging.utils import canonicalize_name

    names = {d.metadata["Name"] for d in distributions() if d.metadata["Name"]}
    names |= {"A__b", "a-_.B", "Zope.Interface", "x...y", "ruamel.yaml.clib"}
    assert len(names) > 20
    assert {n: python_dist.normalize_name(n) for n in names} == \
        {n: canonicalize_name(n) for n in names}
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


# musl's entry in a real installed database (apk-tools on Alpine 3.14, x86_64), as the
# format's documentation shows it: package fields, then its files with their checksums;
# busybox-binsh's below it is written here in the same format (its checksums not real)
APK_MUSL = """C:Q1Deb0jNytkrjPW4N/eKLZ43BwOlw=
P:musl
V:1.2.2-r7
A:x86_64
S:383152
I:622592
T:the musl c library (libc) implementation
U:https://musl.libc.org/
L:MIT
o:musl
m:Timo Teräs <timo.teras@iki.fi>
t:1632431095
c:bf5bbfdbf780092f387b7abe401fbfceda90c84d
p:so:libc.musl-x86_64.so.1=1
F:lib
R:ld-musl-x86_64.so.1
a:0:0:755
Z:Q12adwqQOjo9dFl+VJD2Ecd901vhE=
R:libc.musl-x86_64.so.1
a:0:0:777
Z:Q17yJ3JFNypA4mxhJJr0ou6CzsJVI=

C:Q1abc=
P:busybox-binsh
V:1.33.1-r6
A:x86_64
o:busybox
F:bin
R:sh
Z:Q1Ld9O/JKZZVS8bzAcSIW6nKTz+Fo=
"""


def test_apk_installed_database() -> None:
    import hashlib

    musl, binsh = apk.parse_installed(APK_MUSL)
    assert (musl.name, musl.version, musl.architecture, musl.license) == (
        "musl", "1.2.2-r7", "x86_64", "MIT")
    assert musl.maintainer == "Timo Teräs <timo.teras@iki.fi>"
    assert musl.files == (("lib/ld-musl-x86_64.so.1", "Q12adwqQOjo9dFl+VJD2Ecd901vhE="),
                          ("lib/libc.musl-x86_64.so.1", "Q17yJ3JFNypA4mxhJJr0ou6CzsJVI="))
    assert musl.facts() == {"version": "1.2.2-r7", "arch": "x86_64"}
    assert binsh.facts() == {"version": "1.33.1-r6", "arch": "x86_64", "origin": "busybox"}
    # a symlink's checksum is the SHA-1 of its target: the real database agrees
    assert apk.checksum_digest(musl.files[1][1]) == (
        "sha1", hashlib.sha1(b"ld-musl-x86_64.so.1").digest())
    assert apk.checksum_digest("0" * 32) == ("md5", bytes(16))  # an old database's hex md5
    assert apk.checksum_digest("Q1not-base64!") is None


def test_each_cataloger_owns_its_globs() -> None:
    from containers.catalog import CATALOG, VERIFYING

    def owner(path: str, dispatch=CATALOG) -> str | None:
        e = dispatch.match(path)
        return e.cataloger.name if e is not None else None

    assert owner("lib/apk/db/installed") == "apk-db-cataloger"
    assert owner("var/lib/dpkg/status") == "dpkg-db-cataloger"
    assert owner("var/lib/dpkg/status.d/tzdata") == "dpkg-db-cataloger"
    assert owner("var/lib/dpkg/status.d/tzdata.md5sums") is None
    assert owner("var/lib/dpkg/status.d/tzdata.md5sums", VERIFYING) == "dpkg-db-cataloger"
    assert owner("usr/lib/os-release") == "os-release-cataloger"
    site = "opt/venv/lib/python3.12/site-packages"
    assert owner(f"{site}/six-1.17.0.dist-info/RECORD") == "python-installed-package-cataloger"
    assert owner(f"{site}/six-1.17.0.dist-info/top_level.txt") is None
    assert owner("usr/lib/python3/dist-packages/six.egg-info") == (
        "python-installed-package-cataloger")
    assert owner("opt/conda/conda-meta/nccl-2.21.5-1.json") == (
        "python-installed-package-cataloger")
    assert owner("usr/local/cuda-12.4/version.json") == "cuda-cataloger"
    assert owner(f"{site}/nvidia/cudnn/lib/libcudnn_ops.so.9") == "cuda-cataloger"
    assert owner("usr/local/cuda-12.4/lib64/version.json") is None
    assert owner(f"{site}/six.py") is None
