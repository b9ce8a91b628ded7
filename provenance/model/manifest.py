"""The manifest: a tree of facts with one digest over its identity part.

A manifest document holds a small header (schema version, kind, digests) and the fact
sections (`python`, `os`, `cpu`, `gpu`, `torch`, `engines`, `env`, `host`, ...). Each leaf is
a string, integer, float, boolean or a list of those; every leaf is addressable by a dotted
key and classed by `provenance.model.classes`.

Digest: sha256 over canonical JSON (sorted keys, no insignificant whitespace, UTF-8) of the
identity leaves only, so context (hostnames, clocks) never changes a manifest's identity.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.model.classes import LeafKind, classify
from provenance.model.digests import sha256_digest
from provenance.model.errors import ProvError
from provenance.model.keys import join_key
from provenance.model.text import json_text

SCHEMA_VERSION = 1
KIND = "prov.manifest"
HEADER_KEYS = ("schema_version", "kind", "digest", "section_digests")

Leaf = str | int | float | bool | list


class ManifestError(ProvError):
    """A manifest that cannot be read or built; the message is one line for the user."""


def canonical_json(obj: Any) -> bytes:
    return json_text(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")



def flatten(
    tree: dict[str, Any], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Leaf]]:
    """Yield (key parts, leaf) for every leaf, depth first in sorted order."""
    for name in sorted(tree):
        value = tree[name]
        parts = (*prefix, name)
        if isinstance(value, dict):
            yield from flatten(value, parts)
        else:
            yield parts, value


def _check_leaf(parts: tuple[str, ...], value: Any) -> None:
    scalar = (str, int, float, bool)
    if isinstance(value, float) and not math.isfinite(value):
        raise ManifestError(f"{join_key(parts)}: non-finite float {value!r} is not a fact")
    if isinstance(value, list):
        if not all(isinstance(v, scalar) for v in value):
            raise ManifestError(f"{join_key(parts)}: a list leaf may hold only scalars")
    elif not isinstance(value, scalar):
        raise ManifestError(f"{join_key(parts)}: unsupported leaf type {type(value).__name__}")


def _insert(tree: dict[str, Any], parts: tuple[str, ...], value: Leaf) -> None:
    node = tree
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


@dataclass
class Manifest:
    """Facts plus the schema version they were written under."""

    facts: dict[str, Any]
    schema_version: int = SCHEMA_VERSION
    _leaves: list[tuple[tuple[str, ...], Leaf]] | None = field(default=None, repr=False)
    _identity: dict[str, Any] | None = field(default=None, repr=False)
    _digest: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        clash = set(HEADER_KEYS) & set(self.facts)
        if clash:
            raise ManifestError(f"reserved section name(s): {', '.join(sorted(clash))}")

    # -- leaves and their kinds -------------------------------------------------
    def leaves(self) -> list[tuple[tuple[str, ...], Leaf]]:
        if self._leaves is None:
            leaves = list(flatten(self.facts))
            for parts, value in leaves:
                _check_leaf(parts, value)
            self._leaves = leaves
        return self._leaves

    def flat(self, kind: LeafKind | None = None) -> dict[str, Leaf]:
        """Dotted key -> leaf, optionally only the leaves of one kind."""
        return {
            join_key(parts): value
            for parts, value in self.leaves()
            if kind is None or classify(parts, value) is kind
        }

    def identity_tree(self) -> dict[str, Any]:
        """The identity leaves as a tree (computed once: a manifest is not edited in place)."""
        if self._identity is None:
            tree: dict[str, Any] = {}
            for parts, value in self.leaves():
                if classify(parts, value) is LeafKind.IDENTITY:
                    _insert(tree, parts, value)
            self._identity = tree
        return self._identity

    # -- digests ----------------------------------------------------------------
    def digest(self) -> str:
        return sha256_digest(canonical_json(self.identity_tree()))

    def section_digests(self) -> dict[str, str]:
        identity = self.identity_tree()
        return {
            name: sha256_digest(canonical_json(identity.get(name, {})))
            for name in sorted(self.facts)
        }

    def document(self) -> dict[str, Any]:
        """The full document: header then facts (what TOML and JSON files hold)."""
        return {**document_header(self.schema_version, self.digest(), self.section_digests()),
                **self.facts}

    def get(self, key: str, default: Any = None) -> Any:
        from provenance.model.keys import split_key

        node: Any = self.facts
        for part in split_key(key):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    # -- serialisation ----------------------------------------------------------
    def to_json(self) -> str:
        return document_json(self.document())

    def to_toml(self) -> str:
        from provenance.model.toml_writer import dumps

        return dumps(self.document(), first_keys=("schema_version", "kind", "digest"))

    def write(self, path: Path, fmt: str = "toml") -> None:
        from provenance.model.atomic import write_atomic

        write_atomic(path, self.to_toml() if fmt == "toml" else self.to_json())

    @classmethod
    def from_document(cls, doc: Any, origin: str = "manifest", verify: bool = True) -> Manifest:
        if not isinstance(doc, dict):
            raise ManifestError(f"{origin}: not a manifest (top level is not a table)")
        version = doc.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise ManifestError(f"{origin}: not a prov manifest (no integer schema_version)")
        if version > SCHEMA_VERSION:
            raise ManifestError(
                f"{origin}: manifest schema version {version} is newer than this prov "
                f"understands ({SCHEMA_VERSION}); upgrade prov to read it"
            )
        if version < 1:
            raise ManifestError(f"{origin}: invalid schema_version {version}")
        if doc.get("kind") != KIND:
            raise ManifestError(f"{origin}: not a prov manifest (kind is {doc.get('kind')!r})")
        facts = {k: v for k, v in doc.items() if k not in HEADER_KEYS}
        manifest = cls(facts=facts, schema_version=version)
        manifest.leaves()  # validates leaf types
        if verify and "digest" in doc and doc["digest"] != manifest.digest():
            raise ManifestError(
                f"{origin}: recorded digest {doc['digest']} does not match the content "
                f"({manifest.digest()}); the file was edited or corrupted"
            )
        return manifest

    @classmethod
    def loads(cls, text: str, origin: str = "manifest", verify: bool = True) -> Manifest:
        from provenance.model.inputs import InputError, check_json_shape, check_toml_depth

        stripped = text.lstrip()
        try:  # a 100k-deep document is refused before any recursive parser sees it
            (check_json_shape if stripped.startswith("{") else check_toml_depth)(text, origin)
        except InputError as exc:
            raise ManifestError(f"corrupted manifest: {exc}") from None
        parse = _parse_json if stripped.startswith("{") else _parse_toml
        doc = parse(text, origin)
        return cls.from_document(doc, origin=origin, verify=verify)

    @classmethod
    def read(cls, path: str | Path, verify: bool = True) -> Manifest:
        from provenance.model.inputs import InputError, read_text, shown

        path = Path(path)
        try:  # regular files only, bounded, strict UTF-8 (a FIFO or /dev/zero: one line)
            text = read_text(path, "manifest")
        except InputError as exc:
            raise ManifestError(str(exc)) from None
        return cls.loads(text, origin=shown(path), verify=verify)


def document_header(schema_version: int, digest: str, section_digests: dict[str, str]) -> dict:
    return {"schema_version": schema_version, "kind": KIND, "digest": digest,
            "section_digests": section_digests}


def document_json(doc: dict[str, Any]) -> str:
    """A manifest document as JSON text (the form stored and written by `prov snapshot`)."""
    return json_text(doc, sort_keys=True, indent=2) + "\n"


def _parse_toml(text: str, origin: str) -> dict[str, Any]:
    import tomllib

    from provenance.model.inputs import parse_error

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as exc:  # ValueError: a 5,000-digit integer
        raise ManifestError(f"{origin}: corrupted manifest: invalid TOML "
                            f"({parse_error(exc)})") from None


def _parse_json(text: str, origin: str) -> dict[str, Any]:
    from provenance.model.inputs import InputError, parse_error, refuse_lone_surrogates

    try:
        doc = json.loads(text)
    except ValueError as exc:  # not JSON, or an integer past Python's 4,300-digit limit
        raise ManifestError(f"{origin}: corrupted manifest: invalid JSON "
                            f"({parse_error(exc)})") from None
    try:
        refuse_lone_surrogates(text, doc, f"{origin}: corrupted manifest")
    except InputError as exc:
        raise ManifestError(str(exc)) from None
    return doc
