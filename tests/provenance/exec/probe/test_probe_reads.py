"""What a user's script read, under real `prov exec`: its data files and weights by content,
the variables it asked for, a re-execution with another environment."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

from pathlib import Path

import pytest

from tests.exec_support import PYTHON, penv, prov, prov_cache  # noqa: F401 - fixtures
from tests.provenance.exec.probe.reads_support import compare, exec_run, keys_under

READER = """
import os, sys
import numpy as np
prompt = open("prompt.txt").read()
w = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "w.npy"))
temp = float(os.getenv("MY_TEMPERATURE", "1.0"))
env = dict(os.environ)  # a bulk copy: no variable is read by it
print(len(prompt), float(w.sum()) * temp, len(env) > 0)
"""


@pytest.fixture
def work(tmp_path) -> Path:
    import numpy as np

    d = tmp_path / "work"
    d.mkdir()
    (d / "reader.py").write_text(READER)
    (d / "prompt.txt").write_text("the cat sat on the mat\n")
    np.save(d / "w.npy", np.arange(6, dtype=np.float32))
    return d


def run(penv, work, **env):
    return exec_run(penv, work, PYTHON, "reader.py", **env)


def test_identical_runs_compare_clean_and_record_the_inputs(penv, work):
    a, b = run(penv, work), run(penv, work)
    assert compare(penv, a, b) == (0, {})
    files = a["facts"]["inputs"]["files"]
    assert set(files) == {"prompt.txt", "w.npy"}, files
    assert files["prompt.txt"]["size"] == 23 and files["w.npy"]["sha256"].startswith("sha256:")
    assert "MY_TEMPERATURE" not in a["facts"].get("env", {})  # read, but not set
    assert not any(k.startswith("PROV_") for k in a["facts"].get("env", {}))
    shown = prov("show", a["run_id"], env=penv).stdout.decode()
    assert f"prompt.txt  {files['prompt.txt']['sha256']}  (23 bytes)" in shown, shown


def test_an_edited_prompt_file_is_refused_and_passes_with_vary_inputs(penv, work):
    a = run(penv, work)
    (work / "prompt.txt").write_text("the dog sat on the mat\n")  # same size, other bytes
    b = run(penv, work)
    rc, refused = compare(penv, a, b)
    assert rc == 3 and list(refused) == ['inputs.files."prompt.txt".sha256'], refused
    assert compare(penv, a, b, "inputs") == (0, {})


def test_a_numpy_weight_edited_in_place_is_refused(penv, work):
    import numpy as np

    a = run(penv, work)
    np.save(work / "w.npy", np.arange(6, dtype=np.float32)[::-1].copy())
    b = run(penv, work)
    rc, refused = compare(penv, a, b)
    assert rc == 3 and list(refused) == ['inputs.files."w.npy".sha256'], refused
    assert compare(penv, a, b, "inputs") == (0, {})


def test_a_variable_the_script_reads_is_identity_an_unread_one_is_not(penv, work):
    a = run(penv, work, MY_TEMPERATURE="0.7")
    b = run(penv, work, MY_TEMPERATURE="0.9")
    rc, refused = compare(penv, a, b)
    assert rc == 3 and list(refused) == ["env.MY_TEMPERATURE"], refused
    c = run(penv, work, MY_TEMPERATURE="0.7", MY_UNREAD_SETTING="42")
    assert compare(penv, a, c) == (0, {})
    assert "MY_UNREAD_SETTING" not in c["facts"]["env"]
    rc, refused = compare(penv, run(penv, work), a)  # unset on one side: refused as well
    assert rc == 3 and list(refused) == ["env.MY_TEMPERATURE"], refused


def test_a_secret_the_script_reads_is_never_stored(penv, work):
    script = work / "token.py"
    script.write_text("import os\nprint(len(os.environ['MY_API_TOKEN']))\n")
    secret = "sk-" + "q8Zr3Lw0Xc" * 4
    a = exec_run(penv, work, PYTHON, "token.py", MY_API_TOKEN=secret)
    assert a["facts"]["env"]["MY_API_TOKEN"] != secret
    store = Path(penv["PROV_STORE"])
    leaked = [p for p in store.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert not leaked


def test_relative_and_absolute_script_paths_read_the_same_inputs(penv, work, tmp_path):
    a = exec_run(penv, work, PYTHON, "reader.py")
    b = exec_run(penv, work, PYTHON, str(work / "reader.py"))
    rc, refused = compare(penv, a, b)
    assert not keys_under(refused, "inputs.", "env.", "model."), refused
    assert a["facts"]["inputs"] == b["facts"]["inputs"]
    # the same script repeated in another working directory with the same files
    other = tmp_path / "elsewhere"
    other.mkdir()
    for name in ("reader.py", "prompt.txt", "w.npy"):
        (other / name).write_bytes((work / name).read_bytes())
    c = exec_run(penv, other, PYTHON, "reader.py")
    assert c["facts"]["inputs"] == a["facts"]["inputs"]


REEXEC = """
import os, sys
want = open("seed.txt").read().strip()
if os.environ.get("PYTHONHASHSEED") != want:
    os.execve(sys.executable, [sys.executable] + sys.argv,
              dict(os.environ, PYTHONHASHSEED=want))
print(hash("prov"))
"""


def test_a_script_re_executing_itself_with_another_hash_seed_is_refused(penv, tmp_path):
    (tmp_path / "again.py").write_text(REEXEC)
    (tmp_path / "seed.txt").write_text("1\n")
    a = exec_run(penv, tmp_path, PYTHON, "again.py")
    assert a["facts"]["runtime"]["process_env"]["PYTHONHASHSEED"] == "1"
    assert a["facts"]["probe"]["processes"] == 2  # the process before the exec, and after
    assert "PYTHONHASHSEED=1" in prov("show", a["run_id"], env=penv).stdout.decode()
    (tmp_path / "seed.txt").write_text("2\n")
    b = exec_run(penv, tmp_path, PYTHON, "again.py")
    rc, refused = compare(penv, a, b, "inputs")  # the seed file itself is declared
    assert rc == 3 and "runtime.process_env.PYTHONHASHSEED" in refused, refused
    (tmp_path / "seed.txt").write_text("1\n")
    assert compare(penv, a, exec_run(penv, tmp_path, PYTHON, "again.py")) == (0, {})


def test_a_file_the_run_wrote_itself_is_no_input(penv, tmp_path):
    (tmp_path / "writer.py").write_text(
        "open('scratch.txt', 'w').write(str(id(object())))\nprint(open('scratch.txt').read())\n")
    a = exec_run(penv, tmp_path, PYTHON, "writer.py")
    assert "inputs" not in a["facts"], a["facts"].get("inputs")
    assert compare(penv, a, exec_run(penv, tmp_path, PYTHON, "writer.py")) == (0, {})
