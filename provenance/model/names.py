"""PEP 503 project-name normalisation, the one prov-side copy (python.packages keys use it).

containers/catalogers/python_dist.py keeps its own: it also runs inside interpreters that
`prov snapshot --python` inspects, which import it without the rest of prov.
"""

from __future__ import annotations

import re

_NORMALIZE = re.compile(r"[-_.]+")


def normalize_name(name: str) -> str:
    """`Foo.Bar_baz` -> `foo-bar-baz`, as pip, uv and the index compare names."""
    return _NORMALIZE.sub("-", name).lower()
