# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""Declarations cover what follows from them: a package upgrade passes with the package
declared alone; a library one run mapped is no difference; suggestions name what covers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from provenance.gate import GateConfig, gate, suggest_presets
from provenance.model import Manifest
from tests.cached_venv import cached_venv
from tests.exec_support import PYTHON, penv, prov, prov_cache, runs_json  # noqa: F401

pytestmark = pytest.mark.slow  # processes and venvs: not in make test-fast

OLD, NEW = "1.26.4", "2.2.6"  # both have wheels for the test interpreter (3.11)
NUMPY_SCRIPT = """\
import sys
import numpy as np
a = np.arange(12, dtype=np.float64).reshape(3, 4)
print(float((a @ a.T).sum()))
"""


def numpy_python(version: str) -> Path:
    """A venv with numpy==VERSION from PyPI, built once under the test cache."""
    return cached_venv(f"numpy-{version}", [["pip", "install", "-q", f"numpy=={version}"]],
                       f"import numpy; assert numpy.__version__ == {version!r}", version + "\n")


def _exec(penv: dict, cwd: Path, *argv: str) -> str:
    p = prov("exec", "-q", "--", *argv, env=penv, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return runs_json(penv)[0]["run_id"]


def _compare(penv: dict, a: str, b: str, *vary: str) -> tuple[int, dict]:
    args = [x for v in vary for x in ("--vary", v)]
    c = prov("compare", a, b, *args, "--json", env=penv)
    return c.returncode, json.loads(c.stdout)


@pytest.mark.slow
def test_a_real_numpy_upgrade_passes_with_the_package_declared_alone(penv, tmp_path):
    (tmp_path / "w.py").write_text(NUMPY_SCRIPT)
    a = _exec(penv, tmp_path, str(numpy_python(OLD)), "w.py")
    b = _exec(penv, tmp_path, str(numpy_python(NEW)), "w.py")
    rc, refused = _compare(penv, a, b)
    assert rc == 3
    keys = set(refused["refused"])
    # the upgrade shows under its modules and the libraries numpy's wheel ships
    assert {"python.packages.numpy.version", "code.modules.numpy.version"} <= keys
    assert any(k.startswith("libs.") for k in keys)
    assert any(k.startswith("runtime.libs.") and k.endswith(".build_id") for k in keys)
    text = prov("compare", a, b, env=penv).stderr.decode()
    assert "covered by --vary python.packages.numpy: " in text
    rc, ok = _compare(penv, a, b, "python.packages.numpy")
    assert rc == 0, ok["refused"]
    numpy = ok["varied"]["python.packages.numpy"]
    assert keys <= set(numpy["keys"])  # every key the refusal named is covered
    assert set(numpy["follows"].values()) == {"python.packages.numpy"}
    assert "code.modules.numpy" in numpy["follows"]
    for derived in numpy["follows"]:  # each library it covers is numpy's on both sides
        for key in (k for k in numpy["keys"] if k.startswith(derived + ".owner")):
            values = numpy["keys"][key]
            assert all(v is None or v.startswith("wheel:numpy==") for v in
                       (values["a"], values["b"])), (key, values)
    text = prov("compare", a, b, "--vary", "python.packages.numpy", env=penv).stdout.decode()
    assert "following from python.packages.numpy: code.modules.numpy, libs (" in text


# -- manifests built by hand: the rules one by one --------------------------------------


def _side(numpy: str, lib_owner: str, modules: dict | None = None, **extra) -> Manifest:
    libs = {"_multiarray_umath.so": {"build_id": numpy, "owner": lib_owner,
                                     "path": f"/v{numpy}/numpy/_multiarray_umath.so"}}
    return Manifest({
        "python": {"packages": {"numpy": {"version": numpy}}},
        "code": {"modules": modules or {"numpy": {"version": numpy}}},
        "runtime": {"libs": {**libs, **extra}},
    })


def test_nothing_follows_from_a_package_that_did_not_change():
    edited = {"numpy": {"version": "1", "edited": {"core.py": "sha256:ee"}}}
    r = gate(_side("1", "wheel:numpy==1"), _side("1", "wheel:numpy==1", edited),
             ["python.packages.numpy"])
    assert [c.key for c in r.refused] == ['code.modules.numpy.edited."core.py"']
    assert r.unused == ["python.packages.numpy"]


def test_a_library_follows_only_while_the_package_owns_it_on_both_sides():
    a = _side("1", "wheel:numpy==1")
    b = _side("2", "dpkg:libnumpy:amd64")  # the same soname, now from another owner
    r = gate(a, b, ["python.packages.numpy"])
    assert {c.key for c in r.refused} == {'runtime.libs."_multiarray_umath.so".build_id',
                                          'runtime.libs."_multiarray_umath.so".owner'}
    assert r.follows == {"python.packages.numpy": {"code.modules.numpy": "python.packages.numpy"}}


def test_a_preset_naming_a_package_covers_what_follows_from_it():
    config = GateConfig(presets={**GateConfig().presets, "np": ("python.packages.numpy",)})
    a, b = _side("1", "wheel:numpy==1"), _side("2", "wheel:numpy==2")
    r = gate(a, b, ["np"], config)
    assert r.ok, [c.key for c in r.refused]
    assert set(r.follows["np"]) == {"code.modules.numpy", 'runtime.libs."_multiarray_umath.so"'}


def test_a_library_one_run_mapped_is_listed_not_refused():
    stdlib = {"_csv.so": {"build_id": "cc", "owner": "interpreter", "path": "/py/_csv.so"}}
    a, b = _side("1", "wheel:numpy==1", **stdlib), _side("1", "wheel:numpy==1")
    r = gate(a, b, [])
    assert r.ok and {c.key for c in r.one_side} == {'runtime.libs."_csv.so".build_id',
                                                    'runtime.libs."_csv.so".owner'}
    assert set(r.to_json()["one_side"]) == {c.key for c in r.one_side}
    # a library both mapped from other files still refuses
    other = {"_csv.so": {"build_id": "dd", "owner": "interpreter", "path": "/py/_csv.so"}}
    r = gate(a, _side("1", "wheel:numpy==1", **other), [])
    assert [c.key for c in r.refused] == ['runtime.libs."_csv.so".build_id']


def test_a_refusal_suggests_only_presets_that_cover_its_keys():
    presets = GateConfig().presets
    launcher = 'libs."__triton_launcher.so".jit'
    kv = ["runtime.vllm.kv_cache_dtype", launcher]
    assert suggest_presets(presets, kv) == {"kv-cache-dtype": kv}
    attn = ["runtime.vllm.attention_backend.resolved", launcher]
    assert suggest_presets(presets, attn) == {"attention-backend": attn}
    runner = ["env.VLLM_USE_V2_MODEL_RUNNER", launcher]
    assert suggest_presets(presets, runner) == {"model-runner": runner}
    assert suggest_presets(presets, [launcher]) == {}  # caused by nothing a preset names
    pkg = ["code.modules.numpy.version", "python.packages.numpy.version"]
    r = gate(_side("1", "wheel:numpy==1"), _side("2", "wheel:numpy==2"), [])
    refused = [c.key for c in r.refused]
    assert set(pkg) <= set(refused)
    assert suggest_presets(presets, refused, r.context) == {"python.packages.numpy": refused}


def test_a_jit_key_follows_the_preset_of_its_cause():
    """A KV-dtype pair's launcher passes with kv-cache-dtype, not with attention-backend."""
    m = {"runtime": {"vllm": {"kv_cache_dtype": "auto"}}}
    a, b = Manifest(m), Manifest({"runtime": {"vllm": {"kv_cache_dtype": "fp8"}}})
    libs = ({"__triton_launcher.so": {"jit": "triton:K1"}},
            {"__triton_launcher.so": {"jit": "triton:K2"}})
    assert not gate(a, b, ["attention-backend"], libs=libs).ok
    r = gate(a, b, ["kv-cache-dtype"], libs=libs)
    assert r.ok and r.follows["kv-cache-dtype"] == {
        'libs."__triton_launcher.so".jit': "runtime.vllm.kv_cache_dtype"}


ONE_SIDE_SCRIPT = """\
import sys
if sys.argv[1] == "csv":
    import _csv  # a standard-library extension: a shared object in lib-dynload
"""


def test_a_real_library_loaded_on_one_side_only_is_no_difference(penv, tmp_path):
    (tmp_path / "s.py").write_text(ONE_SIDE_SCRIPT)
    a = _exec(penv, tmp_path, PYTHON, "s.py", "csv")
    b = _exec(penv, tmp_path, PYTHON, "s.py", "none")
    rc, doc = _compare(penv, a, b, "command")
    assert rc == 0, doc["refused"]
    csv = [k for k in doc["one_side"] if k.startswith('runtime.libs."_csv.')]
    assert csv and all(doc["one_side"][k]["b"] is None for k in csv)
    assert not [k for k in doc["refused"] if "_csv" in k]


def _vllm(dtype: str, asked: str, resolved: str) -> dict:
    return {"dtype": dtype, "kv_cache_dtype": {"requested": asked, "resolved": resolved},
            "attention_backend": {"layers": {"Attention": {"tensor_dtype": resolved}}}}


@pytest.mark.parametrize("where", [("runtime",), ("server", "runtime")])
def test_an_auto_kv_cache_follows_the_dtype_a_preset_covers(where):
    def side(dtype: str, asked: str, resolved: str) -> Manifest:
        doc: dict = {"vllm": _vllm(dtype, asked, resolved)}
        return Manifest({"server": {"runtime": doc}} if where[0] == "server" else
                        {"runtime": doc})

    prefix = ".".join(where) + ".vllm."
    r = gate(side("float32", "auto", "float32"), side("bfloat16", "auto", "bfloat16"),
             ["dtype"])
    assert r.ok, [c.key for c in r.refused]
    assert r.follows["dtype"] == {
        prefix + "kv_cache_dtype.resolved": prefix + "dtype",
        prefix + "attention_backend.layers.*.tensor_dtype": prefix + "dtype"}
    # a cache asked by name keeps its own dtype: a change of it is no dtype's to cover
    r = gate(side("float32", "fp8", "float32"), side("bfloat16", "fp8", "bfloat16"), ["dtype"])
    assert {c.key for c in r.refused} == {prefix + "kv_cache_dtype.resolved",
                                          prefix + "attention_backend.layers.Attention.tensor_dtype"}
