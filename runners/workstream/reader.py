"""Read and validate a workstream file (untrusted JSON, checked at the edge).

Format `prov-workstream/1`: {"format", "name", "tools": [OpenAI tool objects], "messages":
[OpenAI chat messages]}. Tool-call arguments are the OpenAI JSON string (or an object).
Every problem is one WorkstreamError whose text names the message (index and role).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError
from runners.workstream.types import ROLES, Message, Tool, ToolCall, Workstream

FORMAT = "prov-workstream/1"


class WorkstreamError(ProvError, ValueError):
    """A malformed workstream; the message names where."""


def load_workstream(path: Path | str) -> Workstream:
    path = Path(path)
    from provenance.model.inputs import InputError, read_json

    try:
        doc = read_json(path, "json")
    except InputError as exc:
        raise WorkstreamError(str(exc)) from None
    return parse_workstream(doc, str(path))


def _fail(where: str, msg: str) -> WorkstreamError:
    return WorkstreamError(f"{where}: {msg}")


def parse_workstream(doc: Any, source: str = "<workstream>") -> Workstream:
    if not isinstance(doc, dict):
        raise _fail(source, "a workstream is a JSON object")
    if doc.get("format", FORMAT) != FORMAT:
        raise _fail(source, f"format {doc.get('format')!r} is not {FORMAT}")
    tools = _tools(doc.get("tools", []), source)
    raw = doc.get("messages")
    if not isinstance(raw, list) or not raw:
        raise _fail(source, "'messages' must be a non-empty list")
    names = {t.name for t in tools}
    messages: list[Message] = []
    open_calls: dict[str, int] = {}
    for i, m in enumerate(raw):
        msg = _message(i, m, source, names, open_calls)
        messages.append(msg)
    if not any(m.tool_calls for m in messages):
        raise _fail(source, "no assistant message makes a tool call: nothing to replay")
    canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return Workstream(
        name=str(doc.get("name") or Path(source).stem), tools=tuple(tools),
        messages=tuple(messages),
        digest="sha256:" + hashlib.sha256(canon.encode()).hexdigest(), source=source,
        meta={"description": str(doc.get("description", ""))},
    )


def _tools(raw: Any, source: str) -> list[Tool]:
    from runners.workstream.schema import schema_error

    if not isinstance(raw, list):
        raise _fail(source, "'tools' must be a list")
    out: list[Tool] = []
    for i, t in enumerate(raw):
        where = f"{source}: tool {i}"
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise WorkstreamError(f"{where}: needs function.name (OpenAI tool shape)")
        params = fn.get("parameters", {"type": "object"})
        if not isinstance(params, dict):
            raise WorkstreamError(f"{where} ({fn['name']}): parameters must be a JSON Schema")
        err = schema_error(params)
        if err:
            raise WorkstreamError(f"{where} ({fn['name']}): parameters are not a valid JSON "
                                  f"Schema: {err}")
        if any(x.name == fn["name"] for x in out):
            raise WorkstreamError(f"{where}: tool {fn['name']!r} is declared twice")
        out.append(Tool(fn["name"], str(fn.get("description", "")), params))
    return out


def _message(i: int, m: Any, source: str, tools: set[str],
             open_calls: dict[str, int]) -> Message:
    if not isinstance(m, dict):
        raise _fail(f"{source}: message {i}", "not a JSON object")
    role = m.get("role")
    where = f"{source}: message {i} ({role})" if isinstance(role, str) else \
        f"{source}: message {i}"
    if role not in ROLES:
        raise _fail(where, f"unknown role {role!r} (known: {', '.join(ROLES)})")
    content = m.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise _fail(where, "content must be a string")
    calls: list[ToolCall] = []
    raw_calls = m.get("tool_calls") or []
    if raw_calls and role != "assistant":
        raise _fail(where, "only assistant messages make tool calls")
    if not isinstance(raw_calls, list):
        raise _fail(where, "tool_calls must be a list")
    for j, c in enumerate(raw_calls):
        calls.append(_call(f"{where}, tool call {j}", c, tools))
    for c in calls:
        open_calls[c.id] = i
    tool_call_id = m.get("tool_call_id")
    if role == "tool":
        if not isinstance(tool_call_id, str) or tool_call_id not in open_calls:
            raise _fail(where, f"tool_call_id {tool_call_id!r} answers no earlier tool call")
    elif role == "assistant" and not content and not calls:
        raise _fail(where, "empty assistant message (no content, no tool calls)")
    return Message(i, role, content, tuple(calls),
                   tool_call_id if role == "tool" else None)


def _call(where: str, c: Any, tools: set[str]) -> ToolCall:
    fn = c.get("function") if isinstance(c, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise _fail(where, "needs function.name and function.arguments (OpenAI shape)")
    name = fn["name"]
    if name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        raise _fail(where, f"calls tool {name!r}, which is not declared (declared: {known})")
    args = fn.get("arguments", "{}")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError as exc:
            raise _fail(where, f"arguments of {name!r} are not JSON: {exc}") from exc
    if not isinstance(args, dict):
        raise _fail(where, f"arguments of {name!r} must be a JSON object")
    call_id = c.get("id") or f"call_{where.rsplit(' ', 1)[-1]}"
    return ToolCall(str(call_id), name, args)
