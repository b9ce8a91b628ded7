"""KL-divergence disclosure cards: a KL figure is publishable only with all nine items.

A result file *declares a KL figure* when it is a JSON object with any of:
  - a top-level key "kl_divergence" or "kl";
  - "metric" whose value starts with "kl" (case-insensitive);
  - a "metrics" object with a key starting with "kl".
Its card is the top-level "kl_disclosure" object (shape in docs/concepts/disclosure.md), checked
by the model's strict check. A prov-result/1 result.json carries its own card under
"disclosure"; it is published only when that card is strict too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# The nine items and their check are defined once, in the model.
from provenance.model.disclosure import ITEMS, publish_problems


def read_json_object(path: Path, name: str | None = None) -> dict[str, Any] | None:
    """The file as a JSON object, or None when it is not one (then it declares no KL).
    `name`: what messages call it (a bundle member, not the temp file it was unpacked to)."""
    from provenance.model.inputs import InputError, shown

    try:
        return _read_json_object(path)
    except InputError as exc:
        if name is None:
            raise
        raise InputError(str(exc).replace(shown(path), name)) from None


def _read_json_object(path: Path) -> dict[str, Any] | None:
    from provenance.model.inputs import MAX_JSON_MEMORY, open_input

    with open_input(path, "result") as fh:  # a FIFO, a device or a huge file: one line
        data = fh.read(4096)
        if data.lstrip()[:1] != b"{":  # not a JSON object: no need to read the rest
            return None
        # a JSON object is parsed whole (it may declare KL): bounded like any JSON document
        with open_input(path, "result", MAX_JSON_MEMORY // 2) as whole:
            data = whole.read(MAX_JSON_MEMORY // 2)
    return json_object(data, f"result {path}")


def json_object(data: bytes, what: str) -> dict[str, Any] | None:
    """`data` as a JSON object, or None when it is not one (a CSV, an image). Too deep or
    too big is refused, not read as "declares no KL"."""
    from provenance.model.inputs import check_json_shape, check_text_memory

    if data.lstrip()[:1] != b"{":
        return None
    check_text_memory(data, what)  # before decoding: one emoji widens it all
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    check_json_shape(text, what)
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def declares_kl(doc: dict[str, Any] | None) -> bool:
    if not doc:
        return False
    if "kl_divergence" in doc or "kl" in doc:
        return True
    metric = doc.get("metric")
    if isinstance(metric, str) and metric.lower().startswith("kl"):
        return True
    metrics = doc.get("metrics")
    return isinstance(metrics, dict) and any(str(k).lower().startswith("kl") for k in metrics)


def problems(card: Any, manifest_digest: str | None = None) -> list[str]:
    """Every missing or malformed item of a `kl_disclosure` card, by name (empty: publishable).
    The check is the model's (provenance/model/disclosure.py), plus: a KL figure's card names
    the published manifest."""
    if not isinstance(card, dict):
        return [f"{item} (missing: no kl_disclosure card)" for item in ITEMS]
    return publish_problems(card, manifest_digest)


def result_card_problems(doc: dict[str, Any] | None) -> list[str]:
    """A prov-result/1 result.json's own `disclosure` card: what keeps it from being published
    (a card written before the strict card is refused here, though prov still reads it)."""
    if not doc or doc.get("format") != "prov-result/1":
        return []
    return publish_problems(doc.get("disclosure"), None,
                            kl=doc.get("kind") in ("diverge", "replay"))


def not_strict_summary(name: str, issues: list[str]) -> str:
    return (f"{name}: its disclosure card is not strict (a card written before prov's typed "
            f"card is read as legacy, never published); malformed: {'; '.join(issues)}")


def missing_summary(name: str, issues: list[str]) -> str:
    return (f"{name} declares a KL-divergence figure but its disclosure card is incomplete; "
            f"missing or malformed: {'; '.join(issues)}")
