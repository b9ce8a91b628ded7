"""The image lock: an image pinned to immutable digests, with every package and its layer.

TOML, stable order, emitted line by line (linear in entries). Written by
`prov pin SOURCE`, checked by `prov verify --lock FILE [SOURCE]`:

    kind = "prov-image-lock"
    format = 1
    created-by = "prov 0.1.0"
    [image]      source, reference (name@sha256:...), index/manifest/config digests, platform
    [[layers]]   index, digest, diff_id, chain_id, created_by
    [packages]   "dpkg:NAME" and "apk:NAME" = {version, layer};
                 "python:NAME" = {version, layer, fingerprint}
    [coverage]   (format 3) files, checked, skipped, unlisted, skipped_by_rule, all_files:
                 every regular file of the image in one bucket (see containers.verify)
    [files]      (format 2+) "KEY" = {checked, skipped, <kind> = [...]}: each package's file
                 verification; one list per finding kind (`_ISSUES`: modified, shared,
                 dpkg_intact, missing, never_installed, unclaimed) of
                 {path, layer, expected, actual, installed, other}

Format 1 locks (no [files]) are still read and checked; their files are not compared.
Format 2 locks knew three kinds only: a finding now called shared or dpkg_intact was
"modified" then, never_installed was "missing"; they are compared under the old names.

The config digest is the anchor that survives every save format; index and manifest
digests are compared when both sides know the registry's (a daemon's `docker save`
synthesizes its own manifest, flagged `manifest_synthesized`).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any

from lockfiles.errors import LockError
from lockfiles.kind import LockKind
from provenance.model.toml_writer import key as toml_key
from provenance.model.toml_writer import scalar, string

IMAGE_LOCK_KIND = LockKind.IMAGE
LOCK_VERSION = 3
READ_VERSIONS = (1, 2, 3)
# the finding kinds of containers.verify.KINDS (lockfiles may not import containers; a test
# holds the two equal)
_ISSUES = (
    "modified", "shared", "dpkg_intact", "missing", "never_installed", "unclaimed", "unlisted"
)
_FOLD_V2 = {"shared": "modified", "dpkg_intact": "modified", "never_installed": "missing"}
_IMAGE_KEYS = (
    "source",
    "reference",
    "index_digest",
    "manifest_digest",
    "manifest_synthesized",
    "config_digest",
    "platform",
)


@dataclass(frozen=True)
class Difference:
    key: str  # "image.config_digest", "layers.1.diff_id", "packages.python:idna.version"
    change: str  # "changed", "missing" (in the lock, not the image), "extra" (in the image)
    locked: Any
    now: Any
    path: str = ""  # for files.*: the file
    layer: int | None = None  # for files.*: the layer that wrote (or deleted) it now
    installed: int | None = None  # for files.* modified: the layer that installed the package
    other: str = ""  # for files.* shared / dpkg_intact: the package whose claim it matches


def lock_packages(facts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What a lock pins of an image scan's facts: `dpkg:`/`apk:NAME` and `python:NAME`."""
    out: dict[str, dict[str, Any]] = {}
    os_facts = facts.get("os") if isinstance(facts.get("os"), dict) else {}
    for kind in ("dpkg", "apk"):
        for name, f in sorted((os_facts.get(kind) or {}).items()):
            out[f"{kind}:{name}"] = {"version": f["version"], "layer": f.get("layer", -1)}
    py = facts.get("python") if isinstance(facts.get("python"), dict) else {}
    for name, f in sorted((py.get("packages") or {}).items()):
        entry: dict[str, Any] = {"version": f["version"], "layer": f.get("layer", -1)}
        if str(f.get("fingerprint", "")).startswith("sha256:"):
            entry["fingerprint"] = f["fingerprint"]
        out[f"python:{name}"] = entry
    return out


def _layers(image: dict[str, Any]) -> list[dict[str, Any]]:
    layers = image.get("layers") or {}
    out = []
    for key in sorted(layers, key=int):
        li = layers[key]
        out.append(
            {
                "index": int(key),
                "digest": li.get("digest", ""),
                "diff_id": li.get("diff_id", ""),
                "chain_id": li.get("chain_id", ""),
                "created_by": li.get("created_by", ""),
            }
        )
    return out


def lock_from_facts(
    facts: dict[str, Any],
    created_by: str = "prov",
    files: dict[str, Any] | None = None,
    coverage: dict[str, Any] | None = None,
) -> str:
    """The lock's TOML text for an image scan's facts (`ImageScan.facts()`) and, when the
    scan verified files, its per-package file checks (`ImageScan.file_checks()`) and their
    coverage (`ImageScan.coverage.as_dict()`)."""
    image = facts.get("image")
    if not isinstance(image, dict):
        raise LockError("not an image manifest: no image section")
    out = [_COMMENT, f"kind = {string(IMAGE_LOCK_KIND)}",
           f"format = {LOCK_VERSION if files is not None else 1}",
           f"created-by = {string(created_by)}"]
    warnings = facts.get("warnings")
    if isinstance(warnings, list) and warnings:  # hostile layer content prov accepted
        out.append(f"warnings = {_value([str(w) for w in warnings])}")
    _table(out, "[image]", {k: image[k] for k in _IMAGE_KEYS if k in image})
    for li in _layers(image):
        _table(out, "[[layers]]", li)
    _table(out, "[packages]", lock_packages(facts))
    if coverage is not None:
        _table(out, "[coverage]", coverage)
    if files is not None:
        _table(out, "[files]", {key: _file_check(files[key]) for key in sorted(files)})
    return "\n".join(out) + "\n"


# Emitted line by line (linear in entries): tomlkit's document model re-indexes its
# container on every insertion, which made a 50,000-package lock quadratic (issue #30).
_COMMENT = ("# prov image lock: written by `prov pin`; check with\n"
            "# `prov verify --lock FILE [SOURCE]`. Do not edit by hand.")


def _value(value: Any) -> str:
    """A TOML value: dicts as inline tables (insertion order), lists as arrays."""
    if isinstance(value, dict):
        inner = ", ".join(f"{toml_key(str(k))} = {_value(v)}" for k, v in value.items()
                          if v is not None)
        return "{" + inner + "}" if inner else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return scalar(value)


def _table(out: list[str], header: str, table: dict[str, Any]) -> None:
    out.append("")
    out.append(header)
    out.extend(f"{toml_key(str(k))} = {_value(v)}" for k, v in table.items())


def _file_check(check: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"checked": int(check.get("checked", 0))}
    if check.get("skipped"):
        entry["skipped"] = int(check["skipped"])
    for kind in _ISSUES:
        if check.get(kind):
            entry[kind] = [{k: v for k, v in issue.items() if v is not None}
                           for issue in check[kind]]
    return entry


def read_lock(text: str, origin: str = "lock") -> dict[str, Any]:
    """A lock as plain data; LockError when it is not a lock prov can check."""
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise LockError(f"{origin}: malformed TOML: {exc}") from None
    if doc.get("kind") != IMAGE_LOCK_KIND:
        raise LockError(f"{origin}: not an image lock (kind {doc.get('kind')!r})")
    if doc.get("format") not in READ_VERSIONS:
        raise LockError(f"{origin}: unsupported image lock format {doc.get('format')!r}")
    image = doc.get("image")
    if not isinstance(image, dict) or not isinstance(image.get("config_digest"), str):
        raise LockError(f"{origin}: lock has no image.config_digest")
    if not isinstance(doc.get("layers", []), list) or not isinstance(doc.get("packages", {}), dict):
        raise LockError(f"{origin}: malformed layers or packages")
    if not isinstance(doc.get("coverage", {}), dict):
        raise LockError(f"{origin}: malformed coverage table")
    if not isinstance(doc.get("files", {}), dict):
        raise LockError(f"{origin}: malformed files table")
    return doc


def compare(
    lock: dict[str, Any], facts: dict[str, Any], files: dict[str, Any] | None = None
) -> list[Difference]:
    """Every way the scanned image differs from its lock (empty: it matches).

    Steps: (1) the config digest, the anchor; (2) index and manifest digests where both
    sides know the registry's; (3) every layer's DiffID and ChainID; (4) every package's
    version, layer and fingerprint, missing and extra ones included; (5) when the lock
    and the scan both verified files, every file whose state differs from the lock's.
    """
    out: list[Difference] = []
    locked, now = lock["image"], facts.get("image") or {}
    # 1. the config digest
    if locked.get("config_digest") != now.get("config_digest"):
        out.append(
            Difference(
                "image.config_digest",
                "changed",
                locked.get("config_digest"),
                now.get("config_digest"),
            )
        )
    # 2. registry digests: only comparable when neither side synthesized its manifest
    comparable = not locked.get("manifest_synthesized") and not now.get("manifest_synthesized")
    if comparable:
        for key in ("index_digest", "manifest_digest"):
            if key in locked and locked.get(key) != now.get(key):
                out.append(Difference(f"image.{key}", "changed", locked.get(key), now.get(key)))
    if locked.get("platform") != now.get("platform"):
        out.append(
            Difference("image.platform", "changed", locked.get("platform"), now.get("platform"))
        )
    # 3. layers
    old_layers = {li["index"]: li for li in lock.get("layers", []) if isinstance(li, dict)}
    new_layers = {li["index"]: li for li in _layers(now)}
    for idx in sorted(set(old_layers) | set(new_layers)):
        a, b = old_layers.get(idx), new_layers.get(idx)
        if a is None or b is None:
            out.append(
                Difference(
                    f"layers.{idx}",
                    "missing" if b is None else "extra",
                    a and a.get("diff_id"),
                    b and b.get("diff_id"),
                )
            )
            continue
        for key in ("diff_id", "chain_id"):
            if a.get(key) != b.get(key):
                out.append(Difference(f"layers.{idx}.{key}", "changed", a.get(key), b.get(key)))
    # 4. packages
    old_pkgs, new_pkgs = lock.get("packages", {}), lock_packages(facts)
    for name in sorted(set(old_pkgs) | set(new_pkgs)):
        a, b = old_pkgs.get(name), new_pkgs.get(name)
        if a is None:
            out.append(Difference(f"packages.{name}", "extra", None, b["version"]))
        elif b is None:
            out.append(Difference(f"packages.{name}", "missing", a.get("version"), None))
        else:
            for key in ("version", "layer", "fingerprint"):
                if a.get(key) != b.get(key):
                    out.append(
                        Difference(f"packages.{name}.{key}", "changed", a.get(key), b.get(key))
                    )
    # 5. files
    if "files" in lock and files is not None:
        fold = _FOLD_V2 if lock.get("format") == 2 else {}
        out += compare_files(lock["files"], files, fold)
    return out


def _issues(
    check: dict[str, Any], fold: dict[str, str] | None = None
) -> dict[str, tuple[str, dict[str, Any]]]:
    """path -> (kind, issue) over one package's finding lists (`fold`: old kind names)."""
    out = {}
    for kind in _ISSUES:
        for issue in check.get(kind) or []:
            if isinstance(issue, dict) and isinstance(issue.get("path"), str):
                out[issue["path"]] = ((fold or {}).get(kind, kind), issue)
    return out


def compare_files(
    locked: dict[str, Any], now: dict[str, Any], fold: dict[str, str] | None = None
) -> list[Difference]:
    """Files whose state (intact, modified to a digest, missing, unclaimed) changed since
    the lock. `locked` is the digest the lock knew (the package's claim, or what the lock
    recorded for a file already modified or unclaimed at pin time)."""
    out: list[Difference] = []
    for key in sorted(set(locked) | set(now)):
        old = _issues(locked.get(key) or {})
        new = _issues(now.get(key) or {}, fold)
        for path in sorted(set(old) | set(new)):
            (k_old, a), (k_new, b) = old.get(path, ("", {})), new.get(path, ("", {}))
            if k_old == k_new and a.get("actual") == b.get("actual"):
                continue
            was = a.get("actual") or b.get("expected") or None
            change = k_new or "restored"
            layer = b.get("layer") if k_new else None
            now_digest = b.get("actual") or None
            out.append(
                Difference(
                    f"files.{key}", change, was, now_digest, path, layer,
                    b.get("installed") if k_new else None, str(b.get("other") or ""),
                )
            )
    return out
