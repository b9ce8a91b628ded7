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


SKIP = GOOD + """
[[skip]]
match = { attn = "sdpa", dtype = "bfloat16" }
reason = "not offered by this engine"
"""


def test_skip_rules_mark_cells_with_their_reason(tmp_path):
    cells = {c.label: c for c in plan(parse_spec(SKIP, "s.toml", tmp_path), DIGESTS)}
    assert cells["attn=sdpa,dtype=bfloat16"].skip == "not offered by this engine"
    assert [c.skip for label, c in cells.items() if label != "attn=sdpa,dtype=bfloat16"] == \
        [None, None, None]


@pytest.mark.parametrize("rule, message", [
    ('match = { attn = "eager", dtype = "float32" }\nreason = "x"', "matches the reference"),
    ('match = { attn = "flash" }\nreason = "x"', "attn = 'flash' names no axis value"),
    ('match = { attn = "sdpa" }', "needs exactly `match` and `reason`"),
    ('match = { attn = "sdpa" }\nreason = " "', "reason: must be a non-empty string"),
])
def test_bad_skip_rules_are_one_line_errors(tmp_path, rule, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(")):
        parse_spec(GOOD + "\n[[skip]]\n" + rule + "\n", "s.toml", tmp_path)


def test_the_gpu_grid_spec_is_valid_and_skips_what_vllm_does_not_offer(tmp_path):
    # bench/gpu/vllm_grid.py writes this spec on the device: a typo must fail here, not there
    from bench.gpu.vllm_grid import GPU_AXES, GPU_REFERENCE, GPU_SKIPS, MEMORY, spec_text

    text = spec_text(tmp_path / "model", GPU_AXES, GPU_SKIPS, {"dtype": "bfloat16", **MEMORY},
                     2048, GPU_REFERENCE)
    spec = parse_spec(text, "grid.toml", tmp_path)
    assert spec.vary == []  # nothing declared beyond the axes
    cells = plan(spec, DIGESTS)
    assert len(cells) == 24 and cells[0].label == \
        "quantization=none,attention_backend=FLASH_ATTN,kv_cache_dtype=auto"
    # the FLASHINFER cells (a JIT build on first use) are in the first wave of --jobs 6
    assert [c.label for c in cells[1:3]] == [
        "quantization=none,attention_backend=FLASHINFER,kv_cache_dtype=auto",
        "quantization=none,attention_backend=FLASHINFER,kv_cache_dtype=int8_per_token_head"]
    skipped = {c.label for c in cells if c.skip}
    assert skipped == {f"quantization={q},attention_backend={b},kv_cache_dtype={kv}"
                       for q in ("none", "fp8") for b in ("FLASH_ATTN", "FLASHINFER")
                       for kv in ("int8_per_token_head", "int4_per_token_head")}
    tri = next(c for c in cells if c.label ==
               "quantization=none,attention_backend=TRITON_ATTN,kv_cache_dtype=auto")
    assert tri.config.spec == ("vllm:attention_backend=TRITON_ATTN,dtype=bfloat16,"
                               "gpu_memory_utilization=0.05,kv_cache_dtype=auto,"
                               "kv_cache_memory_bytes=2147483648,quantization=none")


def test_an_online_quantization_axis_is_gated_as_weights_and_quantization():
    from runners.sweep.matrix import vary_for

    assert vary_for(["quantization", "kv_cache_dtype"], []) == \
        ["weights", "quantization", "kv-cache-dtype"]


INV = GOOD + """
[invariance]
fillers = 3
placements = 1
max_new = 2
needle_tokens = 16
probes = ["run_to_run", "needle"]
"""


def test_an_invariance_table_fills_defaults_and_is_part_of_the_cell_key(tmp_path):
    spec = parse_spec(INV, "s.toml", tmp_path)
    assert spec.invariance == {"fillers": 3, "seed": 0, "needle_tokens": 16, "filler_min": 8,
                               "filler_max": 64, "placements": 1, "max_new": 2,
                               "control": "batch_fp16_sum", "probes": ["run_to_run", "needle"],
                               "clients": 16}
    assert parse_spec(GOOD, "s.toml", tmp_path).invariance is None
    plain = {c.label: c.key for c in plan(parse_spec(GOOD, "s", tmp_path), DIGESTS)}
    probed = {c.label: c.key for c in plan(spec, DIGESTS)}
    other = {c.label: c.key for c in plan(parse_spec(INV.replace("max_new = 2", "max_new = 3"),
                                                     "s", tmp_path), DIGESTS)}
    assert not set(plain.values()) & set(probed.values())
    assert not set(probed.values()) & set(other.values())
    # a default written out plans the very same cells as one left out
    spelled = parse_spec(INV + "seed = 0\n", "s", tmp_path)
    assert {c.label: c.key for c in plan(spelled, DIGESTS)} == probed


@pytest.mark.parametrize("mutate, message", [
    (lambda s: s + "filers = 4\n", "s.toml [invariance]: unknown key(s) filers (allowed: "
     "clients, control, filler_max, filler_min, fillers, max_new, needle_tokens, placements, "
     "probes, seed)"),
    (lambda s: s.replace("fillers = 3", "fillers = 65"), "[invariance]: fillers must be 1..64"),
    (lambda s: s.replace("fillers = 3", 'fillers = "3"'),
     "[invariance].fillers: must be an integer >= 1, got '3'"),
    (lambda s: s.replace("max_new = 2", "max_new = 0"),
     "[invariance].max_new: must be an integer >= 1, got 0"),
    (lambda s: s + "seed = -1\n", "[invariance].seed: must be an integer >= 0, got -1"),
    (lambda s: s.replace('"needle"]', '"needel"]'), "unknown probe(s) ['needel']"),
    (lambda s: s.replace('"needle"]', '"needle", "needle"]'), "distinct probe names"),
    (lambda s: s + 'control = "none"\n', "[invariance]: control must be one of"),
    (lambda s: s.replace("needle_tokens = 16", "needle_tokens = 4"), "needle_tokens >= 8"),
    (lambda s: "invariance = 1\n" + s.split("[invariance]")[0], "[invariance] must be a table"),
])
def test_bad_invariance_tables_are_one_line_errors(tmp_path, mutate, message):
    with pytest.raises(SpecError) as exc:
        parse_spec(mutate(INV), "s.toml", tmp_path)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)
