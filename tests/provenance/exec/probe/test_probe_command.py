"""A user's script under `prov exec`: its command line and parameters are identity, where it
writes is not, and the script is known by its content, not by the path it was called by."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json

import pytest

from tests.exec_support import (  # noqa: F401 - fixtures
    PYTHON,
    last_run,
    penv,
    prov,
    prov_cache,
)

SCRIPT = """
import argparse
ap = argparse.ArgumentParser()
ap.add_argument("--temp", type=float, default=0.0)
ap.add_argument("--out", default="out.txt")
args = ap.parse_args()
with open(args.out, "w") as fh:
    fh.write(repr(round(3.0 * (1 + args.temp), 6)))
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "w.py"
    path.write_text(SCRIPT)
    return path


def run(penv, cwd, *args):
    p = prov("exec", "-q", *args, env=penv, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return last_run(penv)["run_id"]


def compare(penv, a, b, *vary):
    flags = [x for v in vary for x in ("--vary", v)]
    p = prov("compare", a, b, *flags, "--json", env=penv)
    return p.returncode, json.loads(p.stdout)


def test_a_param_run_keeps_its_command_line(penv, script, tmp_path):
    a = run(penv, tmp_path, "-p", "lbl=x", "--", PYTHON, "w.py", "--temp", "0.0")
    b = run(penv, tmp_path, "-p", "lbl=x", "--", PYTHON, "w.py", "--temp", "0.9")
    rc, doc = compare(penv, a, b)
    assert rc == 3 and list(doc["refused"]) == ["code.args.temp"], doc["refused"]
    assert doc["refused"]["code.args.temp"]["a"] == "0.0"
    # the same run without -p differs only in its (identity) parameter
    c = run(penv, tmp_path, "--", PYTHON, "w.py", "--temp", "0.0")
    rc, doc = compare(penv, a, c)
    assert rc == 3 and list(doc["refused"]) == ["run.params.lbl"], doc["refused"]


def test_parameters_are_identity_and_tags_are_labels(penv, script, tmp_path):
    a = run(penv, tmp_path, "-p", "temperature=1.0", "--tag", "who=a", "--", PYTHON, "w.py")
    b = run(penv, tmp_path, "-p", "temperature=0.7", "--tag", "who=b", "--", PYTHON, "w.py")
    rc, doc = compare(penv, a, b)
    assert rc == 3 and list(doc["refused"]) == ["run.params.temperature"], doc["refused"]
    rc, doc = compare(penv, a, b, "run.params.temperature")
    assert rc == 0, doc["refused"]


def test_repeats_writing_to_different_relative_outputs_compare_clean(penv, script, tmp_path):
    a = run(penv, tmp_path, "-o", "r1.txt", "--", PYTHON, "w.py", "--out", "r1.txt")
    b = run(penv, tmp_path, "-o", "r2.txt", "--", PYTHON, "w.py", "--out", "r2.txt")
    rc, doc = compare(penv, a, b)
    assert rc == 0, doc["refused"]
    record = json.loads(prov("show", a, "--json", env=penv).stdout)
    code = record["facts"]["code"]
    assert code["args"] == {"out": "<output>"} and code["program"] == ["python", "<script>"]
    # while an input that changes still refuses
    c = run(penv, tmp_path, "-o", "r3.txt", "--", PYTHON, "w.py", "--out", "r3.txt",
            "--temp", "0.5")
    assert compare(penv, a, c)[0] == 3


def test_the_same_script_by_relative_and_absolute_path_compares_clean(penv, script, tmp_path):
    a = run(penv, tmp_path, "--", PYTHON, "w.py", "--temp", "0.1")
    b = run(penv, tmp_path, "--", PYTHON, str(script), "--temp", "0.1")
    rc, doc = compare(penv, a, b)
    assert rc == 0, doc["refused"]
    script.write_text(SCRIPT + "# edited\n")
    c = run(penv, tmp_path, "--", PYTHON, str(script), "--temp", "0.1")
    rc, doc = compare(penv, a, c)
    assert rc == 3 and list(doc["refused"]) == ["code.script.sha256"], doc["refused"]
