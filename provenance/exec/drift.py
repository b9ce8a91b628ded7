"""Did the environment change while the command ran? Stats first; a snapshot only if so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from provenance.exec.environment import with_command_env, without_known
from provenance.model.redact import KnownSecrets, store_key
from provenance.snapshot import CachedSnapshot, cached_snapshot, still_valid
from provenance.store import Store

if TYPE_CHECKING:  # annotations only (this module uses postponed annotations)
    from provenance.store.record_types import Drift


def check_drift(snap: CachedSnapshot, python: str | None, store: Store,
                env_extra: Mapping[str, str] | None = None,
                known: KnownSecrets | None = None) -> Drift:
    """The record's `drift` entry: the identity keys that changed, and the manifest after."""
    if still_valid(snap, python):
        return {"checked": True, "detected": False}
    after = without_known(with_command_env(cached_snapshot(python, use_cache=False), env_extra),
                          known, store_key(store.root))
    if after.manifest_digest == snap.manifest_digest:
        return {"checked": True, "detected": False, "resnapshot": True}
    from provenance.model import LeafKind
    from provenance.model.diff import diff_manifests

    d = diff_manifests(snap.manifest(), after.manifest())
    obj = store.put_bytes(after.text.encode("utf-8"), "manifest")
    changes = [
        {"key": c.key, "change": c.change, "a": c.a, "b": c.b} for c in d.of_kind(LeafKind.IDENTITY)
    ]
    return {
        "checked": True,
        "detected": True,
        "manifest_after": obj,
        "manifest_digest_after": after.manifest_digest,
        "changes": changes[:500],
        "changes_total": len(changes),
    }
