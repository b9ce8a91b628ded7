"""Rendering: our jinja rendering against transformers' apply_chat_template (the oracle, in a
child process), ids against a whole-text tokenisation, segment labels against the captured
contents, and the digests."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runners.workstream import EXAMPLES, load_workstream
from runners.workstream.render import SEGMENTS, ids_digest, render_workstream
from runners.workstream.template import TemplateError, find_template, render

WS = load_workstream(Path(EXAMPLES) / "file_agent.json")

ORACLE = r"""
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
job = json.loads(sys.stdin.read())
out = []
for n, gen in job["cuts"]:
    text = tok.apply_chat_template(job["messages"][:n], tools=job["tools"], tokenize=False,
                                   add_generation_prompt=gen)
    ids = tok.apply_chat_template(job["messages"][:n], tools=job["tools"], tokenize=True,
                                  add_generation_prompt=gen, return_dict=False)
    out.append({"text": text, "ids": list(ids)})
print(json.dumps(out))
"""


def test_rendering_matches_transformers(replay_model):
    template = find_template(replay_model)
    msgs = [m.to_template() for m in WS.messages]
    tools = [t.to_template() for t in WS.tools]
    cuts = [(len(msgs), False), (2, True), (6, True)]
    p = subprocess.run([sys.executable, "-c", ORACLE, str(replay_model)], capture_output=True,
                       text=True, input=json.dumps({"messages": msgs, "tools": tools,
                                                    "cuts": cuts}), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    want = json.loads(p.stdout.strip().splitlines()[-1])
    r = render_workstream(WS, template, replay_model / "tokenizer.json")
    assert r.text == want[0]["text"]
    assert r.ids.tolist() == want[0]["ids"] and r.ids_match_whole_text
    for (n, gen), w in zip(cuts[1:], want[1:], strict=True):
        assert render(template, msgs[:n], tools, add_generation_prompt=gen) == w["text"]
        # the captured prefix a replay generates from: the prompt piece of the turn at n
        turn = next(t for t in r.turns if t.msg == n)
        prefix = r.ids[: r.piece_start(turn.prompt_piece) + len(r.pieces[turn.prompt_piece].ids)]
        assert prefix.tolist() == w["ids"]


def test_digests(replay_model):
    template = find_template(replay_model)
    cfg = json.loads((replay_model / "tokenizer_config.json").read_text())
    r = render_workstream(WS, template, replay_model / "tokenizer.json")
    assert r.template_digest == "sha256:" + hashlib.sha256(
        cfg["chat_template"].encode()).hexdigest()
    assert r.ids_digest == "sha256:" + hashlib.sha256(
        np.asarray(r.ids, dtype="<i8").tobytes()).hexdigest()
    assert ids_digest(r.ids[:-1]) != r.ids_digest


def test_segment_labels_cover_the_captured_contents(replay_model):
    r = render_workstream(WS, find_template(replay_model), replay_model / "tokenizer.json")
    labels, msgs = r.labels, r.msg_of_token

    def text_of(msg: int, seg: str) -> str:
        sel = np.flatnonzero((msgs == msg) & (labels == SEGMENTS.index(seg)))
        return "".join(r.decode(int(i), int(i) + 1) for i in sel)

    for m in WS.messages:
        if m.role == "assistant":
            assert text_of(m.index, "assistant_prose") == m.content
            calls = [json.dumps({"name": c.name, "arguments": c.arguments}) for c in m.tool_calls]
            assert text_of(m.index, "tool_call") == "".join(calls)
        else:
            seg = {"system": "system", "user": "user", "tool": "tool_result"}[m.role]
            assert text_of(m.index, seg) == m.content
    assert {SEGMENTS[x] for x in labels} == set(SEGMENTS)
    assert len(r.turns) == 4 and [t.msg for t in r.turns] == WS.call_turns


def test_template_that_is_not_prefix_stable_is_refused(replay_model):
    bad = "{% for m in messages|reverse %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n" \
          "{% endfor %}"
    with pytest.raises(TemplateError, match=r"message 1 \(user\): the chat template is not "
                                            "prefix-stable"):
        render_workstream(WS, bad, replay_model / "tokenizer.json")
    with pytest.raises(TemplateError, match="has no chat template"):
        find_template(replay_model.parent)
