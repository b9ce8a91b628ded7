"""Progress on long work: `prov snapshot --verify-files` draws a progress line on stderr while
files are re-hashed when stderr is a terminal (a real pty), and writes nothing to stderr when
it is piped; the same one display (`provenance.cli.progress`) serves `prov lock`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from provenance.collectors import python_env
from tests.helpers import PROV
from tests.provenance.collectors.test_python_env import make_dist


def read_all(fd: int) -> bytes:
    seen = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO once the other side is closed
            break
        if not chunk:
            break
        seen += chunk
    return seen


def on_a_pty(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, bytes]:
    import pty

    master, slave = pty.openpty()
    proc = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=slave,
                          stdin=subprocess.DEVNULL, timeout=300)
    os.close(slave)
    seen = read_all(master)
    os.close(master)
    return proc, seen


@pytest.fixture()
def venv(tmp_path) -> str:
    base = shutil.which("python3") or sys.executable
    target = tmp_path / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(target)], check=True, timeout=120)
    python = str(target / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    files = {f"alpha/m{i}.py": f"x = {i}\n".encode() for i in range(40)}
    make_dist(Path(site), "alpha", "1.0", files)
    return python


def test_verify_files_shows_progress_on_a_terminal_and_nothing_piped(venv, tmp_path):
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store"), "TERM": "xterm",
           "PROV_CACHE_DIR": str(tmp_path / "cache")}
    args = [PROV, "snapshot", "--python", venv, "--verify-files"]
    proc, seen = on_a_pty(args, env)
    assert proc.returncode == 0, seen[-2000:]
    assert b"re-hashing installed files:" in seen and b"/40" in seen
    piped = subprocess.run(args, env=env, capture_output=True, timeout=300)
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert piped.stderr == b""
    quiet, seen_json = on_a_pty([*args, "--json"], env)  # --json: quiet, as an image scan
    assert quiet.returncode == 0 and b"re-hashing" not in seen_json


def test_the_collector_reports_every_file_it_hashes(tmp_path):
    site = tmp_path / "site"
    make_dist(site, "beta", "1.0", {f"beta/f{i}.py": b"y = 1\n" for i in range(25)})
    calls: list[tuple[int, int]] = []
    python_env.collect([str(site)], verify=True, use_cache=False,
                       progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (0, 25) and calls[-1] == (25, 25)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_the_child_reports_progress_lines_that_prov_reads(venv):
    from provenance.collectors import foreign

    seen: list[tuple[int, int]] = []
    started = foreign.start(venv, True, progress=True)
    section = foreign.finish(started, venv, 600, [], on_progress=lambda d, t: seen.append((d, t)))
    assert isinstance(section, dict) and section["packages"]["alpha"]["version"] == "1.0"
    assert seen[0] == (0, 40) and seen[-1] == (40, 40)


def test_an_image_scan_draws_its_layer_bars_on_stderr_not_stdout(tmp_path):
    """The same display for image scans: on stderr when it is a terminal (stdout piped keeps
    only the summary), nothing on stderr when piped."""
    from tests.fixtures.oci_pack import LayerSpec, image_config, layer_tar, write_oci

    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/os-release").write_text('ID=debian\nPRETTY_NAME="Test"\n')
    (root / "blob.bin").write_bytes(os.urandom(1 << 20))
    layers = [layer_tar(LayerSpec(root=root))]
    write_oci(tmp_path / "oci", layers, image_config(layers, ["ADD ."], []), "t")
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store"), "TERM": "xterm"}
    args = [PROV, "snapshot", "--image", f"oci:{tmp_path / 'oci'}"]
    proc, seen = on_a_pty(args, env)
    assert proc.returncode == 0, seen[-2000:]
    assert b"layer   0" in seen and b"\x1b[" not in proc.stdout
    piped = subprocess.run(args, env=env, capture_output=True, timeout=300)
    assert piped.returncode == 0 and piped.stderr == b""
