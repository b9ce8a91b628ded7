"""Chat-template rendering, as transformers does it (a sandboxed jinja2 environment with
`tojson`, `raise_exception`, trim_blocks/lstrip_blocks), without importing transformers.

The template comes from the model directory (`chat_template.jinja`, or `chat_template` in
tokenizer_config.json) or a file the user names; its sha256 goes into every record.
`PROV_TEMPLATE` is the Qwen/Hermes-style template the bundled demo model is trained with.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError

# Tool calls are rendered as <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>.
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"

PROV_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' }}"
    "{%- if message.role == 'system' %}"
    "{{- message.content }}"
    "{%- if tools %}"
    "{{- '\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool.function | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>' }}"
    "{%- endif %}"
    "{%- elif message.role == 'assistant' %}"
    "{{- message.content }}"
    "{%- for call in message.tool_calls or [] %}"
    "{%- if message.content or not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n' + ({'name': call.function.name, 'arguments': call.function.arguments}"
    " | tojson) + '\\n</tool_call>' }}"
    "{%- endfor %}"
    "{%- else %}"
    "{{- message.content }}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


class TemplateError(ProvError, ValueError):
    """No chat template, or one that does not render."""


def template_digest(template: str) -> str:
    return "sha256:" + hashlib.sha256(template.encode("utf-8")).hexdigest()


def find_template(model_dir: Path, override: Path | None = None) -> str:
    if override is not None:
        return Path(override).read_text(encoding="utf-8")
    model_dir = Path(model_dir)
    jinja = model_dir / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    cfg = model_dir / "tokenizer_config.json"
    if cfg.is_file():
        tpl = json.loads(cfg.read_text()).get("chat_template")
        if isinstance(tpl, str) and tpl:
            return tpl
    raise TemplateError(f"{model_dir}: the model has no chat template (chat_template.jinja or "
                        "tokenizer_config.json chat_template); pass --chat-template FILE")


def _tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: Any = None, sort_keys: bool = False) -> str:
    # the same call as transformers' chat-template `tojson`
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _raise(message: str) -> None:
    raise TemplateError(f"chat template: {message}")


def render(template: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
           add_generation_prompt: bool = False) -> str:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    try:
        return env.from_string(template).render(
            messages=messages, tools=tools or None, add_generation_prompt=add_generation_prompt,
            bos_token="", eos_token="")
    except jinja2.TemplateError as exc:
        raise TemplateError(f"chat template does not render: {exc}") from exc
