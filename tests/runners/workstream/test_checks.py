"""Verdicts on generated tool calls, against hand-written generations of each kind."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from runners.workstream import EXAMPLES, load_workstream
from runners.workstream.checks import VERDICTS, check_turn, extract_calls

WS = load_workstream(Path(EXAMPLES) / "file_agent.json")
CAPTURED = ('Now the test.\n<tool_call>\n{"name": "read_file", "arguments": {"path": '
            '"src/test_cache.py", "start": 1, "limit": 20}}\n</tool_call>')


def _gen(call: str, prose: str = "Now the test.") -> str:
    return f"{prose}\n<tool_call>\n{call}\n</tool_call>"


@pytest.mark.parametrize(("generated", "verdict"), [
    (CAPTURED, "exact"),
    (_gen('{"name": "read_file", "arguments": {"path": "src/test_cache.py", "start": 1, '
          '"limit": 20}}', prose="Other prose."), "exact"),  # prose is not judged
    (_gen('{"arguments":{"limit":20,"start":1,"path":"src/test_cache.py"},'
          '"name":"read_file"}'), "normalised"),
    (_gen('{"name": "read_file", "arguments": {"path": "src/cache.py"}}'), "differs"),
    (_gen('{"name": "read_file", "arguments": {"path": "src/test_cache.py", "start": 0}}'),
     "schema_violation"),
    (_gen('{"name": "read_file", "arguments": {"file": "src/test_cache.py"}}'),
     "schema_violation"),
    (_gen('{"name": "cat", "arguments": {"path": "src/test_cache.py"}}'), "unknown_tool"),
    (_gen('{"name": "read_file", "arguments": {"path": "src/test_'), "invalid_json"),
    (_gen('["read_file"]'), "invalid_json"),
    ("Now the test.\n<tool_call>\n{\"name\": \"read_file\", \"argu", "invalid_json"),  # cut
    ("Now the test.", "no_call"),
    (CAPTURED + "\n" + _gen('{"name": "grep", "arguments": {"pattern": "x", "path": "."}}',
                            prose=""), "differs"),  # one call too many
])
def test_verdicts(generated, verdict):
    res = check_turn(generated, CAPTURED, WS)
    assert res["verdict"] == verdict, res
    assert res["ok"] is (verdict in ("exact", "normalised"))


def test_schema_violation_agrees_with_jsonschema():
    # the oracle: jsonschema's own validator on the tool's declared schema
    schema = WS.tool("read_file").parameters
    args = {"path": "a", "limit": 500}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(args, schema)
    res = check_turn(_gen('{"name": "read_file", "arguments": {"path": "a", "limit": 500}}'),
                     CAPTURED, WS)
    assert res["verdict"] == "schema_violation"
    assert "500 is greater than the maximum of 200" in res["calls"][0]["detail"]
    jsonschema.validate({"path": "a", "limit": 200}, schema)


def test_extract_calls_and_verdict_order():
    assert extract_calls("a<tool_call> {} </tool_call>b<tool_call>\n[1]") == ["{}", "[1]"]
    assert VERDICTS[0] == "exact" and VERDICTS[-1] == "no_call"
