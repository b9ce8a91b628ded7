"""The model cards (model_card.py's JSON) in CycloneDX 1.6 XML, spliced into the library's
XML text after each model component's nested `<components>` (the schema's order: ...,
properties, components, evidence, releaseNotes, modelCard), so the rest of the document
stays byte for byte the library's. The strict XSD validator checks the result (`render`).
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape, quoteattr

from provenance.model.errors import ProvError

_PLURALS = {"performanceMetrics": "performanceMetric",
            "technicalLimitations": "technicalLimitation", "properties": "property"}


def add_model_cards(text: str, cards: dict[str, dict[str, Any]]) -> str:
    for ref, card in cards.items():
        # the attribute as ElementTree (the library's writer) escapes it
        attr = escape(ref, {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#09;"})
        start = text.find(f'bom-ref="{attr}">')
        # file components have no children of their own: the first close is the model's
        end = text.find("</components>", start) if start >= 0 else -1
        if end < 0:
            raise ProvError(f"model component {ref}: not found in the XML to add its model "
                            "card", exit_code=70)
        line = text.rfind("\n", 0, end) + 1
        indent = text[line:end]
        at = end + len("</components>")
        text = text[:at] + "\n" + "\n".join(_lines(card, indent)) + text[at:]
    return text


def _lines(card: dict[str, Any], indent: str) -> list[str]:
    out = [f"{indent}<modelCard bom-ref={quoteattr(card['bom-ref'])}>"]
    for key in ("modelParameters", "quantitativeAnalysis", "considerations", "properties"):
        if key in card:
            out += _element(key, card[key], indent + "  ")
    return out + [f"{indent}</modelCard>"]


def _element(name: str, value: Any, indent: str) -> list[str]:
    if name == "property":
        return [f"{indent}<property name={quoteattr(value['name'])}>"
                f"{escape(value['value'])}</property>"]
    if isinstance(value, dict):
        inner = [line for k, v in value.items() for line in _element(k, v, indent + "  ")]
        return [f"{indent}<{name}>", *inner, f"{indent}</{name}>"]
    if isinstance(value, list):
        item = _PLURALS[name]
        inner = [line for v in value for line in _element(item, v, indent + "  ")]
        return [f"{indent}<{name}>", *inner, f"{indent}</{name}>"]
    return [f"{indent}<{name}>{escape(str(value))}</{name}>"]
