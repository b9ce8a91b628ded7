"""What a run took from its environment (envread.py): a value the run set itself, in the
process or in the start environment of a process it started, is no input from the
environment; a helper process that exists on some runs only adds nothing to identity."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json
from pathlib import Path

from provenance.exec.probe.envread import child_env_facts, env_read_facts, process_env_facts
from provenance.exec.probe.processes import Process
from tests.exec_support import PYTHON, last_run, penv, prov, prov_cache  # noqa: F401
from tests.provenance.exec.probe.probe_support import probe_files, run_probed
from tests.provenance.exec.probe.reads_support import compare, exec_run

COMMAND = {"HOME": "/root", "MY_SETTING": "a", "LD_LIBRARY_PATH": "/usr/lib"}


def proc(pid: int, ppid: int, read: list[str], **start: str) -> Process:
    return Process(pid=pid, ppid=ppid, state="on", stage="exit", exit_via="atexit", argv=[],
                   orig_argv=[], env_read=read, environ={**COMMAND, **start})


MAIN = proc(10, 1, ["MY_SETTING"])
# a compile worker the main process started with variables of its own (cold cache only)
HELPER = proc(11, 10, ["MY_SETTING", "LD_LIBRARY_PATH", "TORCHINDUCTOR_COMPILE_THREADS"],
              LD_LIBRARY_PATH="/venv/cv2/../../lib64", TORCHINDUCTOR_COMPILE_THREADS="1")


def test_a_child_reads_what_came_from_the_command_not_what_its_parent_set():
    assert env_read_facts([MAIN, HELPER], COMMAND) == {"MY_SETTING": "a"}
    assert env_read_facts([MAIN, HELPER], COMMAND) == env_read_facts([MAIN], COMMAND)
    # without the command's environment (a run prov did not start) nothing is dropped
    assert set(env_read_facts([MAIN, HELPER], None)) == {
        "MY_SETTING", "LD_LIBRARY_PATH", "TORCHINDUCTOR_COMPILE_THREADS"}


def test_a_child_start_env_is_context_a_re_executed_command_is_identity():
    assert process_env_facts([MAIN, HELPER], COMMAND) == {}
    assert child_env_facts([MAIN, HELPER], COMMAND) == {
        "LD_LIBRARY_PATH": "/venv/cv2/../../lib64", "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    re_executed = proc(10, 1, [], PYTHONHASHSEED="1")  # os.execve: same pid, prov's child
    assert process_env_facts([MAIN, re_executed], COMMAND) == {"PYTHONHASHSEED": "1"}
    forked = Process(**{**vars(HELPER), "pid": 12, "ppid": 99, "forked_from": 10})
    assert process_env_facts([MAIN, forked], COMMAND) == {}


OWN = """
import os
os.environ["SET_FIRST"] = "mine"
os.environ.get("SET_FIRST")
os.environ.update(UPDATED="mine"); os.environ["UPDATED"]
os.getenv("READ_FIRST"); os.environ["READ_FIRST"] = "mine"; os.getenv("READ_FIRST")
"""


def test_a_name_the_process_set_before_reading_it_is_not_noted(tmp_path):
    (tmp_path / "own.py").write_text(OWN)
    p = run_probed(tmp_path, "own.py", SET_FIRST="outer", UPDATED="outer", READ_FIRST="outer")
    assert p.returncode == 0, p.stderr
    (main,) = probe_files(tmp_path)
    assert "READ_FIRST" in main["env"]["read"]
    assert not {"SET_FIRST", "UPDATED"} & set(main["env"]["read"])


HELPED = """
import os, subprocess, sys
os.getenv("MY_SETTING")
if os.path.exists("cold"):  # a cache miss: a helper, with variables of the parent's own
    os.remove("cold")
    child = "import os; os.getenv('MY_SETTING'); os.getenv('HELPER_THREADS')"
    subprocess.run([sys.executable, "-c", child], check=True,
                   env=dict(os.environ, HELPER_THREADS="1"))
"""


def test_a_helper_on_one_run_only_adds_no_difference(penv, tmp_path: Path):
    (tmp_path / "helped.py").write_text(HELPED)
    (tmp_path / "cold").write_text("")
    a = exec_run(penv, tmp_path, PYTHON, "helped.py", MY_SETTING="a")
    b = exec_run(penv, tmp_path, PYTHON, "helped.py", MY_SETTING="a")
    assert a["facts"]["probe"]["processes"] == 2 and b["facts"]["probe"]["processes"] == 1
    assert a["facts"]["env"]["MY_SETTING"] == "a" and "HELPER_THREADS" not in a["facts"]["env"]
    assert a["facts"]["probe"]["child_env"] == {"HELPER_THREADS": "1"}
    assert "process_env" not in a["facts"].get("runtime", {})
    assert compare(penv, a, b) == (0, {})
    rc, refused = compare(penv, b, exec_run(penv, tmp_path, PYTHON, "helped.py", MY_SETTING="b"))
    assert rc == 3 and list(refused) == ["env.MY_SETTING"], refused


BACKEND = """
import os, sys
if sys.argv[1] == "triton":  # a JIT only this backend runs asks for the C compiler
    os.getenv("CC")
"""


def test_a_variable_only_one_backend_read_follows_when_both_environments_hold_it(
        penv, tmp_path: Path):
    (tmp_path / "backend.py").write_text(BACKEND)
    flash = exec_run(penv, tmp_path, PYTHON, "backend.py", "flash", CC="gcc")
    triton = exec_run(penv, tmp_path, PYTHON, "backend.py", "triton", CC="gcc")
    assert "CC" not in flash["facts"].get("env", {}) and triton["facts"]["env"]["CC"] == "gcc"
    # the environment by digest: equal values of one store, and no value in clear
    digests = flash["facts"]["probe"]["command_env"]
    assert digests["CC"] == triton["facts"]["probe"]["command_env"]["CC"] != "gcc"
    assert not any(name.startswith("PROV_") for name in digests)
    assert compare(penv, flash, triton, "code.args") == (0, {})
    p = prov("compare", flash["run_id"], triton["run_id"], "--vary", "code.args", "--json",
             env=penv)
    assert list(json.loads(p.stdout)["read_by_one_run"]) == ["env.CC"]
    # the other environment held another value, or none: the read refuses
    clang = exec_run(penv, tmp_path, PYTHON, "backend.py", "triton", CC="clang")
    rc, refused = compare(penv, flash, clang, "code.args")
    assert rc == 3 and list(refused) == ["env.CC"], refused
    unset = dict(penv)
    unset.pop("CC", None)
    bare = prov("exec", "-q", "--", PYTHON, "backend.py", "flash", env=unset, cwd=tmp_path)
    assert bare.returncode == 0
    rc, refused = compare(penv, last_run(penv), triton, "code.args")
    assert rc == 3 and list(refused) == ["env.CC"], refused
