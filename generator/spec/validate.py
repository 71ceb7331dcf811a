"""Structural validation: pydantic (strict) first; when it refuses, the JSON Schema explains.

The JSON Schema is the one generated from the pydantic models (``models.json_schema``), the same
document ``gen schema`` prints and ``schemas/`` ships, so the schema users see is the one enforced.
Pydantic validates in strict mode (no coercion: ``"8"`` is not an int), so it accepts exactly
what the schema accepts (``tests/test_fuzz.py`` checks the two verdicts agree); a valid spec never
pays for importing jsonschema, and a refused one gets every structural error at once, with the
schema's messages and did-you-mean hints.
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ..errors import Finding, Severity, closest
from .load import LoadedSpec, json_path
from .models import GPU_UNKNOWN, MODEL_UNKNOWN, InferenceDeployment, json_schema

if TYPE_CHECKING:
    import jsonschema


@cache
def _validator() -> "jsonschema.Draft202012Validator":
    import jsonschema
    return jsonschema.Draft202012Validator(json_schema())


def schema_errors(data) -> list["jsonschema.ValidationError"]:
    """Every JSON Schema error of ``data`` (anyOf/oneOf flattened to their relevant leaves)."""
    return _best(list(_validator().iter_errors(data)))


def _show(value) -> str:
    """A value as the user wrote it (JSON spelling), shortened."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


_LIMITS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}


def _schema_finding(err: "jsonschema.ValidationError", loaded: LoadedSpec) -> Finding:
    path = tuple(err.absolute_path)
    code, hint = "SCH001", ""
    message = f"{_show(err.instance)}: {err.message}" if len(err.message) > 120 else err.message
    if err.validator == "additionalProperties" and "patternProperties" in err.schema:
        import re
        patterns = list(err.schema["patternProperties"])
        bad = sorted(k for k in err.instance if not any(re.search(p, k) for p in patterns))
        code = "SCH008"
        path = (*path, bad[0]) if bad else path
        message = f"invalid key {_show(bad[0] if bad else '')}: keys must match {patterns[0]}"
        hint = "environment variable names are letters, digits and _; label keys follow Kubernetes"
    elif err.validator == "additionalProperties":
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
        message = f"{_show(err.instance)} is not one of {', '.join(map(_show, options))}"
        close = closest(str(err.instance), [str(o) for o in options])
        hint = f"did you mean {close!r}?" if close else ""
    elif err.validator in ("type",):
        code = "SCH005"
        want = err.validator_value
        want = "null" if want == "null" else want
        message = f"{_show(err.instance)} is not of type {want}"
        if want == "string" and isinstance(err.instance, (int, float)) \
                and not isinstance(err.instance, bool):
            # YAML 1.1/1.2 read an unquoted 0.30 as the float 0.3 (and 1.10 as 1.1).
            hint = ("YAML read an unquoted number: quote the value as you wrote it (e.g. "
                    "version: \"0.30\"; unquoted, 0.30 is the number 0.3)")
    elif err.validator in _LIMITS:
        code = "SCH006"
        message = f"{_show(err.instance)} is out of range: must be {_LIMITS[err.validator]} " \
                  f"{err.validator_value}"
    elif err.validator in ("minLength", "maxLength", "minItems", "maxItems", "minProperties",
                           "maxProperties"):
        code = "SCH006"
        what = {"minLength": "at least {} characters", "maxLength": "at most {} characters",
                "minItems": "at least {} items", "maxItems": "at most {} items",
                "minProperties": "at least {} entries", "maxProperties": "at most {} entries"}
        size = len(err.instance) if hasattr(err.instance, "__len__") else "?"
        message = f"has {size}; must have {what[err.validator].format(err.validator_value)}"
    elif err.validator == "pattern":
        code = "SCH007"
        message = f"{_show(err.instance)} does not match {err.validator_value}"
        if "x00-" in err.validator_value:
            hint = "newlines and control characters are not allowed here"
    elif err.validator == "propertyNames":
        code = "SCH008"
    loc = loaded.provenance.locate(path)
    return Finding(code, Severity.ERROR, json_path(path), message, hint, loc)


def _best(errors: list["jsonschema.ValidationError"]) -> list["jsonschema.ValidationError"]:
    """Flatten anyOf/oneOf errors to their most relevant leaf.

    For ``x | None`` fields the ``None`` branch's "is not of type null" is never the point: keep
    the other branches' leaf errors (``moe.eplb.redundantExperts``, not ``moe``).
    """
    out = []
    for err in errors:
        if not err.context:
            out.append(err)
            continue
        leaves = [e for e in _leaves(err) if not (e.validator == "type" and e.validator_value == "null")]
        if not leaves:
            out.append(err)
            continue
        out.extend(leaves)
    return out


def _leaves(err: "jsonschema.ValidationError") -> list["jsonschema.ValidationError"]:
    if not err.context:
        return [err]
    return [leaf for sub in err.context for leaf in _leaves(sub)]


def kubernetes_object(loaded: LoadedSpec) -> Finding | None:
    """One finding for a Kubernetes object read where a spec is (its ``apiVersion`` outside
    moegen.dev/ and a ``kind``: a Deployment, a LeaderWorkerSet given to gen render, size,
    report or diff), instead of the schema's complaints about every field; None otherwise.
    gen validate and gen import read serving manifests themselves (generator/inputs.py)."""
    data = loaded.data
    if not isinstance(data, dict):
        return None
    api, kind = data.get("apiVersion"), data.get("kind")
    if not (isinstance(api, str) and isinstance(kind, str) and api and kind) \
            or "moegen" in api or kind in ("InferenceDeployment", "PlanRequest"):
        return None   # moegen's own document, its apiVersion or kind mistyped: the schema says
    at = loaded.provenance.locate(("apiVersion",))
    name = at.file or "FILE"
    return Finding("SCH001", Severity.ERROR, json_path(("apiVersion",)),
                   f"this is a Kubernetes manifest ({api} {kind}), not an InferenceDeployment",
                   f"import it first: gen import {name} -o spec.yaml (gen import reads the "
                   "workloads that run vLLM or SGLang), then give spec.yaml; gen validate "
                   "checks manifests as they are", at)


def validate_structure(loaded: LoadedSpec) -> tuple[InferenceDeployment | None, list[Finding]]:
    """Validate ``loaded.data``; return the model (or None) and every structural finding."""
    try:
        return InferenceDeployment.model_validate(loaded.data, strict=True), []
    except ValidationError as exc:
        refused = exc
    manifest = kubernetes_object(loaded)
    if manifest is not None:
        return None, [manifest]
    findings = [_schema_finding(e, loaded) for e in schema_errors(loaded.data)]
    # One finding per (path, code): anyOf branches can repeat the same complaint.
    unique = list({(f.path, f.code, f.message): f for f in findings}.values())
    if unique:
        return None, unique
    # Refused by pydantic alone (the schema should have caught it): keep its findings readable.
    out = []
    for e in refused.errors():
        path = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function")))
        out.append(Finding("SCH001", Severity.ERROR, json_path(path), e["msg"], "",
                           loaded.provenance.locate(path)))
    return None, out


#: The catalog GPU a pool of ``gpu: unknown`` is modelled with, so that every check that does
#: not read the GPU runs (docs/spec.md §2): the findings of those that do
#: (``checks/registry.py`` ``gpu_dependent``) are not reported, POOL006 says so.
GPU_STAND_IN = "H100-80GB"


def stand_in_gpu(spec: InferenceDeployment) -> tuple[InferenceDeployment, tuple[str, ...]]:
    """``spec`` with :data:`GPU_STAND_IN` for every pool of ``gpu: unknown``, and the names of
    those pools (sorted; empty: ``spec`` itself, unchanged)."""
    unknown = tuple(sorted(n for n, p in spec.spec.nodePools.items() if p.gpu == GPU_UNKNOWN))
    if not unknown:
        return spec, ()
    pools = {n: p.model_copy(update={"gpu": GPU_STAND_IN}) if n in unknown else p
             for n, p in spec.spec.nodePools.items()}
    inner = spec.spec.model_copy(update={"nodePools": pools})
    return spec.model_copy(update={"spec": inner}), unknown


#: The catalog model a spec of ``model.architecture: unknown`` is modelled with, so that every
#: check that does not read the model runs (docs/spec.md §2): only the findings of those
#: (``checks/registry.py`` ``model_independent``) are reported, MOD008 says what did not run.
MODEL_STAND_IN = "deepseek-v3"


def stand_in_model(spec: InferenceDeployment) -> tuple[InferenceDeployment, bool]:
    """``spec`` with :data:`MODEL_STAND_IN` for ``model.architecture: unknown`` (and no
    ``model.config``: with one, MOD001 reports both), and whether it was unknown (False:
    ``spec`` itself, unchanged)."""
    m = spec.spec.model
    if m.architecture != MODEL_UNKNOWN or m.config is not None:
        return spec, False
    inner = spec.spec.model_copy(update={"model": m.model_copy(
        update={"architecture": MODEL_STAND_IN})})
    return spec.model_copy(update={"spec": inner}), True


def pydantic_findings(model_cls, data, provenance) -> tuple[object | None, list[Finding]]:
    """Validate ``data`` against any pydantic model (e.g. the PlanRequest): (object, findings)."""
    try:
        return model_cls.model_validate(data), []
    except ValidationError as exc:
        out = []
        for e in exc.errors():
            path = tuple(p for p in e["loc"] if not (isinstance(p, str) and "[" in p))
            code = {"extra_forbidden": "SCH002", "missing": "SCH003", "literal_error": "SCH004"}.get(
                e["type"], "SCH001")
            out.append(Finding(code, Severity.ERROR, json_path(path), e["msg"], "",
                               provenance.locate(path)))
        return None, out
