"""`prov run` end to end: workers under the exec supervisor, the gate before any figure."""

from __future__ import annotations

import json

import numpy as np
from scipy import special

from provenance.store import open_store
from tests.runners.clihelp import prov


def _diverge(demo_model, tmp_path, *extra):
    return prov("run", "diverge", "--model", str(demo_model), "--text",
                str(demo_model / "eval.txt"), "--max-tokens", "256", "--out",
                str(tmp_path / "res"), "--workdir", str(tmp_path / "work"), *extra,
                store=tmp_path / "store", cwd=tmp_path)


def test_gate_refuses_undeclared_backend_difference(demo_model, tmp_path):
    p = _diverge(demo_model, tmp_path, "--ref", "transformers:attn=eager",
                 "--cand", "transformers:attn=sdpa")
    assert p.returncode == 3, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("prov: error: refused:")
    assert "runtime.transformers.models.0.attn_implementation" in last and "code.args.attn" in last, last
    assert not (tmp_path / "res").exists()  # no figure without the gate


def test_gate_passes_declared_backend_and_records_it(demo_model, tmp_path):
    p = _diverge(demo_model, tmp_path, "--ref", "transformers:attn=eager",
                 "--cand", "transformers:attn=sdpa", "--vary", "attention-backend", "--json",
                 "--no-noise-floor")  # the floor's own run: tests/runners/test_cli_policy.py
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    doc = json.loads((tmp_path / "res" / "result.json").read_text())
    cmp_ = doc["comparison"]
    assert cmp_["gate"] == "passed"
    assert "runtime.transformers.models.0.attn_implementation" in \
        cmp_["varied_keys"]["attention-backend"]
    store = open_store(tmp_path / "store")
    assert store.list_comparisons()[0]["object"] == cmp_["comparison_record"]
    # both engine runs are recorded runs whose manifests carry the resolved backend
    for role, want in (("reference", "eager"), ("candidate", "sdpa")):
        info = store.get_run(doc["runs"][role])
        facts = store.run_manifest(info.record).facts
        assert facts["runtime"]["transformers"]["models"]["0"]["attn_implementation"] == want
    # the printed figures are those of an independent computation on the stored logits
    with np.load(tmp_path / "work" / "ref" / "scores.npz") as a, \
            np.load(tmp_path / "work" / "cand" / "scores.npz") as b:
        lp = special.log_softmax(a["scores"].astype(np.float64), axis=1)
        lq = special.log_softmax(b["scores"].astype(np.float64), axis=1)
    kl = special.rel_entr(np.exp(lp), np.exp(lq)).sum(axis=1)
    assert abs(out["kl_ref_cand"]["mean"] - kl.mean()) <= 1e-6


def test_gate_refuses_a_second_difference_and_says_what(demo_model, tmp_path):
    p = _diverge(demo_model, tmp_path, "--ref", "transformers:attn=eager",
                 "--cand", "transformers:attn=sdpa,dtype=bfloat16", "--vary", "attention-backend")
    assert p.returncode == 3
    last = p.stderr.strip().splitlines()[-1]
    assert "runtime.transformers.models.0.dtype" in last
    assert "attention_backend" not in last  # that one was declared
    assert "runtime.transformers.models.0.dtype" in p.stderr  # the table too


def test_bad_input_is_one_line(demo_model, tmp_path):
    cases = [
        ("--engine", "nosuch", "--model", str(demo_model), "--text", str(demo_model / "eval.txt")),
        ("--engine", "transformers", "--model", str(tmp_path), "--text", "x.txt"),
        ("--engine", "transformers:attn", "--model", str(demo_model), "--text", "x"),
        ("--engine", "transformers", "--model", str(demo_model), "--text",
         str(tmp_path / "missing.txt")),
        ("--engine", "transformers", "--model", str(demo_model), "--text",
         str(demo_model / "eval.txt"), "--n", "1"),
    ]
    for args in cases:
        p = prov("run", "repeat", *args, store=tmp_path / "store", cwd=tmp_path)
        assert p.returncode == 2, (args, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("prov: error: "), p.stderr
        assert "Traceback" not in p.stderr
