"""Where `prov lock` says each wheel came from, checked against what the installers record,
and the lock installed by uv and by pip, then verified.

One environment, four ways in: `six` and `idna` by uv from an index (a PEP 503 index on
127.0.0.1), `provtiny` by uv from a `--find-links` directory, `provpip` by pip from a wheel
path (pip records it with its hash in `direct_url.json`), `provuv` by uv from a wheel path
(uv records the path, no hash). pip's configured find-links (`PIP_FIND_LINKS`) holds copies of
every wheel: a file of the right name there is no evidence of where a package came from.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.pylock import Pylock

from tests import installer_tools as tools
from tests.helpers import assert_one_line_error, run_prov
from tests.lockfiles.wheel_index import build_wheel, serve, sha256

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # venvs, installers: not in make test-fast
FROM_INDEX = ["six==1.16.0", "idna==3.10"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("origin")
    with serve(root / "index") as index:
        for pin in FROM_INDEX:
            index.add(tools.wheel(pin))
        house = root / "wheelhouse"
        build_wheel(house, "provtiny", "1.0", "TINY = 1\n")
        direct = root / "direct"
        build_wheel(direct, "provpip", "1.0", "PIP = 1\n")
        build_wheel(direct, "provuv", "1.0", "UV = 1\n")
        mirror = root / "pip-find-links"  # what a machine-wide pip.conf might name
        for wheel in [*(root / "index/files").glob("*.whl"), *house.glob("*.whl")]:
            mirror.mkdir(exist_ok=True)
            (mirror / wheel.name).write_bytes(wheel.read_bytes())
        python = new_venv(root / "venv")
        tools.uv_install(python, "--index-url", index.url, *FROM_INDEX)
        tools.uv_install(python, "--no-index", "--find-links", str(house), "provtiny==1.0")
        tools.uv_install(python, str(direct / "provuv-1.0-py3-none-any.whl"))
        subprocess.run([tools.tool("pip"), "--python", python, "install", "-q", "--no-deps",
                        "--isolated", str(direct / "provpip-1.0-py3-none-any.whl")], check=True)
        yield {"root": root, "index": index, "house": house, "mirror": mirror,
               "python": python}


def new_venv(path: Path) -> str:
    """A venv without pip (a prov-written lock names every distribution a venv holds)."""
    subprocess.run([tools.tool("python"), "-m", "venv", "--without-pip", str(path)], check=True)
    return str(path / "bin" / "python")


def lock(world, out: Path, *args: str) -> subprocess.CompletedProcess:
    return run_prov("lock", "--python", world["python"], "--out", str(out),
                    "--index-url", world["index"].url, *args,
                    env={"PIP_FIND_LINKS": str(world["mirror"])})


def packages(path: Path) -> dict[str, dict]:
    return {p["name"]: p for p in tomllib.loads(path.read_text())["packages"]}


@pytest.fixture(scope="module")
def locked(world) -> Path:
    out = world["root"] / "out" / "pylock.toml"
    out.parent.mkdir()
    p = lock(world, out, "--find-links", str(world["house"]))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == (
        f"locked 5 packages to {out} (2 from direct_url, 1 from find-links, 2 from index)")
    return out


def test_each_package_says_what_its_installer_recorded(world, locked):
    Pylock.from_dict(tomllib.loads(locked.read_text()))  # the reference validator
    got = packages(locked)
    index_files = world["root"] / "index" / "files"
    for name in ("six", "idna"):  # from the index, with copies in pip's find-links
        pkg = got[name]
        wheel = next(index_files.glob(f"{name}-*.whl"))
        assert pkg["index"] == world["index"].url
        assert pkg["wheels"] == [{"name": wheel.name, "url": f"{world['index'].url[:-7]}/files/"
                                  f"{wheel.name}", "hashes": {"sha256": sha256(wheel)}}]
        assert pkg["tool"]["prov"]["origin"] == "unrecorded"
        assert pkg["tool"]["prov"]["hash-source"] == f"index:{world['index'].url}"
    tiny = got["provtiny"]  # found in the named --find-links, its files checked
    assert [w["path"] for w in tiny["wheels"]] == [
        str(world["house"] / "provtiny-1.0-py3-none-any.whl")]
    assert "index" not in tiny
    assert tiny["tool"]["prov"]["origin"] == "unrecorded"
    assert tiny["tool"]["prov"]["content-checked"] is True
    for name, hashed_here in (("provpip", False), ("provuv", True)):
        pkg = got[name]  # PEP 751: a direct reference is an archive
        wheel = world["root"] / "direct" / f"{name}-1.0-py3-none-any.whl"
        assert "wheels" not in pkg and "index" not in pkg
        assert pkg["archive"]["path"] == str(wheel)
        assert pkg["archive"]["hashes"] == {"sha256": sha256(wheel)}
        assert pkg["tool"]["prov"]["origin"] == "direct_url"
        assert ("content-checked" in pkg["tool"]["prov"]) is hashed_here
    recorded = json.loads(next(Path(world["python"]).parents[1].glob(
        "lib/python3*/site-packages/provpip-1.0.dist-info/direct_url.json")).read_text())
    assert recorded["archive_info"]["hashes"]["sha256"] == sha256(
        world["root"] / "direct" / "provpip-1.0-py3-none-any.whl")  # pip's own record


def test_a_wheel_of_the_same_name_is_no_evidence(world, tmp_path):
    out = tmp_path / "pylock.toml"
    err = assert_one_line_error(lock(world, out))  # pip's find-links hold provtiny: not asked
    assert "1 package(s) have no known artifact: provtiny" in err and "--find-links" in err
    assert not out.exists()
    other = tmp_path / "other"
    rebuilt = build_wheel(other, "provtiny", "1.0", "TINY = 2\n")  # same name, other files
    p = lock(world, out, "--find-links", str(other), "--allow-missing-hashes")
    assert p.returncode == 0, p.stderr
    tiny = packages(out)["provtiny"]
    assert "wheels" not in tiny
    assert f"{rebuilt} holds other files than the installed ones" in (
        tiny["tool"]["prov"]["artifact"])


def test_a_wheel_beside_the_lock_is_named_relative_to_it(world, tmp_path):
    house = tmp_path / "project" / "wheels"  # PEP 751: relative to the lock file
    house.mkdir(parents=True)
    (house / "provtiny-1.0-py3-none-any.whl").write_bytes(
        (world["house"] / "provtiny-1.0-py3-none-any.whl").read_bytes())
    out = tmp_path / "project" / "pylock.toml"
    assert lock(world, out, "--find-links", str(house)).returncode == 0
    assert packages(out)["provtiny"]["wheels"][0]["path"] == "wheels/provtiny-1.0-py3-none-any.whl"
    python = new_venv(tmp_path / "venv")
    tools.uv("pip", "install", "-q", "--python", python, "-r", str(out), cwd=tmp_path)
    assert run_prov("verify", "--lock", str(out), "--python", python).returncode == 0


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_the_lock_installs_with_uv_and_pip_and_verifies(world, locked, installer, tmp_path):
    python = new_venv(tmp_path / "venv")
    if installer == "uv":
        tools.uv_install(python, "-r", str(locked))
    else:
        subprocess.run([tools.tool("pip"), "--python", python, "install", "-q", "--isolated",
                        "-r", str(locked)], check=True, capture_output=True)
    p = run_prov("verify", "--lock", str(locked), "--python", python)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == "ok: 5 locked packages match (pylock by prov-llm)"
    again = tmp_path / "pylock.toml"  # the lock of what the installer made: the same lock
    p = run_prov("lock", "--python", python, "--out", str(again), "--index-url",
                 world["index"].url, "--find-links", str(world["house"]))
    assert p.returncode == 0, p.stderr
    before, after = packages(locked), packages(again)
    assert {n: {k: v for k, v in pkg.items() if k != "tool"} for n, pkg in after.items()} == {
        n: {k: v for k, v in pkg.items() if k != "tool"} for n, pkg in before.items()}
    assert {n: pkg["tool"]["prov"]["origin"] for n, pkg in after.items()} == {
        "idna": "unrecorded", "provpip": "direct_url", "provtiny": "unrecorded",
        "provuv": "direct_url", "six": "unrecorded"}  # the archives are recorded again
