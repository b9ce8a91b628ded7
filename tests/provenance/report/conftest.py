"""Fixtures: a synthetic 100k-position result, a user's script run under `prov exec` (the
demo model and a real divergence of it are shared with the publish tests:
tests/provenance/conftest.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def synthetic_100k(tmp_path_factory) -> Path:
    from tests.provenance.report.synthetic import synthetic_result

    return synthetic_result(tmp_path_factory.mktemp("report-100k") / "res")


USER_SCRIPT = '''\
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

model_dir = sys.argv[1]
tok = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa",
                                             dtype=torch.float32)
ids = tok("The engine records its manifest", return_tensors="pt").input_ids
out = model.generate(ids, max_new_tokens=12, do_sample=False)
with open("out.txt", "w") as f:
    f.write(tok.decode(out[0]) + "\\n")
'''


@pytest.fixture(scope="session")
def user_run(demo_model_dir, tmp_path_factory) -> tuple[Path, Path, str]:
    """(store, working directory, run id) of a user's own script under `prov exec`: it
    loads the demo model with transformers and writes out.txt, a declared output."""
    from tests.runners.clihelp import prov

    root = tmp_path_factory.mktemp("report-user-run")
    (root / "gen.py").write_text(USER_SCRIPT)
    p = prov("exec", "--output", "out.txt", "--", sys.executable, "gen.py",
             str(demo_model_dir), store=root / "store", cwd=root)
    assert p.returncode == 0, p.stderr[-3000:]
    run_id = re.search(r"prov: run ([0-9a-f]{16}) complete", p.stderr).group(1)
    return root / "store", root, run_id
