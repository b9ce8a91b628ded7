"""The code a run ran: imported files against their RECORD, and what no process loaded."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json
import os
import shutil

from tests.exec_support import (  # noqa: F401 - fixtures
    PYTHON,
    last_run,
    penv,
    prov,
    prov_cache,
)
from tests.provenance.exec.probe.probe_support import build_wheel, pip_install

DEP = {"tinydep/__init__.py": "from tinydep.core import f\n",
       "tinydep/core.py": "def f():\n    return 1\n"}


def site_env(penv, tmp_path):
    site = tmp_path / "site" / "site-packages"
    site.mkdir(parents=True)
    env = dict(penv, PYTHONPATH=os.pathsep.join(filter(None, [penv.get("PYTHONPATH"),
                                                                str(site)])))
    return site, env


def reinstall(site, tmp_path, version, text):
    """A clean upgrade: `pip install --target` leaves the old dist-info beside the new."""
    for old in site.glob("unuseddep*"):
        shutil.rmtree(old)
    pip_install(build_wheel(tmp_path, "unuseddep", version, {"unuseddep/__init__.py": text}),
                site)


def exec_json(env, *argv):
    p = prov("exec", "-q", "--", *argv, env=env)
    assert p.returncode == 0, p.stderr
    return last_run(env)


def test_an_in_place_edit_of_an_imported_dependency_is_refused_naming_package_and_file(
        penv, tmp_path):
    site, env = site_env(penv, tmp_path)
    pip_install(build_wheel(tmp_path, "tinydep", "1.0", DEP), site)
    code = "import tinydep; print(tinydep.f())"
    a = exec_json(env, PYTHON, "-c", code)
    assert a["facts"]["code"]["modules"]["tinydep"] == {"version": "1.0", "files_checked": 2}
    core = site / "tinydep" / "core.py"
    core.write_text(core.read_text().replace("1", "2"))  # same size, RECORD untouched
    b = exec_json(env, PYTHON, "-c", code)
    p = prov("compare", a["run_id"], b["run_id"], "--json", env=env)
    doc = json.loads(p.stdout)
    assert p.returncode == 3
    assert list(doc["refused"]) == ['code.modules.tinydep.edited."tinydep/core.py"']
    human = prov("compare", a["run_id"], b["run_id"], env=env).stderr.decode()
    assert "tinydep" in human and "tinydep/core.py" in human


def test_a_file_no_record_lists_is_recorded_as_unrecorded(penv, tmp_path):
    site, env = site_env(penv, tmp_path)
    (site / "loose.py").write_text("X = 1\n")
    rec = exec_json(env, PYTHON, "-c", "import loose")
    assert list(rec["facts"]["code"]["unrecorded"]) == ["loose.py"]
    assert rec["facts"]["code"]["unrecorded"]["loose.py"].startswith("sha256:")


def test_a_package_no_process_imported_is_not_loaded_and_does_not_block(penv, tmp_path):
    site, env = site_env(penv, tmp_path)
    pip_install(build_wheel(tmp_path, "tinydep", "1.0", DEP), site)
    reinstall(site, tmp_path, "1.0", "X = 1\n")
    code = "import tinydep; print(tinydep.f())"
    a = exec_json(env, PYTHON, "-c", code)
    reinstall(site, tmp_path, "2.0", "X = 2\n")
    b = exec_json(env, PYTHON, "-c", code)
    assert "unuseddep" not in a["facts"]["code"]["modules"]
    p = prov("compare", a["run_id"], b["run_id"], "--json", env=env)
    doc = json.loads(p.stdout)
    assert p.returncode == 0, doc["refused"]
    assert doc["not_loaded"]["python.packages.unuseddep.version"]["b"] == "2.0"
    assert {k.split(".")[2] for k in doc["not_loaded"]} == {"unuseddep"}
    human = prov("compare", a["run_id"], b["run_id"], env=env).stdout.decode()
    assert "not loaded" in human and "unuseddep" in human
    # a process the probe did not see to its end: "nobody imported it" is not known
    kill = "import tinydep, os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    p = prov("exec", "-q", "--", PYTHON, "-c", kill, env=env)
    assert p.returncode == 137
    c = last_run(env)
    assert c["facts"]["probe"]["complete"] is False
    p = prov("compare", a["run_id"], c["run_id"], "--vary", "command", "--json", env=env)
    doc = json.loads(p.stdout)
    assert p.returncode == 3 and "python.packages.unuseddep.version" in doc["refused"]
    assert doc["not_loaded"] == {}


COLD_HELPER = """
import os, subprocess, sys
cold = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cold")
if os.path.exists(cold):  # a cache miss: a helper that imports one more package
    os.remove(cold)
    subprocess.run([sys.executable, "-c", "import tinydep"], check=True)
"""


def test_a_package_only_one_run_s_helper_imported_is_listed_not_refused(penv, tmp_path):
    site, env = site_env(penv, tmp_path)
    pip_install(build_wheel(tmp_path, "tinydep", "1.0", DEP), site)
    (tmp_path / "helped.py").write_text(COLD_HELPER)
    (tmp_path / "cold").write_text("")
    a = exec_json(env, PYTHON, str(tmp_path / "helped.py"))
    b = exec_json(env, PYTHON, str(tmp_path / "helped.py"))
    assert "tinydep" in a["facts"]["code"]["modules"]
    assert "tinydep" not in b["facts"]["code"]["modules"]
    p = prov("compare", a["run_id"], b["run_id"], "--json", env=env)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["refused"] == {}, doc["refused"]
    assert list(doc["imported_by_one_run"]) == ["code.modules.tinydep.version"]
    human = prov("compare", a["run_id"], b["run_id"], env=env).stdout.decode()
    assert "imported by one run only" in human and "tinydep" in human
