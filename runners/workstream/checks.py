"""Judge a generated assistant turn against the captured one.

Each call between the tool-call tags is checked in order: it parses as a JSON object with
"name" and "arguments" (else invalid_json), names a declared tool (else unknown_tool), its
arguments validate against that tool's JSON Schema with jsonschema (else schema_violation),
and it equals the captured call: `exact` (same text), `normalised` (same after sorting keys
and dropping whitespace), else `differs`. A turn's verdict is its worst call's; a turn
without the captured number of calls is `no_call` (none) or `differs` (another count).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from runners.workstream.template import TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from runners.workstream.types import Workstream

# best first; a turn takes the worst verdict of its calls
VERDICTS = ("exact", "normalised", "differs", "schema_violation", "unknown_tool",
            "invalid_json", "no_call")
OK = ("exact", "normalised")


def extract_calls(text: str) -> list[str]:
    """The raw text between each pair of tool-call tags (whitespace around it stripped); an
    open tag without a close tag yields the rest of the text (a truncated call)."""
    out, cursor = [], 0
    while (o := text.find(TOOL_CALL_OPEN, cursor)) >= 0:
        c = text.find(TOOL_CALL_CLOSE, o)
        end = c if c >= 0 else len(text)
        out.append(text[o + len(TOOL_CALL_OPEN) : end].strip())
        cursor = end + len(TOOL_CALL_CLOSE)
    return out


def normalise(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass
class CallCheck:
    verdict: str
    name: str | None
    detail: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def check_call(text: str, captured_text: str, ws: Workstream) -> CallCheck:
    from runners.workstream.schema import validation_error

    try:
        obj = json.loads(text)
    except ValueError as exc:
        return CallCheck("invalid_json", None, f"not JSON: {exc}", text)
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) \
            or not isinstance(obj.get("arguments"), dict):
        return CallCheck("invalid_json", None, "not an object with name and arguments", text)
    tool = ws.tool(obj["name"])
    if tool is None:
        return CallCheck("unknown_tool", obj["name"], f"tool {obj['name']!r} is not declared",
                         text)
    err = validation_error(obj["arguments"], tool.parameters)
    if err:
        return CallCheck("schema_violation", tool.name, err, text)
    if text == captured_text:
        return CallCheck("exact", tool.name, "", text)
    if normalise(obj) == normalise(json.loads(captured_text)):
        return CallCheck("normalised", tool.name, "equal after normalising key order and "
                         "whitespace", text)
    return CallCheck("differs", tool.name, f"captured {captured_text}", text)


def check_turn(generated: str, captured: str, ws: Workstream) -> dict[str, Any]:
    gen_calls, cap_calls = extract_calls(generated), extract_calls(captured)
    checks = [check_call(g, c, ws) for g, c in zip(gen_calls, cap_calls, strict=False)]
    verdicts = [c.verdict for c in checks]
    if not gen_calls:
        verdicts.append("no_call")
    elif len(gen_calls) != len(cap_calls):
        verdicts.append("differs")
    verdict = max(verdicts, key=VERDICTS.index)
    return {"verdict": verdict, "ok": verdict in OK, "calls": [c.to_json() for c in checks],
            "n_calls": len(gen_calls), "n_captured": len(cap_calls)}
