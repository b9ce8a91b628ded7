"""Serialise and strictly validate a BOM. Nothing invalid leaves this module."""

from __future__ import annotations

import json

from provenance.model.errors import ProvError
from provenance.sbom.build import BuiltBom

FORMATS = ("cyclonedx-json", "cyclonedx-xml")


def render(built: BuiltBom, fmt: str = "cyclonedx-json") -> str:
    if fmt not in FORMATS:
        raise ProvError(f"unknown SBOM format {fmt!r} (choose {', '.join(FORMATS)})")
    if fmt == "cyclonedx-json":
        from cyclonedx.output.json import JsonV1Dot6

        text = JsonV1Dot6(built.bom).output_as_string(indent=2)
        doc = json.loads(text)
        _add_model_cards(doc, built.model_cards)
        if built.formulation:
            doc["formulation"] = built.formulation
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    else:
        # XML carries the run in metadata properties; `formulation` is written in JSON only
        # (cyclonedx-python-lib has no model for it), the model cards are spliced in.
        from cyclonedx.output.xml import XmlV1Dot6

        text = XmlV1Dot6(built.bom).output_as_string(indent=2) + "\n"
        if built.model_cards:
            from provenance.sbom.model_card_xml import add_model_cards

            text = add_model_cards(text, built.model_cards)
    validate(text, fmt)
    return text


def _add_model_cards(doc: dict, cards: dict[str, dict]) -> None:
    """Each model component's `modelCard` (JSON only, like `formulation`)."""
    for component in doc.get("components") or []:
        card = cards.get(component.get("bom-ref"))
        if card is not None:
            component["modelCard"] = card


def validate(text: str, fmt: str = "cyclonedx-json") -> None:
    """cyclonedx-python-lib's strict validator (JSON: additionalProperties forbidden)."""
    from cyclonedx.schema import SchemaVersion

    if fmt == "cyclonedx-json":
        from cyclonedx.validation.json import JsonStrictValidator

        errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    else:
        from cyclonedx.validation.xml import XmlValidator

        errors = XmlValidator(SchemaVersion.V1_6).validate_str(text)
    if errors:
        raise ProvError(f"generated SBOM is not valid CycloneDX 1.6: {_brief(errors)}",
                        exit_code=70)


def _brief(error: object) -> str:
    """One short line: where and what. str() of a jsonschema error appends the whole offending
    instance (a 16 MB SBOM printed back into one error line)."""
    data = getattr(error, "data", error)
    message = str(getattr(data, "message", data))
    where = "/".join(str(p) for p in getattr(data, "absolute_path", ()) or ())
    text = f"{where}: {message}" if where else message
    return text if len(text) <= 300 else text[:300] + "…"
