"""The torch probe against torch itself, its cache, and its hard timeout."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

from provenance.collectors import torch_probe

ORACLE = ("import json, torch; print(json.dumps([torch.__version__, "
          "torch.backends.cpu.get_cpu_capability(), torch.get_num_threads()]))")


def test_probe_matches_torch_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path))
    version, capability, threads = json.loads(subprocess.run(
        [sys.executable, "-c", ORACLE], capture_output=True, text=True, check=True).stdout)
    first = torch_probe.collect([], torch_fingerprint="sha256:test")
    # torch.__version__ is the oracle; the wheel's METADATA may lack the local tag (+cu130)
    assert first["version"] == version
    assert first["version"].split("+")[0] == metadata.version("torch").split("+")[0]
    assert first["flags"]["cpu_capability"] == capability
    assert first["flags"]["num_threads"] == threads
    assert first["cache"] == "miss"
    second = torch_probe.collect([], torch_fingerprint="sha256:test")
    assert second["cache"] == "hit"
    assert {k: v for k, v in second.items() if k != "cache"} == {k: v for k, v in first.items() if k != "cache"}
    # a variable torch reads at start-up is part of the key
    monkeypatch.setenv("TORCH_SHOW_CPP_STACKTRACES", "1")
    assert torch_probe.collect([], torch_fingerprint="sha256:test")["cache"] == "miss"


def test_a_changed_reader_is_not_answered_from_the_cache(tmp_path, monkeypatch):
    """The reader's bytes are part of the key: an older reader's keys never come back."""
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path))
    assert torch_probe.collect([], torch_fingerprint="sha256:test")["cache"] == "miss"
    assert torch_probe.collect([], torch_fingerprint="sha256:test")["cache"] == "hit"
    edited = tmp_path / "reader" / "torch_state.py"
    edited.parent.mkdir()
    edited.write_text(torch_probe.READER.read_text() + "# edited\n")
    monkeypatch.setattr(torch_probe, "READER", edited)
    section = torch_probe.collect([], torch_fingerprint="sha256:test")
    assert section["cache"] == "miss" and "num_threads" in section["flags"]


def test_hung_import_is_cut_off(tmp_path, monkeypatch):
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path))
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(0o755)
    section = torch_probe.collect([], python=str(fake), torch_fingerprint="x", timeout=0.5)
    assert section == {"probe": "unavailable: import torch timed out after 0.5 s"}


def test_failed_import_is_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path))
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named torch' >&2\nexit 1\n")
    fake.chmod(0o755)
    section = torch_probe.collect([], python=str(fake), torch_fingerprint="x")
    assert section["probe"].startswith("unavailable: import torch failed: ModuleNotFoundError")
