"""Render a workstream to token ids with the chat template, one segment label per token.

The conversation is rendered incrementally: message i's block is render(messages[:i+1])
minus render(messages[:i]) (a template that is not prefix-stable is refused, naming the
message). An assistant turn that made tool calls is split into its generation prompt
(render(..., add_generation_prompt=True) minus the prefix) and its completion, so a replay
can generate from exactly the prompt the capture was made from. Each piece is tokenised on
its own and the ids are concatenated; whether that equals tokenising the whole text at once is
recorded (`ids_match_whole_text`).

Labels: system, user, tool_result (message content), assistant_prose (assistant content),
tool_call (the JSON between the tool-call tags), template (role markers, tool declarations,
tags, newlines the template adds).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from runners.workstream.template import (
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    TemplateError,
    render,
    template_digest,
)
from runners.workstream.types import Workstream

SEGMENTS = ("system", "user", "assistant_prose", "tool_call", "tool_result", "template")
CONTENT_LABEL = {"system": "system", "user": "user", "assistant": "assistant_prose",
                 "tool": "tool_result"}


@dataclass
class Piece:
    msg: int
    role: str
    kind: str  # block | prompt | completion
    text: str
    ids: list[int]
    labels: list[int]  # index into SEGMENTS, per token
    offsets: list[tuple[int, int]]  # per token, characters within `text`


@dataclass
class Turn:
    msg: int  # index of the assistant message that made the tool calls
    prompt_piece: int
    completion_piece: int


@dataclass
class Rendered:
    pieces: list[Piece]
    turns: list[Turn]
    template_digest: str
    text: str
    ids_match_whole_text: bool
    end_ids: list[int] = field(default_factory=list)  # the turn-end marker's ids

    @property
    def ids(self) -> np.ndarray:
        return np.asarray([i for p in self.pieces for i in p.ids], dtype=np.int64)

    @property
    def labels(self) -> np.ndarray:
        return np.asarray([x for p in self.pieces for x in p.labels], dtype=np.int8)

    @property
    def msg_of_token(self) -> np.ndarray:
        return np.asarray([p.msg for p in self.pieces for _ in p.ids], dtype=np.int32)

    @property
    def ids_digest(self) -> str:
        return ids_digest(self.ids)

    def piece_start(self, k: int) -> int:
        return sum(len(p.ids) for p in self.pieces[:k])

    def decode(self, a: int, b: int) -> str:
        """Text of concatenated tokens a..b-1 (by per-piece character offsets)."""
        out, pos = [], 0
        for p in self.pieces:
            lo, hi = max(a - pos, 0), min(b - pos, len(p.ids))
            if lo < hi:
                out.append(p.text[p.offsets[lo][0] : p.offsets[hi - 1][1]])
            pos += len(p.ids)
        return "".join(out)


def ids_digest(ids: Any) -> str:
    arr = np.asarray(ids, dtype="<i8")
    return "sha256:" + hashlib.sha256(arr.tobytes()).hexdigest()


def _diff(longer: str, shorter: str, where: str) -> str:
    if not longer.startswith(shorter):
        raise TemplateError(f"{where}: the chat template is not prefix-stable here (rendering "
                            "one more message changes the text before it)")
    return longer[len(shorter):]


def _char_labels(role: str, content: str, text: str) -> list[int]:
    lab = [SEGMENTS.index("template")] * len(text)
    cursor = 0
    if content:
        at = text.find(content)
        if at >= 0:
            lab[at : at + len(content)] = [SEGMENTS.index(CONTENT_LABEL[role])] * len(content)
            cursor = at + len(content)
    if role == "assistant":
        call = SEGMENTS.index("tool_call")
        while (o := text.find(TOOL_CALL_OPEN, cursor)) >= 0:
            c = text.find(TOOL_CALL_CLOSE, o)
            if c < 0:
                break
            s, e = o + len(TOOL_CALL_OPEN), c
            while s < e and text[s].isspace():
                s += 1
            while e > s and text[e - 1].isspace():
                e -= 1
            lab[s:e] = [call] * (e - s)
            cursor = c + len(TOOL_CALL_CLOSE)
    return lab


def _tokenize(tok, text: str, char_labels: list[int]) -> tuple[list[int], list[int], list]:
    enc = tok.encode(text, add_special_tokens=False)
    tmpl = SEGMENTS.index("template")
    labels = []
    for s, e in enc.offsets:
        span = [x for x in char_labels[s:e] if x != tmpl]
        labels.append(span[0] if span else tmpl)  # a token touching content is content
    return list(enc.ids), labels, [tuple(o) for o in enc.offsets]


def render_workstream(ws: Workstream, template: str, tokenizer_file: Path) -> Rendered:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_file))
    tools = [t.to_template() for t in ws.tools]
    msgs = [m.to_template() for m in ws.messages]
    pieces: list[Piece] = []
    turns: list[Turn] = []
    prev = render(template, [], tools)
    for m in ws.messages:
        where = f"{ws.source}: message {m.index} ({m.role})"
        full = render(template, msgs[: m.index + 1], tools)
        block = _diff(full, prev, where)
        if m.role == "assistant" and m.tool_calls:
            gp = _diff(render(template, msgs[: m.index], tools, add_generation_prompt=True),
                       prev, where)
            if not block.startswith(gp):
                raise TemplateError(f"{where}: the assistant block does not start with the "
                                    "template's generation prompt")
            labels = _char_labels(m.role, m.content, block)
            for kind, a, b in (("prompt", 0, len(gp)), ("completion", len(gp), len(block))):
                ids, lab, offs = _tokenize(tok, block[a:b], labels[a:b])
                pieces.append(Piece(m.index, m.role, kind, block[a:b], ids, lab, offs))
            turns.append(Turn(m.index, len(pieces) - 2, len(pieces) - 1))
            if TOOL_CALL_OPEN not in block:
                raise TemplateError(f"{where}: the chat template renders no {TOOL_CALL_OPEN} "
                                    "tags for this tool call")
        else:
            ids, lab, offs = _tokenize(tok, block, _char_labels(m.role, m.content, block))
            pieces.append(Piece(m.index, m.role, "block", block, ids, lab, offs))
        prev = full
    whole = tok.encode(prev, add_special_tokens=False).ids
    concat = [i for p in pieces for i in p.ids]
    from runners.workstream.template import IM_END

    end = tok.token_to_id(IM_END)
    return Rendered(pieces, turns, template_digest(template), prev, whole == concat,
                    [end] if end is not None else tok.encode(IM_END).ids)
