"""The in-process half: start-up, chaining, every way a process can end, fork and spawn."""

from __future__ import annotations

import ast
import json
import signal
from pathlib import Path

from provenance.exec.probe.host import INPROC_DIR
from tests.provenance.exec.probe.probe_support import (
    probe_files,
    run_plain,
    run_probed,
)


def test_inproc_code_is_python38_syntax_and_imports_only_stdlib_and_itself():
    allowed = {"os", "sys", "time", "_thread", "atexit", "importlib", "weakref"}
    # the exchange recorder runs only inside a Starlette server, which has loaded these
    # itself (asyncio, json, hashlib; sqlite3 only when /prov/v1/identity is asked)
    in_server = {"json", "hashlib", "socket", "struct", "asyncio", "concurrent", "sqlite3"}
    server_side = {"asgi.py", "exchange.py", "peer.py"}
    # functools, inside the functions that wrap a library's callable: the library (torch,
    # vLLM, transformers, safetensors) has loaded it by then
    in_wrappers = {"functools"}
    for path in INPROC_DIR.rglob("*.py"):
        tree = ast.parse(path.read_text(), feature_version=(3, 8))
        nested = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                  for n in ast.walk(f)}
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module.split(".")[0]]
            for name in names:
                ok = name in allowed or name == "_prov_probe" or (
                    path.name in server_side and name in in_server) or (
                    name in in_wrappers and id(node) in nested)
                assert ok, f"{path.name} imports {name}"


def test_a_plain_run_is_recorded_with_pid_and_exit(tmp_path):
    p = run_probed(tmp_path, "-c", "print('hi')")
    assert (p.returncode, p.stdout, p.stderr) == (0, b"hi\n", b"")
    [doc] = probe_files(tmp_path)
    assert doc["state"] == "on" and doc["exit"] == {"via": "atexit"} and doc["errors"] == []
    assert doc["argv"] == ["-c"] and doc["stage"] == "exit"
    assert doc["pid"] != doc["ppid"] > 0


def test_the_program_sees_no_probe_on_sys_path_nor_extra_libraries(tmp_path):
    code = ("import sys; print([p for p in sys.path if 'inproc' in p]); "
            "print(sorted(l.split()[-1] for l in open('/proc/self/maps') if '.so' in l))")
    probed, plain = run_probed(tmp_path, "-c", code), run_plain(tmp_path, "-c", code)
    assert probed.stdout.splitlines()[0] == b"[]"
    # the probe maps nothing of its own (no json/_json.so, no hashlib/libcrypto)
    assert probed.stdout == plain.stdout


def test_the_environments_own_sitecustomize_still_runs(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text(
        "import sys\nprint('own sitecustomize', __name__, file=sys.stderr)\nMARK = 42\n")
    code = "import sitecustomize; print(sitecustomize.MARK, sitecustomize.__file__)"
    probed = run_probed(tmp_path, "-c", code, PYTHONPATH=str(own))
    plain = run_plain(tmp_path, "-c", code, PYTHONPATH=str(own))
    assert probed.returncode == plain.returncode == 0
    assert (probed.stdout, probed.stderr) == (plain.stdout, plain.stderr)
    assert probed.stderr == b"own sitecustomize sitecustomize\n"
    assert probe_files(tmp_path)[0]["exit"] == {"via": "atexit"}


def test_a_failing_own_sitecustomize_is_reported_as_python_reports_it(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("raise ValueError('broken site')\n")
    probed = run_probed(tmp_path, "-c", "print(1)", PYTHONPATH=str(own))
    plain = run_plain(tmp_path, "-c", "print(1)", PYTHONPATH=str(own))
    assert (probed.returncode, probed.stdout, probed.stderr) == (
        plain.returncode, plain.stdout, plain.stderr)
    assert b"broken site" in plain.stderr


def test_os_exit_is_caught_and_the_status_kept(tmp_path):
    p = run_probed(tmp_path, "-c", "import os, sys; sys.stdout.write('x'); sys.stdout.flush(); "
                   "os._exit(7)")
    assert (p.returncode, p.stdout) == (7, b"x")
    [doc] = probe_files(tmp_path)
    assert doc["exit"] == {"via": "os._exit"} and doc["stage"] == "exit"
    assert "maps" in doc and "modules" in doc


def test_sigkill_leaves_a_complete_file_of_the_last_update(tmp_path):
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    p = run_probed(tmp_path, "-c", code)
    assert p.returncode == -signal.SIGKILL
    [doc] = probe_files(tmp_path)  # parses: never half a file
    assert doc["stage"] == "start" and "exit" not in doc
    assert not list((tmp_path / "probe").glob("*.tmp"))


def test_fork_gives_the_child_its_own_file(tmp_path):
    code = ("import os\npid = os.fork()\nif pid == 0:\n    os._exit(3)\n"
            "_, st = os.waitpid(pid, 0)\nprint(os.waitstatus_to_exitcode(st))")
    p = run_probed(tmp_path, "-c", code)
    assert p.stdout == b"3\n"
    docs = probe_files(tmp_path)
    parent = next(d for d in docs if "forked_from" not in d)
    child = next(d for d in docs if "forked_from" in d)
    assert child["forked_from"] == parent["pid"] == child["ppid"]
    assert child["exit"] == {"via": "os._exit"} and parent["exit"] == {"via": "atexit"}


def test_multiprocessing_spawn_and_fork_children_are_probed(tmp_path):
    script = tmp_path / "mp.py"
    script.write_text(
        "import multiprocessing as mp\n"
        "def work(q, x):\n    q.put(x * x)\n"
        "if __name__ == '__main__':\n"
        "    for method in ('spawn', 'fork'):\n"
        "        ctx = mp.get_context(method)\n"
        "        q = ctx.Queue()\n"
        "        p = ctx.Process(target=work, args=(q, 3))\n"
        "        p.start(); print(method, q.get()); p.join(); print(p.exitcode)\n")
    p = run_probed(tmp_path, str(script))
    assert p.returncode == 0, p.stderr
    assert p.stdout == run_plain(tmp_path, str(script)).stdout == b"spawn 9\n0\nfork 9\n0\n"
    docs = probe_files(tmp_path)
    spawned = [d for d in docs if any("multiprocessing.spawn" in a for a in d["orig_argv"])]
    forked = [d for d in docs if "forked_from" in d]
    assert len(spawned) == 1 and len(forked) == 1
    # spawn children end through sys.exit (atexit), fork children through os._exit
    assert spawned[0]["exit"] == {"via": "atexit"} and forked[0]["exit"] == {"via": "os._exit"}


def test_a_probe_that_raises_inside_changes_nothing_and_says_so(tmp_path):
    code = "import torch; print(torch.ones(2).sum().item())"
    for stage in ("start", "import torch", "exit torch", "exit maps", "exit modules"):
        run_dir = tmp_path / stage.replace(" ", "-")
        run_dir.mkdir()
        p = run_probed(run_dir, "-c", code, PROV_PROBE_FAULT=stage)
        assert (p.returncode, p.stdout, p.stderr) == (0, b"2.0\n", b""), stage
        [doc] = probe_files(run_dir)
        assert any(e.startswith(stage + ": RuntimeError: injected") for e in doc["errors"])


def test_prov_inprocess_0_in_a_child_records_it_off(tmp_path):
    code = ("import os, subprocess, sys\n"
            "env = dict(os.environ, PROV_INPROCESS='0')\n"
            "subprocess.run([sys.executable, '-c', 'print(1)'], env=env, check=True)")
    p = run_probed(tmp_path, "-c", code)
    assert p.stdout == b"1\n"
    docs = probe_files(tmp_path)
    assert sorted(d["state"] for d in docs) == ["off", "on"]
    assert "exit" not in next(d for d in docs if d["state"] == "off")


WRAPPED = """
import inspect, json, safetensors, torch
def signature(f):
    try:
        return str(inspect.signature(f))
    except ValueError:  # a builtin without one (torch's sdpa)
        return None
def seen(f):
    w = f.__wrapped__
    return {"same": [getattr(f, a) == getattr(w, a)
                     for a in ("__name__", "__qualname__", "__module__", "__doc__")],
            "signature": signature(f) == signature(w),
            "namespace": sorted(k for k in vars(f) if k.startswith("__"))}
print(json.dumps([seen(torch.nn.functional.scaled_dot_product_attention),
                  seen(safetensors.safe_open)]))
"""


def test_torch_flags_at_import_and_at_exit(tmp_path):
    code = ("import torch\ntorch.set_num_interop_threads(1)\ntorch.set_num_threads(1)\n"
            "torch.set_flush_denormal(True)\n" + WRAPPED)
    p = run_probed(tmp_path, "-c", code)
    # reading at import started no pool: set_num_interop_threads still works afterwards
    assert (p.returncode, p.stderr) == (0, b""), p.stderr
    # the probe's wrappers (functools.update_wrapper) look like what they wrap, and a class
    # wrapped (safetensors' safe_open) lends its namespace to no function
    for seen in json.loads(p.stdout):
        assert seen == {"same": [True] * 4, "signature": True, "namespace": ["__wrapped__"]}
    [doc] = probe_files(tmp_path)
    before, after = doc["torch"]["at_import"], doc["torch"]["at_exit"]
    assert after["num_threads"] == after["num_interop_threads"] == 1
    assert after["flush_denormal"] is True and before["flush_denormal"] is False
    assert {k for k in before if before[k] != after[k]} <= {
        "num_threads", "num_interop_threads", "flush_denormal"}


def test_a_script_that_never_imports_torch_has_no_torch_facts(tmp_path):
    script = Path(tmp_path / "s.py")
    script.write_text("print(sum(range(10)))\n")
    run_probed(tmp_path, str(script))
    [doc] = probe_files(tmp_path)
    assert "torch" not in doc and doc["script"]["path"] == str(script)
