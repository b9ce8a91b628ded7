"""A server run's identity as a client's `server.*` facts.

One server: its manifest's identity tree, as it is. Several (a client that talked to two
servers, or to one that restarted with another setting): the keys they agree on, and for a
key they do not, the list of every server's value (`<absent>` where one lacks it), so
the client's identity names both and picks neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from provenance.model import Manifest, join_key, split_key
from provenance.model.manifest import flatten

ABSENT = "<absent>"
# the context keys bind.py writes beside the identity (model/classes.py lists them)
CONTEXT_KEYS = ("run_id", "store", "state", "manifest_digest", "url", "exchanges",
                "command_env")


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        node = tree
        parts = split_key(key)
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return tree


def _leaf_text(value: Any) -> str | int | float | bool:
    return value if isinstance(value, (str, int, float, bool)) else str(value)


def merged_identity(trees: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One identity tree for one or more servers' identity trees (see the module doc)."""
    distinct: list[dict[str, Any]] = []
    for t in trees:
        if t not in distinct:
            distinct.append(t)
    if len(distinct) <= 1:
        return dict(distinct[0]) if distinct else {}
    flats = [{join_key(k): v for k, v in flatten(t)} for t in distinct]
    keys = sorted(set().union(*flats))
    out: dict[str, Any] = {}
    for key in keys:
        values = [f.get(key, ABSENT) for f in flats]
        same = all(v == values[0] for v in values)
        out[key] = values[0] if same else [_leaf_text(v) for v in values]
    return _nest(out)


def identity_of(manifest: Manifest) -> dict[str, Any]:
    """The identity leaves of a server's manifest; a section named like one of the context
    keys written beside them would be overwritten by them, so none is taken as such."""
    tree = dict(manifest.identity_tree())
    for key in CONTEXT_KEYS:
        tree.pop(key, None)
    return tree
