"""JSON Schema checks through `jsonschema` (the validator class the schema itself asks for)."""

from __future__ import annotations

from typing import Any


def schema_error(schema: dict[str, Any]) -> str | None:
    """None if `schema` is a valid JSON Schema, else the reason (one line)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message
    return None


def validation_error(instance: Any, schema: dict[str, Any]) -> str | None:
    """None if `instance` validates against `schema`, else the first error (one line)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    err = jsonschema.exceptions.best_match(cls(schema).iter_errors(instance))
    if err is None:
        return None
    path = "/".join(str(p) for p in err.absolute_path)
    return f"{path or '(root)'}: {err.message}"
