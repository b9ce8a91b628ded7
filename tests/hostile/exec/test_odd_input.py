"""`prov exec` given what a POSIX system allows and Unicode does not (issue #30): names,
values, arguments and directories that are not UTF-8, a working directory that was deleted,
an empty output path. Valid input is run and recorded (a byte that is not UTF-8 is kept as
`\\xNN`, as Python's backslashreplace spells it); bad input is one line before anything runs.
The oracle for the spelling is the raw bytes the child process itself reports."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.exec_support import PROV, PYTHON, last_run, prov
from tests.hostile.faults import one_error_line

# The child reports the bytes it was given: its argv, the variables, its cwd.
REPORT = ("import os, sys, json\n"
          "print(json.dumps({'argv': os.fsencode(sys.argv[1]).hex(),\n"
          "                  'value': os.environb[b'VLLM_ODD'].hex(),\n"
          "                  'cwd': os.fsencode(os.getcwd()).hex()}))\n"
          "open(sys.argv[1], 'w').close()\n")


def spelled(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


@pytest.mark.timeout(120)
def test_names_values_arguments_and_cwd_that_are_not_utf8_are_recorded(penv, tmp_path):
    odd_dir = os.fsencode(tmp_path) + b"/dir-\xff"
    os.mkdir(odd_dir)
    arg, value = b"out-\xfe.txt", b"v\xff\xfe"
    env = {os.fsencode(k): os.fsencode(v) for k, v in penv.items()}
    env.update({b"VLLM_ODD": value, b"ODD_\xffNAME": b"1"})
    argv = [os.fsencode(PROV), b"exec", b"-o", arg, b"--", os.fsencode(PYTHON), b"-c",
            REPORT.encode(), arg]
    p = subprocess.run(argv, env=env, cwd=odd_dir, capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stdout)  # what the child got: prov passed every byte unchanged
    assert bytes.fromhex(seen["argv"]) == arg and bytes.fromhex(seen["value"]) == value
    assert bytes.fromhex(seen["cwd"]) == odd_dir
    rec = last_run(penv)
    assert rec["cwd"] == spelled(odd_dir)
    assert rec["command"][-1] == spelled(arg)
    assert list(rec["outputs"]) == [spelled(arg)]
    text = prov("show", rec["run_id"], env=penv)
    assert text.returncode == 0 and spelled(odd_dir).encode() in text.stdout, text.stderr
    listing = prov("runs", env=penv)
    assert listing.returncode == 0 and spelled(arg).encode() in listing.stdout
    manifest = prov("diff", rec["run_id"], rec["run_id"], "--json", env=penv)
    assert manifest.returncode == 0, manifest.stderr
    # the identity-relevant variable reached the run's manifest, spelled out
    snap = prov("snapshot", "--json", env={**penv, "VLLM_ODD": os.fsdecode(value)})
    assert snap.returncode == 0, snap.stderr
    assert json.loads(snap.stdout)["env"]["VLLM_ODD"] == spelled(value)


@pytest.mark.timeout(120)
def test_snapshot_with_odd_variables_writes_files_that_read_back(penv, tmp_path):
    env = {**penv, "VLLM_ODD": os.fsdecode(b"\xff"), os.fsdecode(b"CUDA_\xff"): "1"}
    for fmt in ("toml", "json"):
        out = tmp_path / f"m.{fmt}"
        p = prov("snapshot", "-o", str(out), "-f", fmt, env=env)
        assert p.returncode == 0, p.stderr
        out.read_bytes().decode("utf-8")  # valid UTF-8, strictly
    p = prov("diff", str(tmp_path / "m.toml"), str(tmp_path / "m.json"), env=env)
    assert p.returncode == 0, p.stdout + p.stderr  # the same facts, both ways written


@pytest.mark.timeout(120)
def test_a_deleted_working_directory_runs_the_command_unrecorded(penv, tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    marker = tmp_path / "ran"
    script = (f"import os; os.rmdir({str(gone)!r}); os.execv({PROV!r}, [{PROV!r}, 'exec', "
              f"'--', {PYTHON!r}, '-c', \"open({str(marker)!r}, 'w')\"])")
    p = subprocess.run([PYTHON, "-c", script], cwd=gone, env=penv, capture_output=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0 and marker.exists(), p.stderr
    notes = [ln for ln in p.stderr.decode().splitlines() if ln.startswith("prov:")]
    assert len(notes) == 2 and all("NOT RECORDED" in n and "working directory no longer "
                                   "exists" in n for n in notes), p.stderr


def test_an_empty_output_path_is_refused_before_the_command_runs(penv, tmp_path):
    marker = tmp_path / "ran"
    for args in (["-o", ""], ["--output="], ["-o", "x", "-o", ""]):
        p = prov("exec", *args, "--", "touch", str(marker), env=penv)
        assert p.returncode == 2 and "empty value" in one_error_line(p.stderr), args
    assert not marker.exists()
    assert not os.path.exists(penv["PROV_STORE"])  # nothing recorded, nothing made
