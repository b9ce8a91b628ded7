"""Agentic workstreams: a captured conversation (OpenAI chat shape) plus its tools' schemas.

`reader` validates a workstream at the edge (one clear error naming the message),
`template` renders it with the model's chat template, `render` turns it into token ids with
a segment label per token, `checks` judges a generated tool call. Standard library plus
jinja2 and tokenizers; jsonschema only in `checks`.
"""

from runners.workstream.reader import WorkstreamError, load_workstream, parse_workstream
from runners.workstream.types import Message, Tool, ToolCall, Workstream

EXAMPLES = __path__[0] + "/examples"

__all__ = ["EXAMPLES", "Message", "Tool", "ToolCall", "Workstream", "WorkstreamError",
           "load_workstream", "parse_workstream"]
