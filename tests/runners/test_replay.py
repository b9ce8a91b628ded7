"""`prov run replay` end to end on CPU: a tiny model trained by the test to memorise the
bundled workstream, replayed under its reference configuration and perturbed ones, each a
recorded run through the supervisor and the gate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import special
from tokenizers import Tokenizer

from provenance.store import open_store
from runners.results import read_result
from runners.workstream import EXAMPLES, load_workstream
from runners.workstream.checks import VERDICTS
from runners.workstream.render import SEGMENTS, render_workstream
from runners.workstream.template import find_template
from tests.runners.clihelp import prov

WS = load_workstream(Path(EXAMPLES) / "file_agent.json")
CONFIGS = ["transformers:attn=sdpa,dtype=float32",  # the reference
           "transformers:dtype=bfloat16",
           "transformers:kv_cache=int4",
           "transformers:kv_cache=int2"]


@pytest.fixture(scope="module")
def replayed(replay_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replay")
    args = [a for c in CONFIGS for a in ("--config", c)]
    p = prov("run", "replay", "--model", str(replay_model), *args, "--vary", "kv-cache-dtype",
             "--vary", "dtype", "--out", str(tmp / "res"), "--workdir", str(tmp / "work"),
             "--json", store=tmp / "store", cwd=tmp)
    assert p.returncode == 0, p.stderr[-3000:]
    return tmp, json.loads(p.stdout)


def _captured_completions(replay_model):
    r = render_workstream(WS, find_template(replay_model), replay_model / "tokenizer.json")
    out = []
    for t in r.turns:
        ids = r.pieces[t.completion_piece].ids
        out.append(ids[: ids.index(r.end_ids[0])])
    return r, out


def test_reference_reproduces_every_captured_tool_call(replayed, replay_model):
    tmp, s = replayed
    ref = s["configs"][0]
    assert ref["config"] == CONFIGS[0]
    _, captured = _captured_completions(replay_model)
    meta = json.loads((tmp / "work" / "c0" / "replay.json").read_text())
    for mode in ("open_loop", "closed_loop"):
        assert [t["verdict"] for t in ref[mode]["turns"]] == ["exact"] * 4
        assert ref[mode]["first_failure"] is None and ref[mode]["recovered"] is None
        # independent of the checks: the generated ids are the captured ids, token for token
        assert [g["ids"] for g in meta[mode]] == captured
        assert all(g["stopped"] for g in meta[mode])
    tok = Tokenizer.from_file(str(replay_model / "tokenizer.json"))
    for g, m in zip(meta["closed_loop"], (WS.messages[i] for i in WS.call_turns), strict=True):
        call = json.loads(tok.decode(g["ids"], skip_special_tokens=False)
                          .split("<tool_call>")[1].split("</tool_call>")[0])
        assert call == {"name": m.tool_calls[0].name, "arguments": m.tool_calls[0].arguments}
    assert s["all_reproduced"][CONFIGS[0]] is True
    assert ref["teacher_forced"]["by_segment"]["tool_call"]["captured_top1"] == 1.0


def test_perturbed_configurations_report_verdicts_and_recovery(replayed):
    _, s = replayed
    assert sorted(s["matrix"]) == sorted(CONFIGS)
    assert [c["config"] for c in s["configs"]] == CONFIGS
    for c in s["configs"]:
        for mode in ("open_loop", "closed_loop"):
            turns = c[mode]["turns"]
            assert len(turns) == 4 and all(t["verdict"] in VERDICTS for t in turns)
            oks = [t["verdict"] in ("exact", "normalised") for t in turns]
            first = next((k for k, ok in enumerate(oks) if not ok), None)
            assert c[mode]["first_failure"] == first
            last = first is None or first == len(oks) - 1  # no later turn to recover in
            assert c[mode]["recovered"] == (None if last else any(oks[first + 1:]))
            assert s["matrix"][c["config"]][mode] == [t["verdict"] for t in turns]
    # the record says what ran, as the probe read it: the bf16 weights of the loaded model
    rt = {c["config"]: c["runtime"]["transformers"] for c in s["configs"]}
    assert rt[CONFIGS[1]]["models"]["0"]["dtype"] == "bfloat16"
    assert rt[CONFIGS[0]]["models"]["0"]["dtype"] == "float32"
    # ternary keys and values cannot carry this model: not every call survives
    assert not s["all_reproduced"][CONFIGS[3]]


def test_per_segment_figures_match_an_independent_computation(replayed, replay_model):
    tmp, s = replayed
    r, _ = _captured_completions(replay_model)
    labels = r.labels[1:]
    with np.load(tmp / "work" / "c0" / "scores.npz") as a:
        ref = a["scores"].astype(np.float64)
        assert np.array_equal(a["ids"], r.ids)
    lp = special.log_softmax(ref, axis=1)
    for i in (1, 2, 3):
        with np.load(tmp / "work" / f"c{i}" / "scores.npz") as b:
            lq = special.log_softmax(b["scores"].astype(np.float64), axis=1)
        kl = special.rel_entr(np.exp(lp), np.exp(lq)).sum(axis=1)
        agree = lp.argmax(axis=1) == lq.argmax(axis=1)
        vs = s["configs"][i]["vs_reference"]
        for k, seg in enumerate(SEGMENTS):
            sel = labels == k
            got = vs["by_segment"][seg]
            assert got["positions"] == int(sel.sum())
            assert abs(got["top1_agreement"] - agree[sel].mean()) <= 1e-12
            assert abs(got["mean_kl_ref_cand"] - kl[sel].mean()) <= 1e-6
            assert got["disagreements"] == int((~agree & sel).sum())


def test_result_record_card_and_gate(replayed, replay_model):
    tmp, s = replayed
    doc, arrays = read_result(tmp / "res")
    r, _ = _captured_completions(replay_model)
    assert doc["kind"] == "replay"
    card = doc["disclosure"]
    from provenance.model.disclosure import publish_problems

    assert publish_problems(card) == []  # strict, and publishable as a KL figure
    assert card["kl_direction"] == "KL(ref||cand)" and card["context_lengths"] == [len(r.ids)]
    assert card["evaluation_text"]["chat_template_digest"] == r.template_digest
    assert card["evaluation_text"]["token_ids_digest"] == r.ids_digest
    assert card["reference_checkpoint"]["reference_engine"] == CONFIGS[0]
    assert np.array_equal(arrays["ids"], r.ids) and np.array_equal(arrays["labels"], r.labels)
    store = open_store(tmp / "store")
    runs = [store.get_run(x["run_id"]) for x in doc["runs"]]
    assert len(runs) == 4
    # the emulated cache is prov's own code, not the engine's: its parameter and argument
    # say what ran, and they are identity (the kv-cache-dtype preset covers them)
    facts = store.run_manifest(runs[2].record).facts
    assert facts["run"]["params"]["kv_cache_dtype"] == "int4-emulated"
    assert facts["code"]["args"]["kv_cache_dtype"] == "int4"
    assert runs[0].record.params["workstream_ids_digest"] == r.ids_digest
    for cmp_ in doc["comparisons"]:
        assert cmp_["gate"] == "passed"
    assert {"run.params.kv_cache_dtype", "code.args.kv_cache_dtype"} <= \
        set(doc["comparisons"][1]["varied_keys"]["kv-cache-dtype"])


def test_gate_refuses_an_undeclared_difference(replay_model, tmp_path):
    p = prov("run", "replay", "--model", str(replay_model), "--config", CONFIGS[0],
             "--config", CONFIGS[2], "--out", str(tmp_path / "res"), "--vary", "dtype",
             store=tmp_path / "store", cwd=tmp_path)
    assert p.returncode == 3
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("prov: error: refused:") and "kv_cache_dtype" in last
    assert not (tmp_path / "res").exists()
