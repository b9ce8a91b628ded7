"""`prov run invariance` on transformers (the demo model), and the verdict logic itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from runners.invariance import compare_obs, decide, probe_summary
from runners.results import read_result
from tests.runners.clihelp import prov


def _obs(lp, gen, genlp=None):
    lp = np.asarray(lp, np.float32)
    return {"lp": lp, "top1": np.zeros(len(lp), np.int64), "top1lp": lp,
            "gen": np.asarray(gen, np.int64),
            "genlp": np.asarray(genlp if genlp is not None else [-1.0] * len(gen), np.float32)}


def test_compare_is_bitwise_and_says_where():
    a = _obs([-1.0, -2.0, -3.0], [5, 6])
    assert compare_obs(a, _obs([-1.0, -2.0, -3.0], [5, 6]))["identical"]
    r = compare_obs(a, _obs([-1.0, np.nextafter(np.float32(-2.0), np.float32(0)), -3.0], [5, 6]))
    assert not r["identical"]
    assert r["first_difference"] == {"where": "prompt", "position": 2}  # predicts token 2
    assert 0 < r["max_abs_logprob_diff"] < 1e-6
    c = compare_obs(a, _obs([-1.0, -2.0, -3.0], [5, 7]))
    assert c["first_difference"] == {"where": "continuation", "position": 1}
    assert c["top1_agreement"] == pytest.approx(4 / 5)


def test_verdict_needs_a_control_that_fails():
    same = probe_summary([("p", compare_obs(_obs([-1.0], [1]), _obs([-1.0], [1])))])
    differs = probe_summary([("p", compare_obs(_obs([-1.0], [1]), _obs([-1.5], [1])))])
    assert decide({"needle": same}, differs) == "invariant"
    assert decide({"needle": same}, same) == "unproven"  # never "invariant"
    assert decide({"needle": differs}, same) == "not invariant"


def _run(demo_model, tmp_path, name, engine, *extra):
    p = prov("run", "invariance", "--engine", engine, "--model", str(demo_model),
             "--text", str(demo_model / "eval.txt"), "--fillers", "4", "--needle-tokens", "48",
             "--filler-max", "40", "--max-new", "4", "--placements", "2",
             "--out", str(tmp_path / name), "--workdir", str(tmp_path / "work"), "--json", *extra,
             store=tmp_path / "store", cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    return p.returncode, json.loads(p.stdout)


@pytest.fixture(scope="module")
def runs(demo_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("inv")
    return tmp, {"plain": _run(demo_model, tmp, "plain", "transformers"),
                 "planted": _run(demo_model, tmp, "planted",
                                 "transformers:plant=batch_fp16_sum")}


def test_every_probe_runs_and_the_control_fails(runs):
    tmp, r = runs
    rc, s = r["plain"]
    assert set(s["probes"]) == {"run_to_run", "needle", "batch_size"}
    assert s["probes"]["run_to_run"]["identical"]  # one process, the same batch twice
    # transformers keeps no prefix cache and chunks nothing: said so, never "invariant"
    assert set(s["not_applicable"]) == {"prefix_cache", "chunked_prefill", "served"}
    assert all(v.startswith("not applicable") for v in s["not_applicable"].values())
    assert s["control"]["failed_as_required"] and not s["control"]["identical"]
    assert s["verdict"] in ("invariant", "not invariant") and rc == (s["verdict"] != "invariant")
    doc, arrays = read_result(tmp / "plain")
    assert doc["kind"] == "invariance" and doc["run"]["run_id"] == s["run_id"]
    assert doc["summary"]["verdict"] == s["verdict"]
    assert len(arrays["needle_alone_lp"]) == 47


def test_needle_probe_catches_the_planted_op(runs):
    _, r = runs
    rc, s = r["planted"]
    assert rc == 1 and s["verdict"] == "not invariant"
    needle = s["probes"]["needle"]
    assert not needle["identical"] and needle["first_difference"]["where"] == "prompt"
    assert needle["max_abs_logprob_diff"] > 0
    assert s["probes"]["run_to_run"]["identical"]  # the plant is deterministic per batch


def test_plant_is_identity_and_compare_refuses_it_undeclared(runs):
    """One workdir for both runs (as `prov run repeat` does): only the plant differs."""
    tmp, r = runs
    a, b = r["plain"][1]["run_id"], r["planted"][1]["run_id"]
    shown = prov("show", b, store=tmp / "store", cwd=tmp)
    assert "plant=batch_fp16_sum" in shown.stdout
    refused = prov("compare", a, b, store=tmp / "store", cwd=tmp)
    assert refused.returncode == 3 and "plant" in refused.stdout + refused.stderr
    passed = prov("compare", a, b, "--vary", "code.args.plant", "--vary", "run.params.plant",
                  store=tmp / "store", cwd=tmp)
    assert passed.returncode == 0, passed.stdout[-2000:] + passed.stderr[-2000:]


def test_a_control_that_does_not_fail_makes_it_unproven(demo_model, tmp_path):
    rc, s = _run(demo_model, tmp_path, "noop", "transformers", "--control", "noop",
                 "--probe", "run_to_run", "--probe", "needle")
    assert set(s["probes"]) == {"run_to_run", "needle"}
    assert s["control"]["identical"] and not s["control"]["failed_as_required"]
    if all(p["identical"] for p in s["probes"].values()):
        assert s["verdict"] == "unproven" and rc == 1
    else:  # a real batch effect in this build: shown whatever the control did
        assert s["verdict"] == "not invariant"


def test_bad_options_are_one_line(demo_model, tmp_path):
    p = prov("run", "invariance", "--engine", "transformers", "--model", str(demo_model),
             "--text", str(demo_model / "eval.txt"), "--fillers", "65",
             store=tmp_path / "store", cwd=tmp_path)
    assert p.returncode != 0 and "fillers must be 1..64" in p.stderr
    p = prov("run", "invariance", "--engine", "transformers:plant=bogus", "--model",
             str(demo_model), "--text", str(demo_model / "eval.txt"),
             store=tmp_path / "store", cwd=tmp_path)
    assert p.returncode != 0 and "plant must be one of" in p.stderr


def test_report_draws_the_verdict_and_probes(runs):
    tmp, _ = runs
    p = prov("report", str(tmp / "planted"), "--out", str(tmp / "r.html"),
             store=tmp / "store", cwd=tmp)
    assert p.returncode == 0, p.stderr[-2000:]
    html = (tmp / "r.html").read_text()
    assert "batch invariance" in html and "not invariant" in html
    assert "Probes (bitwise, per position)" in html and "differed, as it must" in html


def test_the_invariance_card_is_strict(runs):
    from provenance.model.disclosure import DisclosureCard, NotApplicable, publish_problems

    tmp, r = runs
    doc, _ = read_result(tmp / "plain")
    card = DisclosureCard.from_dict(doc["disclosure"])  # the strict check, or it raises
    assert card.kl_direction == NotApplicable("invariance compares raw bits, no KL")
    assert card.context_lengths == tuple(doc["summary"]["prompts"]["lengths"])
    assert card.runtime_environment.run_ids == (r["plain"][1]["run_id"],)
    assert publish_problems(doc["disclosure"], kl=False) == []
