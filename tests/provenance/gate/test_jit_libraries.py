# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""The gate compares a JIT-compiled library by its cache key, not by its per-run bytes."""

from __future__ import annotations

import json

import pytest

from provenance.gate import common_libraries
from tests.exec_support import PYTHON, penv, prov, prov_cache, runs_json, show_json  # noqa: F401
from tests.jit_support import PLAIN_WORKLOAD, TRITON_CACHE_WORKLOAD

pytest.importorskip("triton")

pytestmark = pytest.mark.slow  # processes and venvs: not in make test-fast


def _run(penv: dict, cache: str, *argv: str) -> dict:
    env = {**penv, "TRITON_CACHE_DIR": cache}
    p = prov("exec", "-q", "--", PYTHON, "-c", TRITON_CACHE_WORKLOAD, *argv, env=env)
    assert p.returncode == 0, p.stderr
    return show_json(runs_json(penv)[0]["run_id"], penv)


def _launcher(rec: dict) -> dict:
    return next(lib for lib in rec["loaded_libraries"]
                if lib["name"].startswith("__triton_launcher"))


def _compare(penv: dict, a: dict, b: dict) -> tuple[int, dict]:
    c = prov("compare", a["run_id"], b["run_id"], "--json", env=penv)
    return c.returncode, json.loads(c.stdout)


def test_same_kernel_compiled_afresh_in_two_runs_compares_clean(penv, tmp_path):
    a = _run(penv, str(tmp_path / "ca"), "7", "fresh")
    b = _run(penv, str(tmp_path / "cb"), "7", "fresh")
    la, lb = _launcher(a), _launcher(b)
    assert la["sha256"] != lb["sha256"]  # the bytes really differ per run ...
    rc, doc = _compare(penv, a, b)
    assert rc == 0, doc["refused"]  # (the false refusal seen on the GPU)
    assert doc["identical"] is True
    assert la["jit"]["key"] == lb["jit"]["key"]  # ... what determined them does not
    # the library took part: by its key, its bytes beside it as context
    libs = common_libraries(a["loaded_libraries"], b["loaded_libraries"])
    entry = libs[0][la["name"]]
    assert entry["jit"].startswith(f"triton:{la['jit']['key']} (triton ")
    assert entry["sha256"] == la["sha256"] != libs[1][la["name"]]["sha256"]


def test_a_changed_kernel_source_refuses_naming_the_key(penv, tmp_path):
    a = _run(penv, str(tmp_path / "ca"), "7")
    b = _run(penv, str(tmp_path / "cb"), "8")
    ka, kb = _launcher(a)["jit"]["key"], _launcher(b)["jit"]["key"]
    assert ka != kb
    rc, doc = _compare(penv, a, b)
    assert rc == 3, doc
    [(key, change)] = [(k, v) for k, v in doc["refused"].items() if k.startswith("libs.")]
    assert key == f'libs."{_launcher(a)["name"]}".jit'
    assert ka in change["a"] and kb in change["b"]


def test_a_plain_library_with_other_bytes_still_refuses(penv, tmp_path):
    recs = []
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        p = prov("exec", "-q", "--", PYTHON, "-c", PLAIN_WORKLOAD, str(d), env=penv)
        assert p.returncode == 0, p.stderr
        recs.append(show_json(runs_json(penv)[0]["run_id"], penv))
    lib = next(x for x in recs[0]["loaded_libraries"] if x["name"] == "libplain.so")
    assert "jit" not in lib
    rc, doc = _compare(penv, *recs)
    assert rc == 3, doc
    assert list(k for k in doc["refused"] if k.startswith("libs.")) == ['libs."libplain.so"']


INDUCTOR_WORKLOAD = r"""
import torch
@torch.compile
def f(x):
    return torch.sin(x) * 2 + x
print(f(torch.ones(8)).sum().item(), flush=True)
"""


@pytest.mark.slow
def test_torch_inductor_kernels_compiled_in_two_fresh_caches_compare_clean(penv, tmp_path):
    """Real torch inductor on CPU: the same function compiled in two fresh caches gives a
    library of one key (its file name) and different bytes; the gate compares the key."""
    pytest.importorskip("torch")
    recs = []
    for name in ("a", "b"):
        env = {**penv, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / name),
               "TORCHINDUCTOR_COMPILE_THREADS": "1"}
        p = prov("exec", "-q", "--", PYTHON, "-c", INDUCTOR_WORKLOAD, env=env, timeout=600)
        assert p.returncode == 0, p.stderr
        recs.append(show_json(runs_json(penv)[0]["run_id"], penv))
    la, lb = ([x for x in r["loaded_libraries"] if x.get("jit", {}).get("kind") == "torch-inductor"]
              for r in recs)
    assert la and lb, [x["path"] for x in recs[0]["loaded_libraries"]]
    # inductor also builds short-lived helper libraries (ISA checks) that sampling may see
    # in one run only; the kernel mapped until exit is seen in both
    ka, kb = ({x["jit"]["key"]: x for x in libs} for libs in (la, lb))
    common = ka.keys() & kb.keys()
    assert common, (sorted(ka), sorted(kb))
    assert all(x["name"].startswith(x["jit"]["key"]) for x in la + lb)
    assert any(ka[k]["sha256"] != kb[k]["sha256"] for k in common), (
        "inductor now builds identical bytes: this test no longer exercises bytes-as-context")
    rc, doc = _compare(penv, *recs)
    assert rc == 0, doc["refused"]


def test_common_libraries_keep_identity_of_what_a_jit_did_not_compile():
    """Unit: the key is identity, the JIT file's bytes context; a same-named file outside
    any JIT cache keeps its bytes as identity; a record without `jit` compares by bytes."""
    from provenance.gate.check import gate
    from provenance.model import Manifest

    jit = {"kind": "triton", "key": "K" * 52, "compiler": "triton", "compiler_version": "3"}
    a = [{"name": "l.so", "sha256": "sha256:aa", "jit": jit},
         {"name": "p.so", "sha256": "sha256:11"}]
    b = [{"name": "l.so", "sha256": "sha256:bb", "jit": jit},
         {"name": "p.so", "sha256": "sha256:11"}]
    m = Manifest({"x": {"y": 1}})
    assert gate(m, m, [], libs=common_libraries(a, b)).identical
    stray = [*b, {"name": "l.so", "sha256": "sha256:cc"}]
    r = gate(m, m, [], libs=common_libraries(a, stray))
    assert [c.key for c in r.refused] == ['libs."l.so".files']
    old = [{k: v for k, v in lib.items() if k != "jit"} for lib in b]
    r = gate(m, m, [], libs=common_libraries(old, b))
    assert {c.key for c in r.refused} == {'libs."l.so"', 'libs."l.so".jit'}


def test_what_a_jit_compiled_follows_from_the_declared_cause(penv, tmp_path):
    """Another kernel source (here the script's argument; on the GPU another attention
    backend, KV dtype or model runner) compiles other kernels, whose Triton launchers all
    share one file name: the launcher key follows from the declaration that covers its
    cause, listed under it; a spec that covers no difference does not cover it."""
    a = _run(penv, str(tmp_path / "ca"), "7")
    b = _run(penv, str(tmp_path / "cb"), "8")
    key = f'libs."{_launcher(a)["name"]}".jit'
    c = prov("compare", a["run_id"], b["run_id"], "--vary", "attention-backend", "--json",
             env=penv)
    doc = json.loads(c.stdout)
    assert c.returncode == 3 and key in doc["refused"] and "code.args" in str(doc["refused"])
    assert doc["unused_vary"] == ["attention-backend"]
    c = prov("compare", a["run_id"], b["run_id"], "--vary", "command", "--json", env=penv)
    doc = json.loads(c.stdout)
    assert c.returncode == 0, doc["refused"]
    cmd = doc["varied"]["command"]
    assert key in cmd["keys"] and cmd["follows"][key].startswith("code.args")


def test_a_jit_key_alone_follows_from_nothing_and_is_refused():
    """Unit: with nothing declared that differs, a changed JIT key is unexplained."""
    from provenance.gate.check import gate
    from provenance.model import Manifest

    def libs(key: str) -> dict:
        return {"l.so": {"jit": f"triton:{key}"}}

    m = Manifest({"env": {"X": "1"}})
    r = gate(m, m, ["attention-backend"], libs=(libs("K1"), libs("K2")))
    assert [c.key for c in r.refused] == ['libs."l.so".jit'] and not r.follows
    other = Manifest({"env": {"X": "2"}})
    r = gate(m, other, ["env.X"], libs=(libs("K1"), libs("K2")))
    assert r.ok and r.follows == {"env.X": {'libs."l.so".jit': "env.X"}}
