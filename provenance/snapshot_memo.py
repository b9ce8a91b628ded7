"""The digests and JSON text of what a warm snapshot repeats, computed once.

Two snapshots of an unchanged environment differ only in sections that hold context alone
(`host`: clock and pid; `collectors`: seconds; `warnings`). Classifying, digesting and
serialising the other ~3,000 leaves (dpkg's, mostly) is most of a warm `prov snapshot` after
its collectors (~10 ms), so the last result is kept: when the canonical JSON of every other
section is the kept one's (compared by its sha256, so `1`, `1.0` and `true` differ as they do
in the digest), their digests and JSON text are reused, and only the context-only sections
are serialised afresh. Every leaf is still checked as a full computation checks it. The memo
is keyed by the target interpreter and by the model's own code (a changed classification
table or format must not reuse old digests); a snapshot whose context-only sections hold an
identity or redacted leaf is computed in full. The text is the bytes `Manifest.to_json()`
gives.
"""

from __future__ import annotations

import sys
from typing import Any

from provenance.collectors import answer_cache
from provenance.model import Manifest, canonical_json, sha256_digest
from provenance.model import manifest as model

CONTEXT_ONLY = ("collectors", "host", "warnings")
VERSION = 2


def _memo_path(target: str | None) -> str:
    import provenance.model.classes as classes
    import provenance.model.keys as keys

    code = [answer_cache.stamp(m.__file__ or "") for m in (classes, keys, model)]
    return answer_cache.entry_path("manifest", [VERSION, target or sys.executable, code])


def _context_is_context(context: dict[str, Any]) -> bool:
    """Every leaf of the context-only sections classifies as context: then they add nothing
    to any digest."""
    from provenance.model import LeafKind, classify, flatten

    return all(classify(key, value) is LeafKind.CONTEXT for key, value in flatten(context))


def _full(manifest: Manifest, rest: dict[str, Any], rest_digest: str) -> dict[str, Any]:
    sections = manifest.section_digests()
    return {
        "rest_digest": rest_digest,
        "digest": manifest.digest(),
        "section_digests": {name: sections[name] for name in rest},
        "fragments": {name: model.value_json(value) for name, value in rest.items()},
    }


def digest_and_text(manifest: Manifest, target: str | None) -> tuple[str, str]:
    """`manifest.digest()` and `manifest.to_json()`, reusing the kept result for sections
    that equal the last snapshot's of `target` (None: this interpreter)."""
    manifest.leaves()  # leaf types and finite floats, checked as a full computation does
    facts = manifest.facts
    rest = {k: v for k, v in facts.items() if k not in CONTEXT_ONLY}
    context = {k: v for k, v in facts.items() if k in CONTEXT_ONLY}
    if not _context_is_context(context):
        return manifest.digest(), manifest.to_json()
    rest_digest = sha256_digest(canonical_json(rest))
    path = _memo_path(target)
    got = answer_cache.read_value(path)  # valid by content, not by stamps
    kept = got[1] if got is not None else None
    if not (isinstance(kept, dict) and kept.get("rest_digest") == rest_digest):
        kept = _full(manifest, rest, rest_digest)
        answer_cache.write_value(path, kept)
    empty = sha256_digest(canonical_json({}))  # a section without identity leaves
    sections = {**{name: empty for name in context}, **kept["section_digests"]}
    header = model.document_header(manifest.schema_version, kept["digest"],
                                   dict(sorted(sections.items())))
    fragments = {**kept["fragments"],
                 **{k: model.value_json(v) for k, v in {**header, **context}.items()}}
    return kept["digest"], model.document_json_of(fragments)
