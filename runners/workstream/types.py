"""The workstream's parts as frozen dataclasses (built only by the reader)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]  # a JSON Schema for the call's arguments

    def to_template(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name,
                                                 "description": self.description,
                                                 "parameters": self.parameters}}


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]

    def to_template(self) -> dict[str, Any]:
        # HF chat templates take arguments as a mapping, not the OpenAI JSON string
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Message:
    index: int
    role: str
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def to_template(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [c.to_template() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        return d


@dataclass(frozen=True)
class Workstream:
    name: str
    tools: tuple[Tool, ...]
    messages: tuple[Message, ...]
    digest: str  # sha256 of the canonical JSON of the file's content
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    @property
    def call_turns(self) -> list[int]:
        """Indices of the assistant messages that made tool calls."""
        return [m.index for m in self.messages if m.role == "assistant" and m.tool_calls]
