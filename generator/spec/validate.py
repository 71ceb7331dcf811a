"""Structural validation: JSON Schema first (every structural error at once), then pydantic.

The JSON Schema is the one generated from the pydantic models (``models.json_schema``), the same
document ``gen schema`` prints and ``schemas/`` ships, so the schema users see is the one enforced.
"""

from __future__ import annotations

import difflib
from functools import cache

import jsonschema
from pydantic import ValidationError

from ..errors import Finding, Severity
from .load import LoadedSpec, json_path
from .models import InferenceDeployment, json_schema


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema())


def _schema_finding(err: jsonschema.ValidationError, loaded: LoadedSpec) -> Finding:
    path = tuple(err.absolute_path)
    code, hint = "SCH001", ""
    message = err.message
    if err.validator == "additionalProperties":
        allowed = sorted((err.schema.get("properties") or {}).keys())
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        code = "SCH002"
        if extra:
            path = (*path, extra[0])
            message = f"unknown field {extra[0]!r}" + (
                f" (and {', '.join(map(repr, extra[1:]))})" if len(extra) > 1 else "")
            close = difflib.get_close_matches(extra[0], allowed, n=1)
            hint = (f"did you mean {close[0]!r}? " if close else "") + \
                f"allowed fields: {', '.join(allowed)}"
    elif err.validator == "required":
        code = "SCH003"
        message = err.message.replace("is a required property", "is required")
    elif err.validator in ("enum", "const"):
        code = "SCH004"
        options = err.validator_value if err.validator == "enum" else [err.validator_value]
        message = f"{err.instance!r} is not one of {', '.join(map(repr, options))}"
        close = difflib.get_close_matches(str(err.instance), [str(o) for o in options], n=1)
        hint = f"did you mean {close[0]!r}?" if close else ""
    elif err.validator in ("type",):
        code = "SCH005"
        message = f"{err.instance!r} is not of type {err.validator_value}"
    elif err.validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                           "minLength", "maxLength", "minItems", "maxItems", "minProperties"):
        code = "SCH006"
    elif err.validator == "pattern":
        code = "SCH007"
        message = f"{err.instance!r} does not match {err.validator_value}"
    loc = loaded.provenance.locate(path)
    return Finding(code, Severity.ERROR, json_path(path), message, hint, loc)


def _best(errors: list[jsonschema.ValidationError]) -> list[jsonschema.ValidationError]:
    """Flatten anyOf/oneOf errors to their most relevant leaf (e.g. ``x | None`` fields)."""
    out = []
    for err in errors:
        if err.context:
            out.append(jsonschema.exceptions.best_match(err.context))
        else:
            out.append(err)
    return out


def validate_structure(loaded: LoadedSpec) -> tuple[InferenceDeployment | None, list[Finding]]:
    """Validate ``loaded.data``; return the model (or None) and every structural finding."""
    errors = _best(list(_validator().iter_errors(loaded.data)))
    findings = [_schema_finding(e, loaded) for e in errors]
    # One finding per (path, code): anyOf branches can repeat the same complaint.
    unique = list({(f.path, f.code, f.message): f for f in findings}.values())
    if unique:
        return None, unique
    try:
        return InferenceDeployment.model_validate(loaded.data), []
    except ValidationError as exc:  # the schema should have caught these; keep them readable
        out = []
        for e in exc.errors():
            path = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function")))
            out.append(Finding("SCH001", Severity.ERROR, json_path(path), e["msg"], "",
                               loaded.provenance.locate(path)))
        return None, out
