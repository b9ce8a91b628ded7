# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""`prov compare` says, beside its verdict, whether each declared output is identical,
differs or is missing on a side: information, never a reason to refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from provenance.gate import compare_outputs
from tests.exec_support import PYTHON, penv, prov, prov_cache, runs_json  # noqa: F401

pytestmark = pytest.mark.slow  # processes and venvs: not in make test-fast

# writes same.txt (always the same), a.txt (its argument), extra.txt when asked
WRITER = """\
import sys
open("same.txt", "w").write("same\\n")
open("a.txt", "w").write(sys.argv[1] + "\\n")
if len(sys.argv) > 2:
    open("extra.txt", "w").write("extra\\n")
"""


def _exec(penv: dict, cwd: Path, outputs: list[str], *args: str) -> str:
    declared = [x for o in outputs for x in ("-o", o)]
    p = prov("exec", "-q", *declared, "--", PYTHON, "w.py", *args, env=penv, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return runs_json(penv)[0]["run_id"]


def test_outputs_identical_differing_and_missing_in_json_and_text(penv, tmp_path):
    (tmp_path / "w.py").write_text(WRITER)
    a = _exec(penv, tmp_path, ["same.txt", "a.txt", "gone.txt"], "1")
    b = _exec(penv, tmp_path, ["same.txt", "a.txt", "extra.txt", "gone.txt"], "2", "x")
    c = prov("compare", a, b, "--vary", "command", "--json", env=penv)
    assert c.returncode == 0, c.stdout  # outputs never refuse
    out = json.loads(c.stdout)["outputs"]
    assert {n: o["state"] for n, o in out.items()} == {
        "same.txt": "identical", "a.txt": "differs", "extra.txt": "missing_a",
        "gone.txt": "missing"}
    assert out["same.txt"]["a"] == out["same.txt"]["b"] and out["same.txt"]["a"].startswith(
        "sha256:")
    assert out["a.txt"]["a"] != out["a.txt"]["b"]
    assert out["extra.txt"]["a"] is None and out["extra.txt"]["b"].startswith("sha256:")
    text = prov("compare", a, b, "--vary", "command", env=penv).stdout.decode()
    assert "outputs: 1 identical, 1 differs, 1 missing in A, 1 missing in both" in text
    assert f"same.txt: identical ({out['same.txt']['a']})" in text
    assert f"a.txt: differs (A {out['a.txt']['a']}, B {out['a.txt']['b']})" in text
    assert f"extra.txt: missing in A (B {out['extra.txt']['b']})" in text
    # a refused comparison states its outputs too
    refused = prov("compare", a, b, env=penv)
    assert refused.returncode == 3 and b"a.txt: differs" in refused.stderr


def test_repeats_writing_to_other_names_are_paired(penv, tmp_path):
    (tmp_path / "w.py").write_text(WRITER.replace('"a.txt"', "sys.argv[2]"))
    a = _exec(penv, tmp_path, ["same.txt", "r1.txt"], "1", "r1.txt")
    b = _exec(penv, tmp_path, ["same.txt", "r2.txt"], "1", "r2.txt")
    c = prov("compare", a, b, "--vary", "command", "--json", env=penv)
    out = json.loads(c.stdout)["outputs"]
    assert out["r1.txt"]["state"] == "identical" and out["r1.txt"]["b_name"] == "r2.txt"
    assert out["same.txt"]["state"] == "identical"


def test_a_side_that_is_not_a_run_has_no_outputs(penv, tmp_path):
    (tmp_path / "w.py").write_text(WRITER)
    a = _exec(penv, tmp_path, ["a.txt"], "1")
    snap = tmp_path / "m.json"
    assert prov("snapshot", "--out", str(snap), "--format", "json", env=penv).returncode == 0
    c = prov("compare", a, str(snap), "--json", env=penv)
    assert "outputs" not in json.loads(c.stdout)
    text = prov("compare", a, str(snap), env=penv)
    assert b"outputs: not compared (B is a manifest file, not a run)" in text.stdout + text.stderr


def test_compare_outputs_by_name_and_by_content():
    f = {"type": "file", "digest": "sha256:aa", "size": 1}
    d = {"type": "dir", "digest": "sha256:tt", "files": 2, "size": 3}
    got = compare_outputs({"x": f, "d": d, "m": {"type": "missing"}, "p": f, "q": f},
                          {"x": {**f, "digest": "sha256:bb"}, "d": d, "m": f})
    states = {o.name: o.state for o in got}
    assert states == {"x": "differs", "d": "identical", "m": "missing_a", "p": "missing_b",
                      "q": "missing_b"}  # two left on one side: none paired
    assert compare_outputs({}, {}) == []
