# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""The comparison gate: key patterns, presets, pyproject extension, and real runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from provenance.gate import GateConfig, covers, gate, load_config
from provenance.model import Manifest
from provenance.model.errors import ProvError
from tests.exec_support import penv, prov, prov_cache, runs_json, show_json  # noqa: F401

# -- patterns and presets -------------------------------------------------------------


def test_covers_exact_subtree_and_globs():
    assert covers("env.OMP_NUM_THREADS", "env.OMP_NUM_THREADS")
    assert not covers("env.OMP_NUM_THREADS", "env.OMP_PROC_BIND")
    assert covers("python.packages.numpy", "python.packages.numpy.version")
    assert not covers("python.packages.numpy", "python.packages.numpy-stubs.version")
    assert covers("runtime.*.attention_backend", "runtime.vllm.attention_backend.resolved")
    assert covers("runtime.**.resolved", "runtime.vllm.attention_backend.resolved")
    assert covers("env.VLLM_*", "env.VLLM_ATTENTION_BACKEND")
    assert covers('os.dpkg."python3.11"', 'os.dpkg."python3.11".version')
    assert not covers('os.dpkg."python3.11"', 'os.dpkg."python3.12".version')


def manifest(**sections) -> Manifest:
    base = {
        "python": {"packages": {"numpy": {"version": "2.0.0", "fingerprint": "sha256:aa"}}},
        "env": {"OMP_NUM_THREADS": "4"},
        "host": {"hostname": "a"},
    }
    for name, value in sections.items():
        base[name] = value
    return Manifest(base)


def test_env_only_difference_refused_without_vary_and_accepted_with_it():
    a = manifest()
    b = manifest(env={"OMP_NUM_THREADS": "8"}, host={"hostname": "b"})
    refused = gate(a, b, [])
    assert not refused.ok and [c.key for c in refused.refused] == ["env.OMP_NUM_THREADS"]
    ok = gate(a, b, ["env.OMP_NUM_THREADS"])
    assert ok.ok and [c.key for c in ok.varied["env.OMP_NUM_THREADS"]] == ["env.OMP_NUM_THREADS"]
    assert ok.to_json()["varied"]["env.OMP_NUM_THREADS"]["keys"] == {
        "env.OMP_NUM_THREADS": {"change": "changed", "a": "4", "b": "8"}
    }


def test_package_difference_refused_even_with_an_unrelated_vary():
    a = manifest(env={"OMP_NUM_THREADS": "4", "VLLM_ATTENTION_BACKEND": "FLASH_ATTN"})
    pk = {"numpy": {"version": "2.1.0", "fingerprint": "sha256:bb"}}
    b = manifest(
        python={"packages": pk}, env={"OMP_NUM_THREADS": "4", "VLLM_ATTENTION_BACKEND": "XFORMERS"}
    )
    r = gate(a, b, ["attention-backend"])
    assert not r.ok
    assert sorted(c.key for c in r.refused) == [
        "python.packages.numpy.fingerprint",
        "python.packages.numpy.version",
    ]
    assert [c.key for c in r.varied["attention-backend"]] == ["env.VLLM_ATTENTION_BACKEND"]


@pytest.mark.parametrize(
    "preset,key",
    [
        ("attention-backend", "runtime.vllm.attention_backend.resolved"),
        ("attention-backend", "engines.vllm.attention_backend"),
        ("attention-backend", "env.VLLM_ATTENTION_BACKEND"),
        ("kv-cache-dtype", "runtime.vllm.kv_cache_dtype.resolved"),
        ("weights", "runtime.vllm.model.digest"),
        ("weights", "weights.sha256"),
        ("dtype", "runtime.transformers.dtype"),
    ],
)
def test_presets_cover_where_runners_put_the_concept(preset, key):
    config = GateConfig()
    assert any(covers(p, key) for p in config.expand(preset))
    other = {"attention-backend": "kv-cache-dtype"}.get(preset, "attention-backend")
    assert not any(covers(p, key) for p in config.expand(other))


def test_runtime_section_difference_is_covered_by_the_preset():
    a = manifest(runtime={"vllm": {"attention_backend": {"resolved": "FLASH_ATTN"}}})
    b = manifest(runtime={"vllm": {"attention_backend": {"resolved": "FLASHINFER"}}})
    assert not gate(a, b, []).ok
    assert gate(a, b, ["attention-backend"]).ok
    assert not gate(a, b, ["kv-cache-dtype"]).ok


def test_unused_vary_is_reported():
    r = gate(manifest(), manifest(), ["dtype"])
    assert r.ok and r.unused == ["dtype"] and r.diff.identical


def test_pyproject_adds_presets_extends_builtins_and_ignores(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n\n[tool.prov]\nignore = ['env.OMP_*']\n\n"
        "[tool.prov.presets]\ntokenizer = ['python.packages.tokenizers', 'env.TOKENIZERS_*']\n"
        "attention-backend = ['env.MY_ATTN']\n"
    )
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    config = load_config(sub)  # found from a subdirectory, as git finds its root
    assert config.source == str(tmp_path / "pyproject.toml")
    assert config.expand("tokenizer") == ("python.packages.tokenizers", "env.TOKENIZERS_*")
    attn = config.expand("attention-backend")
    assert "env.MY_ATTN" in attn and "runtime.*.attention_backend" in attn
    a, b = manifest(), manifest(env={"OMP_NUM_THREADS": "8"})
    r = gate(a, b, [], config)
    assert r.ok and [c.key for c in r.ignored] == ["env.OMP_NUM_THREADS"]
    (tmp_path / "pyproject.toml").write_text("[tool.prov]\nignore = 'env.X'\n")
    with pytest.raises(ProvError, match="list of key patterns"):
        load_config(sub)


def test_unknown_tool_prov_key_is_an_error_naming_it(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.prov]\nignor = ['env.X']\n")
    with pytest.raises(ProvError, match="unknown key.*ignor") as err:
        load_config(tmp_path)
    assert err.value.exit_code == 2


def test_refusal_suggests_the_threads_preset():
    from provenance.gate import suggest_presets

    a = manifest()
    b = manifest(env={"OMP_NUM_THREADS": "8"})
    r = gate(a, b, [])
    keys = [c.key for c in r.refused]
    assert suggest_presets(GateConfig().presets, keys) == {"threads": ["env.OMP_NUM_THREADS"]}
    assert gate(a, b, ["threads"]).ok


# -- real runs through the CLI ---------------------------------------------------------


@pytest.mark.slow
def test_cli_env_var_only_runs(penv):
    assert prov("exec", "-q", "--", "true", env=penv).returncode == 0
    env_b = {**penv, "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    assert prov("exec", "-q", "--", "true", env=env_b).returncode == 0
    b, a = (r["run_id"] for r in runs_json(penv)[:2])
    refused = prov("compare", a[:8], b[:8], env=penv)
    assert refused.returncode == 3
    err = refused.stderr.decode()
    assert "env.CUBLAS_WORKSPACE_CONFIG" in err and ":4096:8" in err and "REFUSED" in err
    assert "Traceback" not in err
    env_c = {**penv, "OMP_NUM_THREADS": "3"}
    assert prov("exec", "-q", "--", "true", env=env_c).returncode == 0
    c = runs_json(penv)[0]["run_id"]
    threads = prov("compare", a, c, env=penv)
    assert threads.returncode == 3 and "--vary threads" in threads.stderr.decode()
    ok = prov("compare", a, b, "--vary", "env.CUBLAS_WORKSPACE_CONFIG", "--json", env=penv)
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["comparable"] and doc["record"].startswith("sha256:")
    # the passing comparison is itself recorded: which runs, which keys, their values
    from provenance.store import open_store

    store = open_store(penv["PROV_STORE"])
    rows = store.list_comparisons()
    assert [r["object"] for r in rows] == [doc["record"]]
    rec = store.get_json(doc["record"])
    assert rec["a"]["run_id"] == a and rec["b"]["run_id"] == b
    assert rec["varied"]["env.CUBLAS_WORKSPACE_CONFIG"]["keys"] == {
        "env.CUBLAS_WORKSPACE_CONFIG": {"change": "added", "a": None, "b": ":4096:8"}
    }
    fsck = json.loads(prov("store", "fsck", "--json", env=penv).stdout)
    assert fsck["ok"] and not fsck["orphaned"]


WHEELS = Path.home() / ".cache" / "prov-tests" / "exec-wheels"


def build_wheel(version: str) -> Path:
    """A tiny real distribution, built by pip (setuptools backend) and cached."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    found = list(WHEELS.glob(f"provtestpkg-{version}-*.whl"))
    if found:
        return found[0]
    src = WHEELS / f"src-{version}"
    (src / "provtestpkg").mkdir(parents=True, exist_ok=True)
    (src / "provtestpkg" / "__init__.py").write_text(f"VERSION = {version!r}\n")
    (src / "pyproject.toml").write_text(
        "[build-system]\nrequires = ['setuptools']\nbuild-backend = 'setuptools.build_meta'\n"
        f"[project]\nname = 'provtestpkg'\nversion = '{version}'\n"
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(WHEELS),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    return next(WHEELS.glob(f"provtestpkg-{version}-*.whl"))


def pip_install(wheel: Path, target: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--upgrade",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )


def pip_version(target: Path) -> str:
    """What pip itself says is installed there (the oracle)."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "list", "--path", str(target), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {d["name"]: d["version"] for d in json.loads(out)}["provtestpkg"]


@pytest.mark.slow
def test_cli_package_versions_refused_even_with_unrelated_vary(penv, tmp_path):
    site = tmp_path / "site"
    env = {**penv, "PYTHONPATH": str(site)}
    pip_install(build_wheel("1.0"), site)
    assert prov("exec", "-q", "--", "true", env=env).returncode == 0
    v1 = pip_version(site)
    # a clean reinstall at the same path (pip --target --upgrade would leave 1.0's dist-info)
    shutil.rmtree(site)
    pip_install(build_wheel("2.0"), site)
    assert prov("exec", "-q", "--", "true", env=env).returncode == 0
    v2 = pip_version(site)
    b, a = (r["run_id"] for r in runs_json(penv)[:2])
    p = prov("compare", a, b, "--vary", "attention-backend", env=penv)
    assert p.returncode == 3
    err = p.stderr.decode()
    # every differing identity key is named, with both values
    d = json.loads(prov("diff", a, b, "--json", env=penv).stdout)
    identity = {**d["identity"]["changed"], **d["identity"]["added"], **d["identity"]["removed"]}
    assert "python.packages.provtestpkg.version" in identity
    assert identity["python.packages.provtestpkg.version"] == {"a": v1, "b": v2}
    for key in identity:
        assert key in err, key
    assert f"{v1}" in err and f"{v2}" in err
    j = json.loads(prov("compare", a, b, "--vary", "attention-backend", "--json", env=penv).stdout)
    assert set(j["refused"]) == set(identity)
    ok = prov("compare", a, b, "--vary", "python.packages.provtestpkg", env=penv)
    assert ok.returncode == 0, ok.stderr


@pytest.mark.slow
def test_package_installed_during_the_run_is_flagged_as_drift(penv, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    env = {**penv, "PYTHONPATH": str(site)}
    wheel = build_wheel("1.0")
    install = f"{sys.executable} -m pip install -q --no-deps --no-index --target {site} {wheel}"
    p = prov("exec", "-q", "--", "sh", "-c", install, env=env)
    assert p.returncode == 0, p.stderr
    rec = show_json(runs_json(penv)[0]["run_id"], penv)
    drift = rec["drift"]
    assert drift["detected"] is True
    keys = {c["key"]: c for c in drift["changes"]}
    assert keys["python.packages.provtestpkg.version"]["change"] == "added"
    assert keys["python.packages.provtestpkg.version"]["b"] == pip_version(site)
    assert any("environment changed" in w for w in rec["warnings"])
    assert os.path.isdir(site / "provtestpkg")


@pytest.mark.slow
def test_cli_compare_manifest_files_and_bad_input(penv, tmp_path):
    a, b = tmp_path / "a.toml", tmp_path / "b.json"
    assert prov("snapshot", "--out", str(a), env=penv).returncode == 0
    env_b = {**penv, "OMP_NUM_THREADS": "3"}
    assert prov("snapshot", "--out", str(b), "--format", "json", env=env_b).returncode == 0
    refused = prov("compare", str(a), str(b), "--json", env=penv)
    assert refused.returncode == 3
    doc = json.loads(refused.stdout)
    assert set(doc["refused"]) == {"env.OMP_NUM_THREADS"} and "record" not in doc
    ok = prov("compare", str(a), str(b), "--vary", "env.OMP_*", "--json", env=penv)
    assert ok.returncode == 0, ok.stderr
    rec = json.loads(ok.stdout)["record"]
    from provenance.store import open_store

    store = open_store(penv["PROV_STORE"])
    saved = store.get_json(rec)
    # the files' manifests were stored, so the comparison never points outside the store
    assert store.load_manifest(saved["a"]["manifest"]).digest() == saved["a"]["manifest_digest"]
    assert saved["b"]["type"] == "file" and saved["b"]["ref"] == str(b)
    bad = prov("compare", str(a), "nonexistent-ref", env=penv)
    assert bad.returncode == 2 and b"Traceback" not in bad.stderr
    bad2 = prov("compare", str(a), str(b), "--vary", "env.", env=penv)
    assert bad2.returncode == 2 and b"not a preset or dotted key" in bad2.stderr
