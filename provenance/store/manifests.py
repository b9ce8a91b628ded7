"""A run's manifest, by one rule: the snapshot, the command's own environment, the run's facts.

`prov exec` snapshots prov's environment; the command may get variables prov itself does
not have (`run_supervised(env_extra=...)`), and the run adds sections of its own (facts a
workload wrote to PROV_RUN_DIR/facts.json, and `run`: name, tags, parameters). This module
is the only place those join: `prov exec` builds the run's manifest with it once, when the
run ends, and stores it (the record's `run_manifest`); every command that shows or compares
the run reads that object, so they all print the digest the record holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from provenance.model import Manifest
from provenance.model.manifest import HEADER_KEYS, document_json


def run_manifest(
    snapshot: Manifest,
    *,
    env: Mapping[str, str] | None = None,
    facts: Mapping[str, Any] | None = None,
) -> Manifest:
    """`snapshot` plus the variables in `env` (already filtered and redacted) in its `env`
    section, plus the run's own top-level `facts` sections. A section both have (`env`: the
    variables the run's processes read) is merged, the snapshot's own keys winning."""
    merged = dict(snapshot.facts)
    if env:
        merged["env"] = dict(sorted({**(merged.get("env") or {}), **env}.items()))
    for section, value in (facts or {}).items():
        have = merged.get(section)
        both = isinstance(have, dict) and isinstance(value, dict)
        merged[section] = _below(have, value) if both else value
    return Manifest(merged)


def _below(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`extra` added below `base`; where both hold a key, `base` wins."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = _below(out[key], value)
        elif key not in out:
            out[key] = value
    return dict(sorted(out.items()))


def adds_nothing(snapshot: Manifest, env: Mapping[str, str]) -> bool:
    """True when every variable in `env` is already in the snapshot with that value."""
    have = snapshot.facts.get("env") or {}
    return all(have.get(k) == v for k, v in env.items())


def run_manifest_text(snapshot_text: str, snapshot_digest: str,
                      facts: Mapping[str, Any]) -> tuple[str, str]:
    """`run_manifest(snapshot, facts=facts)` as (JSON text, identity digest), from the stored
    snapshot's text. When the run's sections hold no identity leaf (the common case: `run`,
    name, tags and params, is context) and replace no section, the snapshot's identity and
    digests stand, so its thousands of leaves are not walked again."""
    added = Manifest(dict(facts))
    doc = json.loads(snapshot_text)
    if added.identity_tree() or set(facts) & (set(doc) | set(HEADER_KEYS)):
        m = run_manifest(Manifest.loads(snapshot_text, verify=False), facts=facts)
        return m.to_json(), m.digest()
    doc.update(facts)
    doc["section_digests"] = {**doc.get("section_digests", {}), **added.section_digests()}
    return document_json(doc), snapshot_digest
