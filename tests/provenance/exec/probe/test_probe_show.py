"""`prov show` prints what the probe saw: the engine block, model files, flagged libraries."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.exec_support import (  # noqa: F401 - fixtures
    PYTHON,
    last_run,
    penv,
    prov,
    prov_cache,
)

SYSTEM_GOMP = Path("/usr/lib/x86_64-linux-gnu/libgomp.so.1")


@pytest.mark.skipif(not SYSTEM_GOMP.exists(), reason="no Debian libgomp1 here")
def test_show_prints_the_torch_change_and_the_shadowing_library(penv, tmp_path):
    hand = tmp_path / "hand"
    hand.mkdir()
    shutil.copy(SYSTEM_GOMP, hand / "libgomp.so.1")
    env = dict(penv, LD_LIBRARY_PATH=str(hand))
    code = "import torch; torch.set_num_threads(1); print(torch.ones(2).sum().item())"
    p = prov("exec", "-q", "--", PYTHON, "-c", code, env=env)
    assert p.returncode == 0, p.stderr
    rid = last_run(env)["run_id"]
    text = prov("show", rid, env=env).stdout.decode()
    lines = [" ".join(line.split()) for line in text.splitlines()]
    assert any(line.startswith("probe on: 1 process(es), all seen") for line in lines)
    assert any("changed by the run: num_threads" in line and line.endswith("-> 1")
               for line in lines)
    [shadow] = [line for line in lines if line.startswith("lib shadowing")]
    assert f"{hand / 'libgomp.so.1'} (none) is mapped where" in shadow
    assert "torch/lib/libgomp.so.1 (wheel:torch==" in shadow
    assert any(line == f"lib unowned {hand / 'libgomp.so.1'}" for line in lines)
