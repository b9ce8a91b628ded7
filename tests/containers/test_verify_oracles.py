"""File verification on a larger image (debootstrap rootfs + two pip venvs, one with numpy
and torch CPU, and a fix-up layer), against the tools' own views of the final rootfs unpacked on disk:

- Python: `importlib.metadata` run by each venv's own interpreter (`dist.files`, the hash
  of every row, each file re-hashed), with `python -m pip show -f` for the file lists;
- dpkg: `md5sum -c` over each package's md5sums, run in the rootfs, and
  `dpkg --root --verify`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from containers import scan_image
from containers.dists import dist_keys
from tests.fixtures.verify_image import VerifyImage, build_verify_image

ORACLE = r"""
import base64, hashlib, json, os, sys
from importlib.metadata import distributions
root, site = sys.argv[1], sys.argv[2]
out = {}
for dist in distributions(path=[os.path.join(root, site)]):
    checked, modified, missing = 0, [], []
    rows = {}
    for f in dist.files or []:
        rows[os.path.normpath(os.path.join(root, site, str(f)))] = f  # the last row wins
    for path, f in rows.items():
        if f.hash is None or f.hash.mode != "sha256":
            continue
        image_path = "/" + os.path.relpath(path, root)
        if not os.path.isfile(path):
            missing.append(image_path)
            continue
        checked += 1
        want = base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4))
        if hashlib.sha256(open(path, "rb").read()).digest() != want:
            modified.append(image_path)
    out[dist.metadata["Name"]] = [checked, sorted(modified), sorted(missing)]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def vimg() -> VerifyImage:
    return build_verify_image()


@pytest.fixture(scope="module")
def scan(vimg: VerifyImage):
    return scan_image(f"oci:{vimg.oci}", verify_files=True)


def _as_tuple(check) -> list:
    return [check.checked, sorted(i.path for i in check.modified), sorted(i.path for i in check.missing)]


def test_python_verification_equals_importlib_and_pip(vimg: VerifyImage, scan) -> None:
    import json

    keys = {(d.location, d.name): k for k, d in dist_keys(scan.python_dists)}
    compared = 0
    for venv in ("opt/npenv", "opt/venv"):
        python = vimg.final / venv / "bin/python"
        site = str(next((vimg.final / venv / "lib").glob("python3*/site-packages")).relative_to(vimg.final))
        done = subprocess.run(
            [python, "-I", "-c", ORACLE, vimg.final, site], capture_output=True, text=True, check=True
        )
        oracle = json.loads(done.stdout)
        assert oracle, f"no distributions found in {venv}"
        for name, want in oracle.items():
            from containers.catalogers.python_dist import normalize_name

            key = keys[("/" + site, normalize_name(name))]
            assert _as_tuple(scan.files[key]) == want, key
            assert not scan.files[key].unclaimed, key
            compared += 1
        # pip's own file list: every file pip show -f names exists, or is the one deleted
        shown = subprocess.run(
            [python, "-m", "pip", "show", "-f", *oracle], capture_output=True, text=True, check=True
        ).stdout
        listed = {line.strip() for line in shown.splitlines() if line.startswith("  ")}
        assert len(listed) >= sum(v[0] + len(v[2]) for v in oracle.values())
    numpy = scan.files["python:numpy"]
    changed = vimg.changed()
    assert [(i.path, i.layer) for i in numpy.modified] == [("/" + changed["numpy_changed"], 3)]
    assert [(i.path, i.layer) for i in numpy.missing] == [("/" + changed["numpy_deleted"], 3)]
    assert numpy.checked > 500 and compared >= 5
    torch = scan.files["python:torch"]
    assert torch.checked > 10_000 and torch.clean  # torch's ~15,000-row RECORD, all intact


def _conffiles(final: Path) -> dict[str, list[str]]:
    """Package -> md5sum-style lines of its conffiles, read from dpkg's status by hand
    (`Conffiles:` continuation lines ` /etc/x <md5>`; obsolete ones carry a third word)."""
    out: dict[str, list[str]] = {}
    for stanza in (final / "var/lib/dpkg/status").read_text().split("\n\n"):
        name = re.search(r"^Package: (\S+)", stanza, re.M)
        block = re.search(r"^Conffiles:\n((?: .*\n?)+)", stanza, re.M)
        if name and block:
            rows = [line.split() for line in block.group(1).splitlines()]
            out[name.group(1)] = [f"{r[1]}  {r[0].lstrip('/')}" for r in rows if len(r) == 2]
    return out


def _md5sum_check(final: Path, md5sums: Path, extra: list[str] = ()) -> list:
    """[checked, modified, missing] as md5sum -c run inside the rootfs sees them (`extra`:
    more lines to check, the package's conffiles)."""
    lines = [x for x in md5sums.read_text().splitlines() if x.strip()] + list(extra)
    done = subprocess.run(
        ["md5sum", "-c", "--quiet", "-"], cwd=final, capture_output=True, text=True,
        input="\n".join(lines) + "\n",
    )
    modified, missing = [], []
    for line in done.stdout.splitlines():
        path, _, verdict = line.rpartition(": ")
        (missing if "open or read" in verdict else modified).append("/" + path)
    return [len(lines) - len(missing), sorted(modified), sorted(missing)]


def test_dpkg_verification_equals_md5sum_and_dpkg_verify(vimg: VerifyImage, scan) -> None:
    info = vimg.final / "var/lib/dpkg/info"
    sums = sorted(info.glob("*.md5sums"))
    assert len(sums) > 50
    conffiles = _conffiles(vimg.final)
    assert sum(map(len, conffiles.values())) > 20  # /etc files dpkg --verify checks too
    for md5sums in sums:
        name = md5sums.name[: -len(".md5sums")]
        want = _md5sum_check(vimg.final, md5sums, conffiles.get(name.split(":")[0], []))
        assert _as_tuple(scan.files[f"dpkg:{name}"]) == want, name
    verify = subprocess.run(
        ["dpkg", f"--root={vimg.final}", "--verify"], capture_output=True, text=True
    )
    flagged = {}
    for line in verify.stdout.splitlines():
        m = re.match(r"^(missing|\S{9})\s+(?:c\s+)?(/\S+)$", line)
        assert m, line
        flagged[m.group(2)] = "missing" if m.group(1) == "missing" else "modified"
    prov_flagged = {}
    for key, check in scan.files.items():
        if key.startswith("dpkg:"):
            prov_flagged.update({i.path: "modified" for i in check.modified})
            prov_flagged.update({i.path: "missing" for i in check.missing})
    assert prov_flagged == flagged
    changed = vimg.changed()
    deb = scan.files["dpkg:debianutils"]
    # the claims name usr-merged paths as dpkg lists them (bin/...), resolved in the image
    assert [(i.path, i.layer) for i in deb.modified] == [("/bin/run-parts", 3)]
    assert [(i.path, i.layer) for i in deb.missing] == [("/bin/tempfile", 3)]
    assert changed["dpkg_changed"] == "usr/bin/run-parts"
