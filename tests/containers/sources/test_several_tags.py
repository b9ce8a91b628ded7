"""An OCI layout holding several tagged images without platforms (as skopeo and umoci
write them): `prov pin oci:DIR` names the tags instead of guessing a platform."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.fixtures.images import BuiltImage

PROV = str(Path(sys.executable).with_name("prov"))


def test_pin_on_a_layout_with_two_tags_lists_them(image: BuiltImage, tmp_path: Path) -> None:
    layout = tmp_path / "two"
    for src, tag in ((image.small_oci, "small"), (image.oci, "big")):
        copy = ["skopeo", "copy", "--quiet", f"oci:{src}:nightly", f"oci:{layout}:{tag}"]
        subprocess.run(copy, check=True, timeout=120)
    assert '"platform"' not in (layout / "index.json").read_text()  # what skopeo writes
    lock = tmp_path / "l.toml"
    done = subprocess.run(
        [PROV, "pin", f"oci:{layout}", "-o", str(lock)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"prov: error: oci:{layout}: the layout holds 2 images; name one as oci:PATH:TAG "
        "(tags: big, small)"
    ]
    assert not lock.exists()
    ok = subprocess.run(
        [PROV, "pin", f"oci:{layout}:small", "-o", str(lock)], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
