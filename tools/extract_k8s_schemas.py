"""Extract the Kubernetes object schemas a spec may embed into package data.

``spec.pod`` / ``roles[].pod`` take some Kubernetes objects as written (an Affinity, a
PodSecurityContext, Volumes, VolumeMounts), and ``gen validate`` checks the engine container of
a manifest as the API server would (a Container): moegen validates them against the Kubernetes OpenAPI
schema of :data:`K8S_VERSION` in strict form (unknown fields rejected), as kubernetes-validate
ships it (https://github.com/willthames/kubernetes-validate, generated from the Kubernetes
OpenAPI spec by yannh/kubernetes-json-schema). This tool copies the transitive closure of
definitions those objects reference into ``generator/spec/data/k8s-objects.json``;
``tests/test_data_drift.py`` fails when the committed file drifts.

Usage: python tools/extract_k8s_schemas.py [OUT_JSON]   (needs kubernetes-validate installed)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "generator" / "spec" / "data" / "k8s-objects.json"
#: The Kubernetes release whose schemas are used (the tests validate rendered output with 1.32).
K8S_VERSION = "1.32.0"
#: The objects a spec may carry, by the name moegen uses for them.
ROOTS = {
    "Affinity": "io.k8s.api.core.v1.Affinity",
    "PodSecurityContext": "io.k8s.api.core.v1.PodSecurityContext",
    "Volume": "io.k8s.api.core.v1.Volume",
    "VolumeMount": "io.k8s.api.core.v1.VolumeMount",
    # Not in a spec: the importer checks a manifest's engine container against it (IMP026).
    "Container": "io.k8s.api.core.v1.Container",
}
_PREFIX = "#/$defs/"


def _definitions() -> dict:
    import kubernetes_validate

    base = Path(os.path.dirname(kubernetes_validate.__file__)) / "kubernetes-json-schema"
    path = base / f"v{K8S_VERSION}-local-strict" / "_definitions.json"
    return json.loads(path.read_text())["$defs"]


def _refs(node, out: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_PREFIX):
            out.add(ref[len(_PREFIX):])
        for value in node.values():
            _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)


def extract() -> dict:
    """``{"source", "kubernetes", "roots": {name: def}, "$defs": {def: schema}}``."""
    defs = _definitions()
    todo, seen = list(ROOTS.values()), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found: set[str] = set()
        _refs(defs[name], found)
        todo += sorted(found - seen)
    return {
        "source": f"Kubernetes {K8S_VERSION} OpenAPI, strict JSON Schema as shipped by "
                  "kubernetes-validate; extracted by tools/extract_k8s_schemas.py",
        "kubernetes": K8S_VERSION,
        "roots": ROOTS,
        "$defs": {n: defs[n] for n in sorted(seen)},
    }


def render() -> str:
    """The exact text the committed data file must hold."""
    return json.dumps(extract(), indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    out.write_text(render())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
