"""The one torch-state reader: the snapshot's `torch.flags.*` and the probe's
`runtime.torch.flags.*` are the same list read by the same file, in one run's manifest."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from provenance.collectors.standalone import torch_state
from provenance.store import open_store
from tests.exec_support import (  # noqa: F401 - fixtures
    PYTHON,
    last_run,
    penv,
    prov,
    prov_cache,
)

STANDALONE = Path(torch_state.__file__).parent


@pytest.mark.parametrize("path", sorted(STANDALONE.glob("*.py")), ids=lambda p: p.name)
def test_readers_parse_as_python38_and_import_only_the_standard_library(path: Path) -> None:
    """They run in the target's interpreter (3.8+) and in the user's program, without prov."""
    for node in ast.walk(ast.parse(path.read_text(), feature_version=(3, 8))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: a relative import cannot load standalone"
            names = [node.module or ""]
        else:
            continue
        assert all(n.split(".")[0] in sys.stdlib_module_names for n in names), (path, names)


def run_manifest(penv: dict[str, str], tmp_path: Path, code: str) -> dict:
    """`prov exec` a script; its run manifest: the snapshot's sections and the run's facts."""
    script = tmp_path / "work.py"
    script.write_text(code)
    p = prov("exec", "-q", "--", PYTHON, str(script), env=penv, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    rec = last_run(penv)
    return open_store(penv["PROV_STORE"]).manifest_object(rec["run_manifest"]).facts


def fresh_defaults() -> dict:
    """The oracle: torch's own getters in a fresh interpreter that changes nothing."""
    code = ("import json, torch; print(json.dumps([torch.get_num_threads(), "
            "torch.get_float32_matmul_precision(), torch.backends.cpu.get_cpu_capability()]))")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True)
    threads, precision, capability = json.loads(out.stdout)
    return {"num_threads": threads, "float32_matmul_precision": precision,
            "cpu_capability": capability}


def test_a_script_that_changes_nothing_has_the_snapshots_flags(penv, tmp_path):
    facts = run_manifest(penv, tmp_path, "import torch\nprint(torch.ones(2).sum().item())\n")
    snapshot, probed = facts["torch"]["flags"], facts["runtime"]["torch"]["flags"]
    assert set(snapshot) >= {name for name, _ in torch_state.FLAGS}  # the one list
    assert probed == snapshot  # every key, every value
    assert "changed" not in facts["runtime"]["torch"]
    for name, value in fresh_defaults().items():
        assert snapshot[name] == value, name
    # one fact, one key: the flags are no longer also at the section's top
    assert not {"num_threads", "num_interop_threads", "cpu_capability", "sdpa"} & set(
        facts["torch"])


def test_set_num_threads_shows_in_the_probes_key_only(penv, tmp_path):
    default = fresh_defaults()["num_threads"]
    if default == 1:
        pytest.skip("one CPU thread by default: set_num_threads(1) changes nothing")
    facts = run_manifest(penv, tmp_path, "import torch\ntorch.set_num_threads(1)\n")
    assert facts["torch"]["flags"]["num_threads"] == default  # what a fresh process gets
    assert facts["runtime"]["torch"]["flags"]["num_threads"] == 1  # what this one had
    changed = facts["runtime"]["torch"]["changed"]
    assert set(changed) == {"num_threads"}
    assert (changed["num_threads"]["at_import"], changed["num_threads"]["at_exit"]) == (default, 1)
    snapshot, probed = facts["torch"]["flags"], facts["runtime"]["torch"]["flags"]
    assert {k for k in snapshot if snapshot[k] != probed.get(k)} == {"num_threads"}
