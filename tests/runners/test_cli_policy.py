"""`--policy FILE` end to end on the real transformers engine (CPU, the demo model): PASS,
FAIL, NOT_COMPARABLE and NOT_EVALUATED with their exit codes, the block recorded in
result.json, a bad policy refused before anything runs; `prov compare` and
`prov run invariance` with a policy. The noise floor through the CLI: 0 for the CPU engine's
bit-identical repeat (PASS), measured for a planted non-deterministic reference (FAIL),
skipped with --no-noise-floor (NOT_EVALUATED)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from provenance.model.policy import resolve
from tests.runners.clihelp import prov


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _diverge(demo_model, tmp, policy: Path, *extra: str, ref: str = "transformers:attn=eager",
             cand: str = "transformers:attn=sdpa"):
    return prov("run", "diverge", "--model", str(demo_model), "--text",
                str(demo_model / "eval.txt"), "--max-tokens", "96", "--out", str(tmp / "res"),
                "--workdir", str(tmp / "work"), "--policy", str(policy), "--ref", ref,
                "--cand", cand, *extra, store=tmp / "store", cwd=tmp)


def _recorded(tmp: Path, policy: Path, printed: dict) -> dict:
    """The result's policy block, checked against the file and the summary it judged."""
    doc = json.loads((tmp / "res" / "result.json").read_text())
    block = doc["policy"]
    assert block == printed["policy"]
    assert block["path"] == str(policy)
    assert block["sha256"] == hashlib.sha256(policy.read_bytes()).hexdigest()
    for c in block["checks"]:
        if c["outcome"] != "not_evaluated" or c["observed"] is not None:
            assert c["observed"] == resolve(doc["summary"], c["statistic"])
    return block


@pytest.fixture(scope="module")
def passed(demo_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pass")
    pol = _write(tmp, "accept.toml", "[[check]]\nstatistic = 'top1_agreement'\nmin = 0.5\n"
                 "[[check]]\nstatistic = 'kl_ref_cand.p99'\nmax = 1.0\n"
                 "[[check]]\nstatistic = 'noise_floor.kl_ref_cand.max'\nmax = 0.0\n"
                 "[[check]]\nstatistic = 'topk_agreement.5'\nmin = 0.5\n")
    p = _diverge(demo_model, tmp, pol, "--vary", "attention-backend", "--json")
    return tmp, pol, p


def test_pass_exits_0_and_records_the_policy(passed):
    tmp, pol, p = passed
    assert p.returncode == 0, p.stderr[-3000:]
    block = _recorded(tmp, pol, json.loads(p.stdout))
    assert block["verdict"] == "PASS"
    assert [c["outcome"] for c in block["checks"]] == ["pass"] * 4
    # the reference's second execution: through the gate with nothing declared, recorded
    doc = json.loads((tmp / "res" / "result.json").read_text())
    assert doc["comparison_repeat"]["gate"] == "passed"
    assert doc["comparison_repeat"]["vary"] == [] and doc["comparison_repeat"]["identical"]
    assert doc["runs"]["reference_repeat"] not in (None, doc["runs"]["reference"])
    assert doc["summary"]["noise_floor"]["repeat_run"] == doc["runs"]["reference_repeat"]
    assert doc["runs"]["reference_repeat"] in \
        doc["disclosure"]["runtime_environment"]["run_ids"]


def test_fail_exits_1_and_the_planted_noise_floor_is_measured(demo_model, tmp_path):
    """A reference made non-deterministic (plant=process_noise: noise drawn afresh in every
    process): its repeat differs, and the noise floor says by how much."""
    from tests.runners import oracle

    pol = _write(tmp_path, "strict.toml", "[[check]]\nstatistic = 'kl_ref_cand.max'\n"
                 "max = 0.0\n[[check]]\nstatistic = 'noise_floor.kl_ref_cand.max'\n"
                 "max = 0.0\n[[check]]\nstatistic = 'nope'\nmin = 1\n")
    p = _diverge(demo_model, tmp_path, pol, "--vary", "attention-backend", "--json",
                 ref="transformers:attn=eager,plant=process_noise",
                 cand="transformers:attn=sdpa,plant=process_noise")
    assert p.returncode == 1, p.stderr[-3000:]
    block = _recorded(tmp_path, pol, json.loads(p.stdout))
    # eager and sdpa differ in the last bits: some KL above 0; a FAIL wins over the missing one
    assert block["verdict"] == "FAIL"
    assert [c["outcome"] for c in block["checks"]] == ["fail", "fail", "not_evaluated"]
    assert block["checks"][0]["observed"] > 0 and block["checks"][1]["observed"] > 0
    doc = json.loads((tmp_path / "res" / "result.json").read_text())
    assert doc["comparison_repeat"]["gate"] == "passed"  # one configuration, run twice
    ids = np.load(tmp_path / "work" / "ids.npy")
    ref, rep = (np.load(tmp_path / "work" / d / "scores.npz")["scores"]
                for d in ("ref", "ref_repeat"))
    want, nf = oracle.noise(ref, rep, ids), doc["summary"]["noise_floor"]
    assert want["bit_identical_positions"] == nf["bit_identical_positions"] == 0
    for side in ("kl_ref_cand", "kl_cand_ref"):
        for k, v in want[side].items():
            oracle.close(nf[side][k], v, f"{side}.{k}", 1e-7, 1e-15)
    oracle.close(nf["max_abs_logit_delta"], want["max_abs_logit_delta"], "delta", 0, 0)
    oracle.close(nf["top1_agreement"], want["top1_agreement"], "top1", 0, 0)
    assert nf["kl_ref_cand"]["mean"] > 0


def test_not_evaluated_exits_5(demo_model, tmp_path):
    pol = _write(tmp_path, "more.toml", "[[check]]\nstatistic = 'top1_agreement'\nmin = 0\n"
                 "[[check]]\nstatistic = 'noise_floor.kl_ref_cand.max'\nmax = 1e-6\n")
    p = _diverge(demo_model, tmp_path, pol, "--vary", "attention-backend", "--json",
                 "--no-noise-floor")
    assert p.returncode == 5, p.stderr[-3000:]
    block = _recorded(tmp_path, pol, json.loads(p.stdout))
    assert block["verdict"] == "NOT_EVALUATED"
    skipped = json.loads(p.stdout)["noise_floor"]
    assert block["checks"][1] == {"statistic": "noise_floor.kl_ref_cand.max", "max": 1e-6,
                                  "observed": skipped, "outcome": "not_evaluated",
                                  "reason": f"not computable: {skipped['not_computable']}"}
    assert "--no-noise-floor" in skipped["not_computable"]
    assert not (tmp_path / "work" / "ref_repeat").exists()  # the reference ran once


def test_not_comparable_exits_3_and_writes_nothing(demo_model, tmp_path):
    pol = _write(tmp_path, "p.toml", "[[check]]\nstatistic = 'top1_agreement'\nmin = 0\n")
    p = _diverge(demo_model, tmp_path, pol)  # no --vary: the gate refuses
    assert p.returncode == 3, p.stderr[-3000:]
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("prov: error: refused:") and last.endswith(
        f"policy {pol}: NOT_COMPARABLE"), last
    assert not (tmp_path / "res").exists()


def test_a_bad_policy_exits_2_before_any_run(demo_model, tmp_path):
    pol = _write(tmp_path, "bad.toml", "[[check]]\nstatistic = 'top1_agreement'\nmin = 'high'\n")
    p = _diverge(demo_model, tmp_path, pol, "--vary", "attention-backend")
    assert p.returncode == 2
    assert p.stderr.strip() == (f"prov: error: {pol}: check 1 (top1_agreement): min: must be "
                                "a number, not a string 'high'")
    assert not (tmp_path / "work").exists() and not (tmp_path / "store").exists()


def test_compare_with_a_policy(passed):
    tmp, _, p = passed
    runs = json.loads((tmp / "res" / "result.json").read_text())["runs"]
    pol = _write(tmp, "cmp.toml", "[[check]]\nstatistic = 'comparable'\nequals = true\n"
                 "[[check]]\nstatistic = 'identical'\nequals = false\n")
    ok = prov("compare", runs["reference"], runs["candidate"], "--vary", "attention-backend",
              "--policy", str(pol), "--json", store=tmp / "store", cwd=tmp)
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["policy"]["verdict"] == "PASS"
    assert doc["policy"]["sha256"] == hashlib.sha256(pol.read_bytes()).hexdigest()
    assert [c["observed"] for c in doc["policy"]["checks"]] == [doc["comparable"],
                                                                doc["identical"]]
    refused = prov("compare", runs["reference"], runs["candidate"], "--policy", str(pol),
                   "--json", store=tmp / "store", cwd=tmp)
    assert refused.returncode == 3
    doc = json.loads(refused.stdout)
    assert doc["comparable"] is False and doc["policy"]["verdict"] == "NOT_COMPARABLE"
    assert {c["outcome"] for c in doc["policy"]["checks"]} == {"not_evaluated"}


def test_invariance_with_a_policy(demo_model, tmp_path):
    pol = _write(tmp_path, "inv.toml", "[[check]]\nstatistic = 'control.failed_as_required'\n"
                 "equals = true\n[[check]]\nstatistic = 'probes.run_to_run.identical'\n"
                 "equals = true\n[[check]]\nstatistic = 'probes.prefix_cache.identical'\n"
                 "equals = true\n")
    p = prov("run", "invariance", "--engine", "transformers", "--model", str(demo_model),
             "--text", str(demo_model / "eval.txt"), "--fillers", "2", "--needle-tokens", "24",
             "--filler-max", "24", "--max-new", "2", "--placements", "1",
             "--probe", "run_to_run", "--out", str(tmp_path / "res"), "--workdir",
             str(tmp_path / "work"), "--policy", str(pol), "--json",
             store=tmp_path / "store", cwd=tmp_path)
    # run_to_run is bit-identical on CPU and the planted control differs; prefix_cache was
    # not run (transformers keeps no prefix cache): evidence missing, nothing failed
    assert p.returncode == 5, p.stderr[-3000:]
    block = _recorded(tmp_path, pol, json.loads(p.stdout))
    assert block["verdict"] == "NOT_EVALUATED"
    assert [c["outcome"] for c in block["checks"]] == ["pass", "pass", "not_evaluated"]
