"""A run's manifest, by one rule: the snapshot, the command's own environment, the run's facts.

`prov exec` snapshots prov's environment; the command may get variables prov itself does
not have (`run_supervised(env_extra=...)`), and the run adds sections of its own (facts a
workload wrote to PROV_RUN_DIR/facts.json, and `run`: name, tags, parameters). This module
is the only place those join: `prov exec` builds the run's manifest with it once, when the
run ends, and stores it (the record's `run_manifest`); every command that shows or compares
the run reads that object, so they all print the digest the record holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provenance.model import Manifest


def run_manifest(
    snapshot: Manifest,
    *,
    env: Mapping[str, str] | None = None,
    facts: Mapping[str, Any] | None = None,
) -> Manifest:
    """`snapshot` plus the variables in `env` (already filtered and redacted) in its `env`
    section, plus the run's own top-level `facts` sections."""
    merged = dict(snapshot.facts)
    if env:
        merged["env"] = dict(sorted({**(merged.get("env") or {}), **env}.items()))
    merged.update(facts or {})
    return Manifest(merged)


def adds_nothing(snapshot: Manifest, env: Mapping[str, str]) -> bool:
    """True when every variable in `env` is already in the snapshot with that value."""
    have = snapshot.facts.get("env") or {}
    return all(have.get(k) == v for k, v in env.items())
