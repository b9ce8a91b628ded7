"""Read the facts a workload wrote to `$PROV_RUN_DIR/facts.json` (`runners.runfacts`).

Each top-level section joins the run's manifest; a section the snapshot already has
(python, os, gpu...) or `run` (prov's own) cannot be overwritten, and a malformed file is
ignored with a warning in the record, never fatal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provenance.exec.probe.envread import command_env_digests
from provenance.model import Manifest, ManifestError, ProvError
from provenance.model.inputs import read_json
from provenance.model.redact import KnownSecrets, redact_tree

if TYPE_CHECKING:
    from provenance.exec.libraries import FileDigestCache

FACTS_FILE = "facts.json"


def _load(path: Path, warnings: list[str]) -> dict[str, Any]:
    try:  # the workload wrote it: a FIFO, a huge or deep file must not hang or crash prov
        facts = read_json(path, "record")
    except (OSError, ProvError) as exc:
        warnings.append(f"facts.json ignored: {exc}")
        return {}
    if not isinstance(facts, dict):
        warnings.append("facts.json ignored: not a JSON object")
        return {}
    return facts


def read_run_facts(run_dir: Path, base_sections: Iterable[str], warnings: list[str],
                   key: bytes | None = None,
                   known: KnownSecrets | None = None) -> dict[str, Any]:
    """The sections of facts.json that may join the manifest, redacted (a fact named like a
    secret, `runtime.openai.api_key`, is hidden, and so is any value the run's redaction hid
    elsewhere, `known`); problems go to `warnings`."""
    path = run_dir / FACTS_FILE
    if not path.exists():
        return {}
    taken = set(base_sections)
    out = {}
    for section, value in _load(path, warnings).items():
        if section in taken or section == "run":
            warnings.append(f"facts.json: section {section!r} belongs to the snapshot; ignored")
            continue
        if not isinstance(value, dict):
            warnings.append(f"facts.json: section {section!r} is not a table; ignored")
            continue
        out[section] = redact_tree(value, key, known=known)
    if out:
        try:
            Manifest(dict(out)).leaves()
        except ManifestError as exc:
            warnings.append(f"facts.json ignored: {exc}")
            return {}
    return out


def snapshot_sections(text: str) -> list[str]:
    """The fact sections of a manifest document (its header keys left out)."""
    return [k for k in json.loads(text) if k not in ("schema_version", "kind", "digest")]


def run_facts(run_dir: Path, snapshot_text: str, argv: list[str], workdir: Path,
              outputs: Iterable[Path], section: dict[str, Any], key: bytes,
              warnings: list[str], consume: bool = True,
              known: KnownSecrets | None = None,
              hasher: FileDigestCache | None = None) -> dict[str, Any]:
    """The run's own manifest sections, one rule for every caller: facts.json, what the probe
    saw (it wins, redacted) and `run` (name, tags, params). `prov exec` calls it when the
    command has ended (consuming the probe's files), live.py while it runs and recover.py
    for an abandoned run (both without consuming). `hasher`: the run's digest cache (its
    caller saves it), else prov's own, read and saved here."""
    from provenance.exec.probe import host as probe

    facts = read_run_facts(run_dir, snapshot_sections(snapshot_text), warnings, key, known)
    env_digests = command_env_digests(run_dir / "probe", key)  # before collect consumes it
    seen = probe.collect(run_dir, argv, list(outputs), workdir, consume=consume, key=key,
                          hasher=hasher)
    probe.merge_into(facts, redact_tree(seen, key, known=known), warnings)
    if env_digests and isinstance(facts.get("probe"), dict):
        facts["probe"]["command_env"] = env_digests
    if section:  # name, tags, params: the name is the user's text, not yet redacted
        facts["run"] = redact_tree(section, key, known=known)
    return facts
