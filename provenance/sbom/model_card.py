"""A model component's CycloneDX 1.6 `modelCard`, as JSON (cyclonedx-python-lib 11 has no
model for it; `render` puts it into the component and the strict validator checks it).

- `modelParameters.modelArchitecture`: the class the engine loaded (as recorded);
- `quantitativeAnalysis.performanceMetrics`: the figures of each published result that a
  disclosure card covers, `slice` naming the result: a `prov-result/1` result's `summary`,
  every scalar leaf by its dotted name as the result spells it (so a statistic added to the
  summary appears here without a change; `{"not_computable": WHY}` says so; an interval with
  `lo`/`hi` is one metric with its `confidenceInterval`), then its acceptance policy's verdict
  and each check with the value it observed; a KL result's figures beside its `kl_disclosure`;
- `considerations.technicalLimitations` and `properties`: where each result's disclosure card
  is, and the policy's digest.

A result without a disclosure card (a CSV, a figure nobody disclosed) adds nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

from provenance.model import kl
from provenance.model.disclosure import ITEMS
from provenance.sbom.models_read import ROLE_MODEL, ROLE_TOKENIZER, ModelRead
from provenance.sbom.subjects import PublishedResult

_INTERVALS = (("lo", "hi"), ("lower", "upper"))
_POINT = ("mean", "estimate", "value")


def model_card(model: ModelRead, results: Sequence[PublishedResult]) -> dict[str, Any] | None:
    """None when there is nothing to say: no architecture recorded, no figure disclosed."""
    card: dict[str, Any] = {"bom-ref": f"{model.ref}#model-card"}
    arch = next((ld.facts.get("class") for ld in model.loads
                 if ld.role == ROLE_MODEL and ld.facts.get("class") not in (None, "none")), None)
    if arch:
        card["modelParameters"] = {"modelArchitecture": arch}
    disclosed = [(r, where) for r in results if (where := card_location(r))]
    if model.role == ROLE_TOKENIZER:
        disclosed = []  # figures are the model's; a tokenizer-only load computed none
    metrics = [m for r, _ in disclosed for m in performance_metrics(r)]
    if metrics:
        card["quantitativeAnalysis"] = {"performanceMetrics": metrics}
    notes = [f"{r.name}: its figures hold as its disclosure card ({where}) states them: "
             f"{', '.join(ITEMS)}; without the card they are not comparable" for r, where
             in disclosed]
    if notes:
        card["considerations"] = {"technicalLimitations": notes}
    props = []
    for r, where in disclosed:
        props.append({"name": "prov:disclosure-card", "value": where})
        policy = r.doc.get("policy") if r.doc else None
        if isinstance(policy, dict) and isinstance(policy.get("sha256"), str):
            props.append({"name": "prov:policy-sha256",
                          "value": f"{r.name}: sha256:{policy['sha256']}"})
    if props:
        card["properties"] = props
    return card if len(card) > 1 else None


def card_location(result: PublishedResult) -> str | None:
    """Where a result's disclosure card lies in the bundle; None when it has none."""
    doc = result.doc
    if not doc:
        return None
    if doc.get("format") == "prov-result/1" and isinstance(doc.get("disclosure"), dict):
        return f"{result.name}#/disclosure"
    if kl.declares_kl(doc) and isinstance(doc.get("kl_disclosure"), dict):
        base = result.name.split("/", 1)[-1]
        return f"disclosures/{base}.kl-card.json"
    return None


def performance_metrics(result: PublishedResult) -> list[dict[str, Any]]:
    doc = result.doc or {}
    out = [_metric(name, value, result.name) for name, value in figures(doc)]
    policy = doc.get("policy")
    if isinstance(policy, dict) and isinstance(policy.get("verdict"), str):
        out.append({"type": "policy verdict", "value": policy["verdict"], "slice": result.name})
        for check in policy.get("checks") or []:
            if isinstance(check, dict) and isinstance(check.get("statistic"), str):
                out.append(_check(check, result.name))
    return out


def figures(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """(dotted name, value) of every scalar figure a result discloses, in the result's order."""
    if doc.get("format") == "prov-result/1":
        return list(_flatten(doc.get("summary"), ""))
    found: dict[str, Any] = {k: doc[k] for k in ("kl_divergence", "kl") if k in doc}
    if isinstance(doc.get("metric"), str) and "value" in doc:
        found[doc["metric"]] = doc["value"]
    if isinstance(doc.get("metrics"), dict):
        found.update({f"metrics.{k}": v for k, v in doc["metrics"].items()})
    return list(_flatten(found, ""))


def _flatten(value: Any, name: str) -> Iterator[tuple[str, Any]]:
    if _scalar(value):
        if name:
            yield name, value
    elif isinstance(value, dict):
        if set(value) == {"not_computable"} and name:
            yield name, value
            return
        bounds = _bounds(value)
        if bounds and name:
            yield name, value
        for key, inner in value.items():
            if bounds and key in (*bounds, *_POINT):
                continue
            yield from _flatten(inner, f"{name}.{key}" if name else str(key))
    # lists (clusters, segments), strings (decoded text) and null are not figures


def _scalar(value: Any) -> bool:
    return isinstance(value, bool | int | float)


def _bounds(value: dict[str, Any]) -> tuple[str, str] | None:
    return next((pair for pair in _INTERVALS if all(_scalar(value.get(k)) for k in pair)),
                None)


def _metric(name: str, value: Any, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": name}  # in the schema's order (XML follows it)
    interval = None
    if isinstance(value, dict) and "not_computable" in value:
        out["value"] = f"not computable: {value['not_computable']}"
    elif isinstance(value, dict):
        lo, hi = _bounds(value) or ("lo", "hi")
        point = next((value[k] for k in _POINT if _scalar(value.get(k))), None)
        if point is not None:
            out["value"] = _text(point)
        interval = {"lowerBound": _text(value[lo]), "upperBound": _text(value[hi])}
    else:
        out["value"] = _text(value)
    out["slice"] = where
    if interval:
        out["confidenceInterval"] = interval
    return out


def _check(check: dict[str, Any], where: str) -> dict[str, Any]:
    condition = " ".join(f"{k} {_text(check[k])}" for k in ("min", "max", "equals", "one_of")
                         if k in check)
    value = f"{check.get('outcome')}, observed {_text(check.get('observed'))}"
    if isinstance(check.get("reason"), str):
        value += f" ({check['reason']})"
    return {"type": f"policy check: {check['statistic']} {condition}".rstrip(),
            "value": value, "slice": where}


def _text(value: Any) -> str:
    """A figure as text, exactly: the JSON spelling (a float's shortest round trip)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
