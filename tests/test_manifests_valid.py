"""Every rendered object is valid: Kubernetes schemas (strict), the LWS CRD, and kustomize.

Cases are the golden cases (examples + tests/golden/*), so every workload shape, engine dialect
and connector in the corpus is covered.
"""

from __future__ import annotations

import copy
import functools
import shutil
import subprocess

import jsonschema
import kubernetes_validate
import pytest
import yaml

from generator.emit import write_tree
from tests.helpers import (
    EXAMPLES,
    K8S_VERSION,
    ROOT,
    lws_templates,
    objects,
    render_spec,
    shared,
    validate_schema,
)
from tests.test_golden import cases

IDS = [c[0] for c in cases()]


#: Custom resources moegen renders -> their CRD file in shared/reference/crds.
CRDS = {"LeaderWorkerSet": "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
        "DisaggregatedSet": "disaggregatedset.x-k8s.io_disaggregatedsets.yaml",
        "PodMonitor": "monitoring.coreos.com_podmonitors.yaml",
        "ServiceMonitor": "monitoring.coreos.com_servicemonitors.yaml",
        "PrometheusRule": "monitoring.coreos.com_prometheusrules.yaml",
        "InferencePool": "inference.networking.k8s.io_inferencepools.yaml",
        "HTTPRoute": "gateway.networking.k8s.io_httproutes.yaml"}


#: CRDs kept in this repository (tests/crds/, each file names its upstream commit) -> version.
LOCAL_CRDS = {"ScaledObject": ("keda.sh_scaledobjects.yaml", "v1alpha1")}


@functools.cache
def _crd_schema(kind: str) -> dict:
    if kind in LOCAL_CRDS:
        file, name = LOCAL_CRDS[kind]
        crd = yaml.safe_load((ROOT / "tests" / "crds" / file).read_text())
    else:
        crd, name = yaml.safe_load(shared("reference", "crds", CRDS[kind]).read_text()), "v1"
    version = next(v for v in crd["spec"]["versions"] if v["name"] == name)
    return _strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))


def _lws_schema() -> dict:
    return _crd_schema("LeaderWorkerSet")


def _strict(schema: dict) -> dict:
    """Forbid unknown fields wherever the CRD lists properties (the API server would prune them
    silently; a field pruned is a setting lost)."""
    if isinstance(schema, dict):
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema["additionalProperties"] = False
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and pattern.startswith("^(?i)"):
            # Go's RE2 takes inline flags anywhere, Python's re only at the start.
            schema["pattern"] = "(?i)^" + pattern[len("^(?i)"):]
        for value in schema.values():
            if isinstance(value, dict):
                _strict(value)
            elif isinstance(value, list):
                for item in value:
                    _strict(item)
    return schema


def _pod_template(obj: dict, template: dict, which: str) -> dict:
    return {"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": f"{obj['metadata']['name']}-{which}", "namespace": "x"},
            "template": template}


@pytest.mark.parametrize("name,spec,overlays", cases(), ids=IDS)
def test_objects_pass_kubernetes_schemas(name, spec, overlays):
    _, _, files = render_spec(spec, overlays)
    objs = objects(files)
    assert objs
    for obj in objs:
        if obj["kind"] == "LeaderWorkerSet":
            validate_schema(obj, _lws_schema())
            for which, template in lws_templates(obj).items():
                kubernetes_validate.validate(_pod_template(obj, template, which), K8S_VERSION,
                                             strict=True)
        elif obj["kind"] == "DisaggregatedSet":
            validate_schema(obj, _crd_schema("DisaggregatedSet"))
            for role in obj["spec"]["roles"]:
                for which, template in lws_templates(role).items():
                    kubernetes_validate.validate(
                        _pod_template(obj, template, f"{role['name']}-{which}"), K8S_VERSION,
                        strict=True)
        elif obj["kind"] in CRDS or obj["kind"] in LOCAL_CRDS:
            validate_schema(obj, _crd_schema(obj["kind"]))
        else:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_lws_schema_is_strict_and_can_fail():
    """The CRD check rejects an unknown field and a wrong type (a check that cannot fail is none)."""
    _, _, files = render_spec(*cases()[0][1:])
    lws = next(o for o in objects(files) if o["kind"] == "LeaderWorkerSet")
    bad = copy.deepcopy(lws)
    bad["spec"]["leaderWorkerTemplate"]["sizee"] = 2
    with pytest.raises(jsonschema.ValidationError):
        validate_schema(bad, _lws_schema())
    bad = copy.deepcopy(lws)
    bad["spec"]["replicas"] = "one"
    with pytest.raises(jsonschema.ValidationError):
        validate_schema(bad, _lws_schema())


def test_kubernetes_validate_is_strict_and_can_fail():
    """An unknown pod field fails strict validation (the check is live)."""
    _, _, files = render_spec(*cases()[0][1:])
    svc = next(o for o in objects(files) if o["kind"] == "Service")
    bad = copy.deepcopy(svc)
    bad["spec"]["selectr"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


@pytest.mark.skipif(shutil.which("kubectl") is None,
                    reason="kubectl (with built-in kustomize) is not installed on this machine")
@pytest.mark.parametrize("name,spec,overlays", cases(), ids=IDS)
def test_kustomize_builds(name, spec, overlays, tmp_path):
    _, plan, files = render_spec(spec, overlays)
    out = tmp_path / "base"
    write_tree(out, files)
    built = subprocess.run(["kubectl", "kustomize", str(out)], capture_output=True, text=True,
                           check=False)
    assert built.returncode == 0, built.stderr
    docs = [d for d in yaml.safe_load_all(built.stdout) if d]
    configmaps = {d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"}
    # The env ConfigMaps (generated, hashed), the endpoint picker's configuration and the
    # Grafana dashboard.
    assert len(configmaps) == len(plan.env_files) + (plan.gateway is not None) \
        + (plan.dashboard is not None)
    # Every envFrom reference was rewritten to the hashed ConfigMap name (LWS included).
    workload_docs = [d for d in docs
                     if d["kind"] in ("LeaderWorkerSet", "StatefulSet", "DisaggregatedSet")]
    assert workload_docs
    for d in workload_docs:
        lwts = ([r["spec"]["leaderWorkerTemplate"] for r in d["spec"]["roles"]]
                if d["kind"] == "DisaggregatedSet" else
                [d["spec"]["leaderWorkerTemplate"]] if d["kind"] == "LeaderWorkerSet" else [])
        templates = ([t for lwt in lwts for t in lws_templates(lwt).values()]
                     or [d["spec"]["template"]])
        for t in templates:
            for c in t["spec"]["containers"]:
                for ef in c.get("envFrom", []):
                    assert ef["configMapRef"]["name"] in configmaps
    assert all(d["metadata"]["namespace"] == plan.namespace for d in docs)


@pytest.mark.skipif(shutil.which("kubectl") is None,
                    reason="kubectl (with built-in kustomize) is not installed on this machine")
@pytest.mark.parametrize("example", ["s1-16xh20-pd.yaml", "s3-v4pro-pd-dp16.yaml"])
def test_namespace_override_keeps_the_router_working(example, tmp_path):
    """A kustomization with ``namespace: llm-prod`` over the output moves every object, and the
    router still reaches its engines: it finds them by label in its own namespace."""
    _, plan, files = render_spec(EXAMPLES / example)
    write_tree(tmp_path / "base", files)
    over = tmp_path / "prod"
    over.mkdir()
    (over / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "namespace: llm-prod\nresources:\n- ../base\n")
    built = subprocess.run(["kubectl", "kustomize", str(over)], capture_output=True, text=True,
                           check=False)
    assert built.returncode == 0, built.stderr
    docs = [d for d in yaml.safe_load_all(built.stdout) if d]
    assert {d["metadata"]["namespace"] for d in docs} == {"llm-prod"}
    router = next(d for d in docs if d["kind"] == "Deployment")
    args = " ".join(router["spec"]["template"]["spec"]["containers"][0]["args"])
    # The router discovers its engines in its own namespace ($(POD_NAMESPACE), downward API);
    # its RoleBinding's subject moved with it.
    assert "--service-discovery-namespace $(POD_NAMESPACE)" in args
    assert "http://" not in args and f".{plan.namespace}" not in args
    binding = next(d for d in docs if d["kind"] == "RoleBinding")
    assert [s["namespace"] for s in binding["subjects"]] == ["llm-prod"]


def test_scaledobject_schema_is_strict_and_can_fail():
    """The KEDA CRD check rejects a misspelled field and a wrong type."""
    _, _, files = render_spec(EXAMPLES / "s1-16xh20-pd.yaml",
                              [ROOT / "tests" / "golden" / "s1-autoscaling" / "autoscaling.yaml"])
    so = yaml.safe_load(files["decode-scaledobject.yaml"])
    validate_schema(so, _crd_schema("ScaledObject"))
    bad = copy.deepcopy(so)
    bad["spec"]["maxReplicas"] = 3          # KEDA spells it maxReplicaCount
    with pytest.raises(jsonschema.ValidationError):
        validate_schema(bad, _crd_schema("ScaledObject"))
    bad = copy.deepcopy(so)
    bad["spec"]["triggers"][0]["metadata"]["threshold"] = 8   # metadata values are strings
    with pytest.raises(jsonschema.ValidationError):
        validate_schema(bad, _crd_schema("ScaledObject"))
