"""Spec parsing and validation: one clear line per problem, and cell planning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runners.sweep.plan import plan
from runners.sweep.spec import SpecError, parse_spec

GOOD = """
[sweep]
name = "s"
engine = "transformers"
model = "m"
text = "t.txt"
[axes]
attn = ["eager", "sdpa"]
dtype = ["float32", "bfloat16"]
[reference]
attn = "eager"
dtype = "float32"
[resources]
resources = { head_node = 1 }
[[resources.when]]
match = { dtype = "bfloat16" }
resources = { odd_node = 1 }
"""
DIGESTS = {"model_digest": "sha256:aa", "tokenizer_digest": "sha256:bb", "text_digest": "x"}


def test_good_spec_plans_four_cells_reference_first(tmp_path):
    spec = parse_spec(GOOD, "s.toml", tmp_path)
    assert spec.model == tmp_path / "m" and spec.text == tmp_path / "t.txt"
    cells = plan(spec, DIGESTS)
    assert [c.label for c in cells][0] == "attn=eager,dtype=float32" and cells[0].is_reference
    assert len({c.key for c in cells}) == 4
    res = {c.label: c.resources for c in cells}
    assert res["attn=sdpa,dtype=bfloat16"] == {"odd_node": 1.0}  # a rule replaces the default
    assert res["attn=sdpa,dtype=float32"] == {"head_node": 1.0}
    assert cells[1].config.spec == "transformers:attn=eager,dtype=bfloat16"


def test_cell_keys_depend_on_what_decides_numbers(tmp_path):
    spec = parse_spec(GOOD, "s.toml", tmp_path)
    a = {c.label: c.key for c in plan(spec, DIGESTS)}
    b = {c.label: c.key for c in plan(spec, {**DIGESTS, "text_digest": "y"})}
    assert a == {c.label: c.key for c in plan(parse_spec(GOOD, "s", tmp_path), DIGESTS)}
    assert not set(a.values()) & set(b.values())


@pytest.mark.parametrize("mutate, message", [
    (lambda s: s.replace('engine = "transformers"', 'engine = "onnx"'), "unknown engine 'onnx'"),
    (lambda s: s.replace('attn = ["eager", "sdpa"]', 'atn = ["eager", "sdpa"]'),
     "unknown transformers option 'atn'"),
    (lambda s: s.replace('dtype = "float32"\n[resources]', 'dtype = "float16"\n[resources]'),
     "[reference].dtype: 'float16' is not one of the axis values"),
    (lambda s: s.replace('attn = "eager"\n', ''), "needs exactly one value per axis; missing attn"),
    (lambda s: s.replace('["eager", "sdpa"]', '[]'), "[axes].attn: must be a non-empty list"),
    (lambda s: s.replace('["eager", "sdpa"]', '["eager", "eager"]'), "duplicate values"),
    (lambda s: s + "\n[extra]\n", "unknown key(s) extra"),
    (lambda s: s.replace('name = "s"', 'name = "s"\nrepeats = 0'), "repeats: must be an integer >= 1"),
    (lambda s: s.replace('match = { dtype = "bfloat16" }', 'match = { dtype = "fp8" }'),
     "names no axis value"),
    (lambda s: s.replace('model = "m"\n', ''), "[sweep]: missing model"),
    (lambda s: s.replace("[sweep]", "[sweep"), "not valid TOML"),
])
def test_bad_specs_are_refused_with_one_clear_line(tmp_path, mutate, message):
    with pytest.raises(SpecError) as exc:
        parse_spec(mutate(GOOD), "s.toml", tmp_path)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_cli_bad_spec_one_line_nonzero_nothing_written(tmp_path):
    (tmp_path / "s.toml").write_text(GOOD.replace('engine = "transformers"', 'engine = "x"'))
    prov = str(Path(sys.executable).with_name("prov"))
    out = subprocess.run([prov, "sweep", "s.toml"], cwd=tmp_path, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "PROV_STORE": str(tmp_path / "store")})
    assert out.returncode == 2
    assert out.stderr.startswith("prov: error: s.toml [axes].attn: unknown engine 'x'")
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "store").exists()
    missing = subprocess.run([prov, "sweep", "nope.toml"], cwd=tmp_path, capture_output=True,
                             text=True, env={"PATH": "/usr/bin:/bin"})
    assert missing.returncode == 2 and "nope.toml: no such spec file" in missing.stderr


def test_sweep_cli_does_not_import_ray_or_torch():
    code = ("import sys; import provenance.cli.sweep_cmd; "
            "print(sorted(m for m in ('ray', 'torch', 'runners.sweep') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
