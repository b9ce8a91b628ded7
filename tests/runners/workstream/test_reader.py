"""Reading workstreams: the bundled example, and malformed ones each giving one clear line
that names the message (through the real `prov` CLI too)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from runners.workstream import EXAMPLES, WorkstreamError, load_workstream, parse_workstream
from tests.runners.clihelp import prov

EXAMPLE = Path(EXAMPLES) / "file_agent.json"


def _doc() -> dict:
    return json.loads(EXAMPLE.read_text())


def test_bundled_example_reads():
    ws = load_workstream(EXAMPLE)
    assert [t.name for t in ws.tools] == ["list_dir", "read_file", "grep"]
    assert ws.call_turns == [2, 4, 6, 8]
    call = ws.messages[4].tool_calls[0]
    assert call.name == "read_file"
    assert call.arguments == {"path": "src/test_cache.py", "start": 1, "limit": 20}
    assert ws.digest.startswith("sha256:") and len(ws.digest) == 71


def _broken(kind: str) -> dict:
    doc = copy.deepcopy(_doc())
    if kind == "not-json":
        doc["messages"][4]["tool_calls"][0]["function"]["arguments"] = '{"path": "src/'
    elif kind == "undeclared":
        doc["messages"][6]["tool_calls"][0]["function"]["name"] = "delete_file"
    elif kind == "role":
        doc["messages"][3]["role"] = "observer"
    return doc


CASES = [
    ("not-json", "message 4 (assistant), tool call 0: arguments of 'read_file' are not JSON"),
    ("undeclared", "message 6 (assistant), tool call 0: calls tool 'delete_file', which is not "
                   "declared (declared: grep, list_dir, read_file)"),
    ("role", "message 3 (observer): unknown role 'observer' (known: system, user, assistant, "
             "tool)"),
]


@pytest.mark.parametrize(("kind", "expected"), CASES)
def test_malformed_names_the_message(kind, expected):
    with pytest.raises(WorkstreamError) as err:
        parse_workstream(_broken(kind), "ws.json")
    assert str(err.value).startswith("ws.json: " + expected)
    assert "\n" not in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "expected"), CASES)
def test_cli_malformed_is_one_line_exit_2(kind, expected, tmp_path):
    bad = tmp_path / f"{kind}.json"
    bad.write_text(json.dumps(_broken(kind)))
    p = prov("run", "replay", str(bad), "--model", str(tmp_path), "--out", str(tmp_path / "r"),
             store=tmp_path / "store", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"prov: error: {bad}: {expected}"), lines
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "r").exists()


def test_other_problems_are_named_too():
    doc = _doc()
    doc["messages"][3]["tool_call_id"] = "call_9"
    with pytest.raises(WorkstreamError, match=r"message 3 \(tool\): tool_call_id 'call_9' "
                                              "answers no earlier tool call"):
        parse_workstream(doc, "ws.json")
    doc = _doc()
    doc["tools"][1]["function"]["parameters"]["properties"]["start"]["type"] = "int"
    with pytest.raises(WorkstreamError, match=r"tool 1 \(read_file\): parameters are not a "
                                              "valid JSON Schema"):
        parse_workstream(doc, "ws.json")
    doc = _doc()
    doc["messages"][2]["tool_calls"][0]["function"]["arguments"] = "[1, 2]"
    with pytest.raises(WorkstreamError, match=r"message 2 \(assistant\), tool call 0: arguments "
                                              "of 'list_dir' must be a JSON object"):
        parse_workstream(doc, "ws.json")
    with pytest.raises(WorkstreamError, match="not JSON"):
        load_workstream(Path(__file__))  # a Python file
