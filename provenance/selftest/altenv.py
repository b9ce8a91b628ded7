"""The second virtual environment for the package-version row: this environment's packages
plus another numpy that shadows ours (the kernels part of the workload computes with numpy).

It is a plain venv whose `.pth` adds this environment's site-packages *after* its own, so
only numpy differs. Built once (pip, from PyPI or its cache) and reused; the result is a
directory with `bin/python`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from provenance.model.atomic import replace_dir

CANDIDATES = ("2.2.6", "2.3.5", "2.4.6")


def alt_numpy_version() -> str:
    from importlib.metadata import version

    ours = version("numpy")
    return next(v for v in CANDIDATES if v != ours)


def ensure_alt_env(directory: Path) -> Path:
    """`directory/bin/python` of the second environment, built if missing (atomic rename)."""
    want = alt_numpy_version()
    python = directory / "bin" / "python"
    marker = directory / "prov-selftest-numpy"
    if python.exists() and marker.is_file() and marker.read_text().strip() == want:
        # the cache outlives checkouts: point it at the environment running now, every time
        _link_base(_purelib(directory))
        return python
    tmp = directory.with_name(directory.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    # symlinks: the venv's python is the base interpreter, as in a normal venv
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp)], check=True,
                   capture_output=True)
    site = _purelib(tmp)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
         f"numpy=={want}"], capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"pip install numpy=={want} failed: {proc.stderr.strip()[-400:]}")
    _link_base(site)
    (tmp / "prov-selftest-numpy").write_text(want + "\n")
    replace_dir(tmp, directory)
    return python


def _purelib(venv: Path) -> Path:
    return Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])


def _link_base(site: Path) -> None:
    """Processed at start-up: our site-packages (with its .pth files) after the venv's own."""
    ours = sysconfig.get_paths()["purelib"]
    (site / "zz_prov_selftest_base.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
