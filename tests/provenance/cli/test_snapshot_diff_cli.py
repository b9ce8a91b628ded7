"""`prov snapshot` and `prov diff` as a user runs them: exit codes, errors, formats."""

from __future__ import annotations

import json

from provenance.model import Manifest
from tests.golden import check_golden
from tests.helpers import assert_one_line_error, run_prov
from tests.provenance.model.test_manifest import sample


def test_snapshot_writes_both_formats_with_one_digest(tmp_path):
    env = {"PROV_STORE": str(tmp_path / "store")}
    t, j = tmp_path / "m.toml", tmp_path / "m.json"
    p = run_prov("snapshot", "--out", str(t), env=env, check=True)
    run_prov("snapshot", "--out", str(j), "--format", "json", env=env, check=True)
    a, b = Manifest.read(t), Manifest.read(j)
    assert a.digest() == b.digest()
    assert a.digest() in p.stdout
    assert "python" in p.stdout and "packages" in p.stdout
    # the TOML round trip of a real manifest is byte-identical
    assert Manifest.loads(t.read_text()).to_toml() == t.read_text()


def test_snapshot_json_on_stdout(tmp_path):
    p = run_prov("snapshot", "--json", env={"PROV_STORE": str(tmp_path)}, check=True)
    doc = json.loads(p.stdout)
    assert doc["schema_version"] == 1 and doc["digest"].startswith("sha256:")
    assert set(doc["section_digests"]) >= {"python", "os", "cpu", "gpu", "env", "host", "torch"}


def test_diff_exit_codes(tmp_path):
    a = tmp_path / "a.toml"
    sample().write(a)
    assert run_prov("diff", str(a), str(a)).returncode == 0
    changed = sample()
    changed.facts["python"]["packages"]["torch"]["version"] = "2.14.0"
    changed.facts["host"]["hostname"] = "node-9"
    b = tmp_path / "b.toml"
    Manifest(changed.facts).write(b)
    p = run_prov("diff", str(a), str(b))
    assert p.returncode == 1
    assert "python.packages.torch.version" in p.stdout and "2.14.0" in p.stdout
    assert "host.hostname" in p.stdout  # context is shown, separately
    doc = json.loads(run_prov("diff", str(a), str(b), "--json").stdout)
    assert doc["identity"]["changed"] == {"python.packages.torch.version": {"a": "2.13.0", "b": "2.14.0"}}
    assert doc["context"]["changed"] == {"host.hostname": {"a": "node-1", "b": "node-9"}}
    assert doc["changed_sections"] == ["python"]
    # context-only difference: identities are equal, exit 0
    ctx = sample()
    ctx.facts["host"]["hostname"] = "node-3"
    c = tmp_path / "c.toml"
    Manifest(ctx.facts).write(c)
    assert run_prov("diff", str(a), str(c)).returncode == 0


def test_bad_input_is_one_line_exit_2(tmp_path):
    good = tmp_path / "good.toml"
    sample().write(good)
    corrupt = tmp_path / "corrupt.toml"
    corrupt.write_text(good.read_text()[:200] + "\n[[[broken")
    future = tmp_path / "future.json"
    doc = json.loads(sample().to_json())
    doc["schema_version"] = 7
    future.write_text(json.dumps(doc))
    edited = tmp_path / "edited.toml"
    edited.write_text(good.read_text().replace('"2.13.0"', '"6.6.6"'))
    cases = {
        str(tmp_path / "missing.toml"): "no such",
        str(corrupt): "invalid TOML",
        str(future): "schema version 7 is newer",
        str(edited): "does not match the content",
        str(tmp_path): "is a directory",
    }
    for path, message in cases.items():
        err = assert_one_line_error(run_prov("diff", str(good), path))
        assert message in err, err
    err = assert_one_line_error(run_prov("snapshot", "--format", "yaml", "-o",
                                         str(tmp_path / "m.toml")))
    assert "toml or json" in err
    err = assert_one_line_error(run_prov("snapshot", "--out", str(tmp_path / "no/such/dir/m.toml")))
    assert "does not exist" in err
    assert not (tmp_path / "no").exists()


def test_output_formats_match_golden_files(tmp_path):
    m = sample()
    check_golden("manifest.toml", m.to_toml())
    check_golden("manifest.json", m.to_json())
    changed = sample()
    changed.facts["python"]["packages"]["torch"]["version"] = "2.14.0"
    changed.facts["env"]["NCCL_ALGO"] = "Tree"
    changed.facts["host"]["hostname"] = "node-2"
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    m.write(a)
    Manifest(changed.facts).write(b)
    p = run_prov("diff", str(a), str(b), "--json")
    check_golden("diff.json", p.stdout)


def test_help_does_not_import_heavy_modules():
    import subprocess
    import sys

    code = ("import sys\nfrom provenance.cli import run\nassert run(['--help']) == 0\n"
            "bad = [m for m in ('torch','vllm','docker','cyclonedx','numpy','git','pynvml') "
            "if m in sys.modules]\nprint('HEAVY', bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "HEAVY []" in out, out


def test_usage_errors_are_one_line():
    for args in (["compare", "onlyone"], ["snapshot", "--bogus"], ["nosuchcommand"]):
        err = assert_one_line_error(run_prov(*args))
        assert err.startswith("prov: error:") and "--help" in err


def test_written_files_get_normal_permissions(tmp_path):
    import os
    import stat

    umask = os.umask(0)
    os.umask(umask)
    out = tmp_path / "m.toml"
    sample().write(out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask  # not mkstemp's private 0600


def test_every_command_has_working_help_when_loaded_alone():
    """`prov NAME` loads only NAME's modules; each must register and render its help."""
    from provenance.cli import COMMAND_MODULES

    for name in COMMAND_MODULES:
        p = run_prov(name, "--help")
        assert p.returncode == 0, (name, p.stderr)
        assert "Usage: prov " + name in p.stdout.replace("\n", " ") or name in p.stdout
