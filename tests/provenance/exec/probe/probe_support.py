"""Run a Python program with the probe, without prov: the in-process half on its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from provenance.exec.probe.host import environment

PYTHON = sys.executable


def probe_env(run_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PROV_INPROCESS", None)
    env.update(extra)
    env["PROV_RUN_DIR"] = str(run_dir)
    env.update(environment(run_dir, env))
    return env


def run_probed(run_dir: Path, *args: str, timeout: float = 120, **extra: str):
    return subprocess.run([PYTHON, *args], env=probe_env(run_dir, **extra), capture_output=True,
                          timeout=timeout, cwd=run_dir)


def run_plain(cwd: Path, *args: str, timeout: float = 120, **extra: str):
    env = dict(os.environ)
    env.pop("PROV_RUN_DIR", None)
    env.update(extra)
    return subprocess.run([PYTHON, *args], env=env, capture_output=True, timeout=timeout,
                          cwd=cwd)


def probe_files(run_dir: Path) -> list[dict]:
    """Every process's file, each parsed (a half-written file would fail here)."""
    return [json.loads(p.read_text()) for p in sorted((run_dir / "probe").glob("*.json"))]


def build_wheel(out: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel, written by hand as the wheel spec lays it out (pip installs it)."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-{version}.dist-info"
    content = dict(files)
    content[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    content[f"{info}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: prov-tests\n"
                                "Root-Is-Purelib: true\nTag: py3-none-any\n")
    rows = []
    for rel, text in content.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        rows.append(f"{rel},sha256={digest.decode()},{len(text.encode())}")
    rows.append(f"{info}/RECORD,,")
    content[f"{info}/RECORD"] = "\n".join(rows) + "\n"
    path = out / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for rel, text in content.items():
            zf.writestr(rel, text)
    return path


def pip_install(wheel: Path, target: Path) -> None:
    subprocess.run([PYTHON, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--upgrade", "--target", str(target), str(wheel)], check=True,
                   capture_output=True, timeout=120)
