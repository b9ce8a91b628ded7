"""JSON read from an image, with the model's depth and memory bounds (`check_json_shape`).

Python's json raises RecursionError on a document nested ~100k deep, and whatever walks the
tree afterwards may recurse too; a document of many tiny objects would take ~25 times its
size in memory. Two uses:
- `load` for the image's own metadata (index, manifest, config, docker-archive manifest.json):
  malformed or too deep is an ImageError, the image is refused;
- `load_content` for JSON files inside the image (cuda version.json, conda-meta records,
  direct_url.json): malformed or too deep reads as None, the file is skipped as malformed.
"""

from __future__ import annotations

import json
from typing import Any

from containers.errors import ImageError
from provenance.model.errors import ProvError
from provenance.model.inputs import MAX_DEPTH, check_json_shape


def load(data: bytes | str, what: str) -> Any:
    """The parsed document; ImageError (one line) if not UTF-8 JSON, deeper than MAX_DEPTH or
    over the memory bound."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        check_json_shape(text, what, MAX_DEPTH)
        return json.loads(text)
    except ProvError as exc:  # too deep or too big: the model's one-line reason
        raise ImageError(str(exc)) from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ImageError(f"{what}: malformed JSON: {str(exc)[:120]}") from None


def load_content(data: bytes | str) -> Any:
    """A file's JSON, or None when malformed, not UTF-8 or too deep (skipped as malformed)."""
    try:
        return load(data, "file")
    except ImageError:
        return None
