"""KL-divergence disclosure cards: a KL figure is publishable only with all nine items.

A result file *declares a KL figure* when it is a JSON object with any of:
  - a top-level key "kl_divergence" or "kl";
  - "metric" whose value starts with "kl" (case-insensitive);
  - a "metrics" object with a key starting with "kl".
Its card is the top-level "kl_disclosure" object (shape in docs/concepts/disclosure.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

# The nine items are defined once, by the runners that produce the cards.
from provenance.model.disclosure import ITEMS  # noqa: E402

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_DIRECTION = re.compile(r"^KL\(\s*\S+\s*\|\|\s*\S+\s*\)$")


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The file as a JSON object, or None when it is not one (then it declares no KL)."""
    from provenance.model.inputs import LIMITS, check_json_depth, open_input

    with open_input(path, "result") as fh:  # a FIFO, a device or a huge file: one line
        data = fh.read(4096)
        if data.lstrip()[:1] != b"{":  # not a JSON object: no need to read the rest
            return None
        data += fh.read(LIMITS["result"])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    check_json_depth(text, f"result {path}")  # too deep is refused, not "declares no KL"
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


def _text(v: Any) -> bool:
    return isinstance(v, str) and bool(v.strip())


def _digest(v: Any) -> bool:
    return isinstance(v, str) and bool(_DIGEST.match(v))


def problems(card: Any, manifest_digest: str | None = None) -> list[str]:
    """Every missing or malformed item, by name (empty: the card is complete)."""
    if not isinstance(card, dict):
        return [f"{item} (missing: no kl_disclosure card)" for item in ITEMS]
    out = []

    def need(item: str, ok: bool, what: str) -> None:
        if item not in card:
            out.append(f"{item} (missing)")
        elif not ok:
            out.append(f"{item} ({what})")

    ref = card.get("reference_checkpoint")
    need("reference_checkpoint", isinstance(ref, dict) and _digest(ref.get("digest")),
         'needs {"digest": "sha256:<64 hex>"}')
    env = card.get("runtime_environment")
    env_ok = isinstance(env, dict) and _digest(env.get("manifest_digest"))
    need("runtime_environment", env_ok, 'needs {"manifest_digest": "sha256:<64 hex>"}')
    if env_ok and manifest_digest and env["manifest_digest"] != manifest_digest:
        out.append(f"runtime_environment (manifest_digest {env['manifest_digest']} is not the "
                   f"published run's manifest {manifest_digest})")
    text = card.get("evaluation_text")
    need("evaluation_text",
         isinstance(text, dict) and _digest(text.get("digest")) and _text(text.get("source")),
         "needs digest and source")
    cal = card.get("calibration_data")
    need("calibration_data",
         cal == "none" or (isinstance(cal, dict) and _digest(cal.get("digest"))
                           and _text(cal.get("source"))),
         'needs "none" or digest and source')
    lengths = card.get("context_lengths")
    need("context_lengths",
         isinstance(lengths, list) and bool(lengths)
         and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in lengths),
         "needs a non-empty list of positive token counts")
    pos = card.get("sampled_positions")
    need("sampled_positions", _text(pos) or (isinstance(pos, dict) and bool(pos)),
         "needs a description of which token positions were scored")
    need("kl_direction", isinstance(card.get("kl_direction"), str)
         and bool(_DIRECTION.match(card["kl_direction"].strip())),
         'needs a direction such as "KL(ref||cand)"')
    for item in ("vocabulary_truncation", "aggregation"):
        v = card.get(item)
        need(item, _text(v) or (isinstance(v, dict) and bool(v)), "needs a non-empty description")
    return out


def missing_summary(name: str, issues: list[str]) -> str:
    return (f"{name} declares a KL-divergence figure but its disclosure card is incomplete; "
            f"missing or malformed: {'; '.join(issues)}")
