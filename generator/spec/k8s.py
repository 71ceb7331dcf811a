"""Kubernetes objects a spec carries as written (an Affinity, a PodSecurityContext, Volumes,
VolumeMounts), and a manifest's engine Container (:func:`container_errors`), validated against
the Kubernetes OpenAPI schema (strict: unknown fields refused).

The schemas are package data (``spec/data/k8s-objects.json``, extracted from the Kubernetes
1.32 OpenAPI by ``tools/extract_k8s_schemas.py``). The JSON Schema of the spec references them
(``#/$defs/io.k8s.api.core.v1.<Kind>``), so editors complete and check these fields too; pydantic
runs the same check (:func:`_checker`), so both verdicts agree.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema

from ..resources import package_text


@cache
def k8s_schemas() -> dict:
    """``{"roots": {kind: definition}, "$defs": {definition: schema}, ...}``."""
    return json.loads(package_text("spec", "data", "k8s-objects.json"))


@cache
def _validator(kind: str):
    import jsonschema

    data = k8s_schemas()
    schema = {"$ref": f"#/$defs/{_DEF}{kind}", "$defs": data["$defs"]}
    return jsonschema.Draft202012Validator(schema)


def _checker(kind: str):
    def check(value: dict[str, Any]) -> dict[str, Any]:
        errors = sorted(_validator(kind).iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            e = errors[0]
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
            raise ValueError(f"not a valid Kubernetes {kind}: {where or '(top)'}: {e.message}")
        return value
    return check


#: Placeholder key pydantic writes into the JSON Schema where a Kubernetes object goes;
#: :func:`link_schema` swaps it for a ``$ref`` (pydantic resolves ``$ref`` itself and would fail).
_MARK = "x-moegen-kubernetes"


#: Kubernetes core/v1 definitions, named as in the OpenAPI document.
_DEF = "io.k8s.api.core.v1."


def k8s_object(kind: str):
    """An annotated dict type validated as core/v1 ``kind`` (any definition the shipped schema
    holds: the roots below and every object they reference, e.g. ``CSIVolumeSource``)."""
    return _object(kind)


def _object(kind: str):
    return Annotated[dict[str, Any], AfterValidator(_checker(kind)),
                     WithJsonSchema({_MARK: kind})]


def link_schema(node: Any) -> None:
    """Point every Kubernetes-object field of a generated schema at its definition and add the
    definitions to the schema's ``$defs`` (in place)."""
    data = k8s_schemas()

    def walk(n: Any) -> None:
        if isinstance(n, dict):
            if _MARK in n:
                kind = n.pop(_MARK)
                n["$ref"] = f"#/$defs/{_DEF}{kind}"
            for v in n.values():
                walk(v)
        elif isinstance(n, list):
            for v in n:
                walk(v)

    used: set[str] = set()

    def refs(n: Any) -> None:
        if isinstance(n, dict):
            ref = n.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/io.k8s."):
                name = ref.removeprefix("#/$defs/")
                if name not in used:
                    used.add(name)
                    refs(data["$defs"][name])
            for v in n.values():
                refs(v)
        elif isinstance(n, list):
            for v in n:
                refs(v)

    walk(node)
    refs(node)   # only the definitions the schema reaches (not the Container the importer uses)
    node.setdefault("$defs", {}).update({k: data["$defs"][k] for k in sorted(used)})


def container_errors(container: dict) -> list[tuple[tuple, str]]:
    """Where and why ``container`` is not a valid Kubernetes core/v1 Container (the API
    server's schema at ``k8s_schemas()["kubernetes"]``, strict: unknown fields refused), as
    (path inside the container, message), in path order; [] when it is valid."""
    errors = sorted(_validator("Container").iter_errors(container),
                    key=lambda e: [str(p) for p in e.absolute_path])
    return [(tuple(e.absolute_path), e.message) for e in errors]


K8sAffinity = _object("Affinity")
K8sPodSecurityContext = _object("PodSecurityContext")
K8sVolume = _object("Volume")
K8sVolumeMount = _object("VolumeMount")
