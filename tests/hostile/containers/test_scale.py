"""Images of hostile scale (issue #30 item 2): the counts an image states are capped, and
what is under the caps is read in full. Built in code by tests/fixtures/scale_images.py at a
scale that exercises each cap; the full scale (50,000 dist-infos, a layer listed 100,000
times, 10^5 Env entries) and the time figures live in bench/bench_images_scale.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

from containers.errors import ImageError
from containers.limits import MAX_CONFIG_ENTRIES, MAX_LAYERS
from tests.fixtures.scale_images import many_dists_image, many_env_image, repeated_layer_archive

PROV = [sys.executable, "-c", "import sys; from provenance.cli import main; sys.exit(main())"]


def _dir(path: Path) -> Path:
    path.mkdir()
    return path


def _prov(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*PROV, *argv], capture_output=True, text=True, timeout=300)


def _refused(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert all(w in proc.stderr for w in words), proc.stderr


def test_a_layer_listed_up_to_the_cap_is_pinned_and_past_it_refused(tmp_path: Path) -> None:
    ok = repeated_layer_archive(_dir(tmp_path / "ok"), MAX_LAYERS)
    proc = _prov("pin", ok, "-o", str(tmp_path / "lock.toml"))
    assert proc.returncode == 0, proc.stderr
    lock = tomllib.loads((tmp_path / "lock.toml").read_text())
    layers = lock["layers"]
    assert len(layers) == MAX_LAYERS and len({la["digest"] for la in layers}) == 1
    assert len({la["chain_id"] for la in layers}) == MAX_LAYERS  # each listing its own chain
    # the same bytes written again do not move the package: it came with the first listing
    assert lock["packages"]["python:six"] == {"version": "1.17.0", "layer": 0}
    over = repeated_layer_archive(_dir(tmp_path / "over"), MAX_LAYERS + 1)
    _refused(_prov("pin", over, "-o", str(tmp_path / "over.toml")),
             f"{MAX_LAYERS + 1}, over the limit of {MAX_LAYERS}")
    assert not (tmp_path / "over.toml").exists()


def test_every_env_entry_under_the_cap_is_recorded_and_past_it_refused(tmp_path: Path) -> None:
    src = many_env_image(_dir(tmp_path / "ok"), 2000, labels=500)
    proc = _prov("snapshot", "--image", src, "--out", str(tmp_path / "snap.toml"))
    assert proc.returncode == 0, proc.stderr
    config = tomllib.loads((tmp_path / "snap.toml").read_text())["image"]["config"]
    assert config["env"] == {f"VAR_{i}": f"value{i}" for i in range(2000)}
    assert len(config["labels"]) == 500
    over = many_env_image(_dir(tmp_path / "over"), MAX_CONFIG_ENTRIES + 1)
    for argv in (["sbom", "--image", over, "-o", str(tmp_path / "sbom.json")],
                 ["pin", over, "-o", str(tmp_path / "lock.toml")]):
        _refused(_prov(*argv), "config.Env entries", f"over the limit of {MAX_CONFIG_ENTRIES}")


def test_many_dist_infos_are_pinned_as_pip_lists_them(tmp_path: Path) -> None:
    """500 dist-info directories: every one in the lock with pip's own name and version
    (pip list over the layer, extracted by real tar, is the oracle)."""
    src = many_dists_image(tmp_path, 500)
    proc = _prov("pin", src, "-o", str(tmp_path / "lock.toml"))
    assert proc.returncode == 0, proc.stderr
    lock = tomllib.loads((tmp_path / "lock.toml").read_text())
    pinned = {k.split(":", 1)[1]: v["version"] for k, v in lock["packages"].items()
              if k.startswith("python:")}
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    blobs = sorted((tmp_path / "oci" / "blobs" / "sha256").iterdir(),
                   key=lambda p: -p.stat().st_size)
    with tarfile.open(blobs[0], "r:gz") as tf:  # the layer is the largest blob
        tf.extractall(rootfs, filter="data")
    pip = subprocess.run([sys.executable, "-m", "pip", "list", "--format=json", "--path",
                          str(rootfs / "usr/lib/python3/dist-packages")],
                         capture_output=True, text=True, check=True)
    listed = {d["name"]: d["version"] for d in json.loads(pip.stdout)}
    assert len(listed) == 500 and pinned == listed


def test_dist_infos_past_the_cap_are_refused(tmp_path: Path, monkeypatch) -> None:
    """The rule at a scale a test can afford: the cap lowered to 100, 101 dist-infos."""
    from containers import dists
    from containers.scan import scan_image

    monkeypatch.setattr(dists, "MAX_PYTHON_DISTS", 100)
    assert scan_image(many_dists_image(_dir(tmp_path / "ok"), 100)).python["packages"]
    with pytest.raises(ImageError, match="dist-info and egg-info directories: 101, over the "
                                         "limit of 100"):
        scan_image(many_dists_image(_dir(tmp_path / "over"), 101))
