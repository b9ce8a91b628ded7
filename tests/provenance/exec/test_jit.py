# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""JIT-compiled libraries in the run record: kind, cache key and compiler, from the cache."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from provenance.exec.jit import identify
from tests.exec_support import PYTHON, last_run, penv, prov, prov_cache  # noqa: F401
from tests.jit_support import TRITON_BUILD_WORKLOAD, TRITON_CACHE_WORKLOAD

triton = pytest.importorskip("triton")


def _launchers(rec: dict) -> list[dict]:
    return [lib for lib in rec["loaded_libraries"]
            if lib["name"].startswith("__triton_launcher")]


def test_triton_build_helper_launcher_is_recorded_by_its_cache_key(penv, tmp_path):
    """Triton's own build helper (compile_so_from_src): the record names the folder Triton
    chose as the key and the Triton version of the run's environment."""
    penv["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    p = prov("exec", "-q", "--", PYTHON, "-c", TRITON_BUILD_WORKLOAD, "7", env=penv)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"7\n"
    rec = last_run(penv)
    [lib] = _launchers(rec)
    folder = Path(lib["path"]).parent
    human = prov("show", rec["run_id"], env=penv).stdout.decode()
    assert f"{lib['path']}  jit triton:{folder.name}  {lib['sha256']}" in human
    assert folder.parent == tmp_path / "triton-cache"
    assert lib["jit"] == {"kind": "triton", "key": folder.name, "compiler": "triton",
                          "compiler_version": triton.__version__}
    assert lib["sha256"] == "sha256:" + hashlib.sha256(Path(lib["path"]).read_bytes()).hexdigest()


def test_triton_kernel_metadata_gives_the_compiler_version(penv, tmp_path):
    """A kernel folder's `<name>.json` (written through Triton's cache manager) supplies
    the compiler's version and the kernel's name."""
    penv["TRITON_CACHE_DIR"] = str(tmp_path / "c")
    p = prov("exec", "-q", "--", PYTHON, "-c", TRITON_CACHE_WORKLOAD, "3", env=penv)
    assert p.returncode == 0, p.stderr
    [lib] = _launchers(last_run(penv))
    key = Path(lib["path"]).parent.name
    assert lib["jit"] == {"kind": "triton", "key": key, "compiler": "triton",
                          "compiler_version": triton.__version__, "kernel": "add_kernel"}


def test_kinds_table_recognises_inductor_and_flashinfer_layouts(tmp_path):
    env = {"HOME": str(tmp_path / "home"), "USER": "u",
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "ind")}
    key = "c" + "a2" * 25 + "z"
    assert identify(str(tmp_path / "ind" / "a2" / f"{key}.so"), env) == {
        "kind": "torch-inductor", "key": key}
    # inductor's Triton kernels live in Triton's layout inside inductor's cache
    tkey = "A" * 52
    got = identify(str(tmp_path / "ind" / "triton" / "0" / tkey / "x.so"), env,
                   {"triton": "9.9"})
    assert got == {"kind": "triton", "key": tkey, "compiler": "triton",
                   "compiler_version": "9.9"}
    fi = tmp_path / "home" / ".cache" / "flashinfer" / "90"
    gen = fi / "generated" / "batch_prefill_bf16"
    gen.mkdir(parents=True)
    (gen / "kernel.cu").write_text("// source\n")
    lib = fi / "cached_ops" / "batch_prefill_bf16" / "batch_prefill_bf16.so"
    got = identify(str(lib), env, {"flashinfer-python": "0.6.14"})
    assert got["kind"] == "flashinfer" and got["key"] == "batch_prefill_bf16"
    assert got["arch"] == "90" and got["compiler_version"] == "0.6.14"
    first = got["source_sha256"]
    (gen / "kernel.cu").write_text("// changed source\n")
    assert identify(str(lib), env)["source_sha256"] != first
    # outside every cache, or a 52-letter folder with no Triton about it: not JIT
    assert identify("/usr/lib/libc.so.6", env) is None
    assert identify(f"/opt/x/{tkey}/lib.so", env) is None
    assert identify(f"/opt/triton-build/{tkey}/lib.so", env)["kind"] == "triton"
    assert os.environ.get("HOME")  # the run's env, not prov's, decides the roots
