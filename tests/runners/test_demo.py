"""`prov demo` end to end (on a copy of the cached demo model, so the build is not redone)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from tests.runners.clihelp import prov


def test_demo(demo_model, tmp_path):
    shutil.copytree(demo_model, tmp_path / "demo" / "model")
    p = prov("demo", "--workdir", str(tmp_path / "demo"), "--max-tokens", "384", "--json",
             store=tmp_path / "store", cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    fig = json.loads(p.stdout)
    assert fig["repeat"]["verdict"] == "bit-identical"
    for dtype in ("float32", "bfloat16"):
        d = fig[f"diverge_{dtype}"]
        assert d["mean_kl"] > 0  # eager and sdpa are not bit-identical
        assert d["noise_floor_max_kl"] == 0.0  # each reference repeats bit for bit on CPU
        doc = json.loads((tmp_path / "demo" / "results" / f"diverge-eager-sdpa-{dtype}" /
                          "result.json").read_text())
        assert doc["comparison"]["gate"] == "passed"
        assert doc["comparison_repeat"]["gate"] == "passed"
        assert doc["comparison"]["vary"] == ["attention-backend"]
        assert set(doc["disclosure"]) >= {"kl_direction", "aggregation", "calibration_data"}
    # bf16 rounding makes eager and sdpa drift further apart than fp32 does
    assert fig["diverge_bfloat16"]["mean_kl"] > fig["diverge_float32"]["mean_kl"]


def test_cli_start_imports_no_engine():
    code = ("import sys, provenance.cli; "
            "bad = [m for m in ('torch', 'transformers', 'vllm', 'numpy', 'tokenizers', "
            "'runners.diverge') if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
