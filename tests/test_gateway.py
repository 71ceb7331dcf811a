"""Router kind inference-gateway (docs/routing.md): the InferencePool, the endpoint picker and
its configuration, the decode routing sidecar and the HTTPRoute; checked against the CRDs, the
upstream EndpointPickerConfig types and loader rules, and a namespace override with kubectl."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess

import jsonschema
import pytest
import yaml

from generator import pipeline
from generator.emit import write_tree
from generator.engines import gateway as gw
from generator.preflight import Api, preflight
from tests.helpers import EXAMPLES, ROOT, lws_templates, objects, render_spec
from tests.test_manifests_valid import _crd_schema

IGW = ROOT / "overlays" / "inference-gateway.yaml"
S1 = EXAMPLES / "s1-16xh20-pd.yaml"
S3 = EXAMPLES / "s3-v4pro-pd-dp16.yaml"
UNIFIED = EXAMPLES / "s1-32xh20-unified.yaml"
KUBECTL = "/usr/bin/kubectl"
EPP_SCHEMA = json.loads((ROOT / "tests" / "gateway" / "endpointpickerconfig.schema.json")
                        .read_text())

#: Plugin types of the pinned endpoint picker (llm-d-inference-scheduler v0.6.0) moegen uses, and
#: where each is registered: GIE's scorers/picker/handler (pkg/epp/scheduling/framework/plugins),
#: llm-d's by-label filter (docs/architecture.md), disagg-headers-handler, deciders and
#: disagg-profile-handler (pkg/plugins/profile; llm-d/llm-d guides/pd-disaggregation/gaie-pd/
#: values_sglang.yaml at 607e693e).
KNOWN_TYPES = {"by-label", "prefix-cache-scorer", "queue-scorer", "kv-cache-utilization-scorer",
               "max-score-picker", "single-profile-handler", "disagg-headers-handler",
               "always-disagg-pd-decider", "disagg-profile-handler"}
PROFILE_HANDLERS = {"single-profile-handler", "disagg-profile-handler", "pd-profile-handler"}
PICKERS = {"max-score-picker", "random-picker"}
#: Feature gates the pinned release registers (values_sglang.yaml enables this one).
FEATURE_GATES = {"prepareDataPlugins"}


def _loader_errors(cfg: dict) -> list[str]:
    """What the EPP's loader refuses (gateway-api-inference-extension pkg/epp/config/loader/
    configloader.go at 0482b0f: a missing type, duplicate plugin names (a name defaults to the
    type), unregistered types, exactly one profile handler, single-profile-handler with one
    profile; validation.go at 4f94091: profile names present and unique, every pluginRef
    defined, feature gates registered) and what the plugins' factories look up by name (the
    deciders of disagg-profile-handler; one picker per profile)."""
    errors = []
    names = [p.get("name") or p["type"] for p in cfg["plugins"]]
    if len(set(names)) != len(names):
        errors.append(f"duplicate plugin names {names}")
    errors += [f"type {p['type']} not registered" for p in cfg["plugins"]
               if p["type"] not in KNOWN_TYPES]
    handlers = [p for p in cfg["plugins"] if p["type"] in PROFILE_HANDLERS]
    if len(handlers) != 1:
        errors.append(f"{len(handlers)} profile handlers")
    profiles = [p["name"] for p in cfg["schedulingProfiles"]]
    if len(set(profiles)) != len(profiles) or not all(profiles):
        errors.append(f"profile names {profiles}")
    if handlers and handlers[0]["type"] == "single-profile-handler" and len(profiles) > 1:
        errors.append("single-profile-handler with several profiles")
    for prof in cfg["schedulingProfiles"]:
        refs = [r["pluginRef"] for r in prof["plugins"]]
        errors += [f"{prof['name']}: undefined plugin {r}" for r in refs if r not in names]
        types = [cfg["plugins"][names.index(r)]["type"] for r in refs if r in names]
        if sum(t in PICKERS for t in types) != 1:
            errors.append(f"{prof['name']}: {types} has not exactly one picker")
    for h in handlers:
        for decider in ((h.get("parameters") or {}).get("deciders") or {}).values():
            if decider not in names:
                errors.append(f"decider {decider} not defined")
        if h["type"] == "disagg-profile-handler" and set(profiles) != {"prefill", "decode"}:
            errors.append(f"disagg-profile-handler needs profiles prefill and decode: {profiles}")
    errors += [f"gate {g} unknown" for g in cfg.get("featureGates", []) if g not in FEATURE_GATES]
    return errors


def _config(files: dict[str, str]) -> dict:
    cm = yaml.safe_load(files["epp-configmap.yaml"])
    return yaml.safe_load(cm["data"][gw.EPP_CONFIG_FILE])


@pytest.mark.parametrize("spec", [S1, S3, UNIFIED], ids=["s1", "s3", "unified"])
def test_epp_config_passes_the_upstream_types_and_loader(spec):
    _, plan, files = render_spec(spec, [IGW])
    cfg = _config(files)
    jsonschema.validate(cfg, EPP_SCHEMA)
    assert _loader_errors(cfg) == []
    assert cfg["apiVersion"] == gw.EPP_CONFIG_API_VERSION
    profiles = [p["name"] for p in cfg["schedulingProfiles"]]
    assert profiles == (["default"] if spec == UNIFIED else ["prefill", "decode"])
    # The same text is what the EPP reads and what rolls it on a change.
    dep = yaml.safe_load(files["epp-deployment.yaml"])
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations[gw.CONFIG_HASH_ANNOTATION] == gw.config_hash(plan.gateway.config_text)


def test_epp_config_checks_can_fail():
    """The schema rejects an unknown field, the loader rules a dangling pluginRef and a second
    profile handler (checks that cannot fail are none)."""
    cfg = gw.epp_config(pd=True)
    bad = copy.deepcopy(cfg)
    bad["schedulingProfile"] = []
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, EPP_SCHEMA)
    bad = copy.deepcopy(cfg)
    bad["schedulingProfiles"][0]["plugins"].append({"pluginRef": "no-such-plugin"})
    bad["plugins"].append({"type": "single-profile-handler"})
    errors = _loader_errors(bad)
    assert any("undefined plugin no-such-plugin" in e for e in errors)
    assert "2 profile handlers" in errors


def test_pd_profiles_select_pods_by_moegen_mode_label():
    cfg = gw.epp_config(pd=True)
    filters = {p["name"]: p["parameters"] for p in cfg["plugins"] if p["type"] == "by-label"}
    assert filters == {"prefill-pods": {"label": "moegen.dev/mode", "validValues": ["prefill"]},
                       "decode-pods": {"label": "moegen.dev/mode", "validValues": ["decode"]}}
    for prof in cfg["schedulingProfiles"]:
        assert prof["plugins"][0] == {"pluginRef": f"{prof['name']}-pods"}
        assert [p["pluginRef"] for p in prof["plugins"] if "weight" in p] == \
            ["prefix-cache-scorer", "queue-scorer", "kv-cache-utilization-scorer"]


def _obj(files, name):
    return yaml.safe_load(files[name])


def test_s1_vllm_route_objects():
    _, plan, files = render_spec(S1, [IGW])
    assert "router-deployment.yaml" not in files and "router-service.yaml" not in files
    pool = _obj(files, "inferencepool.yaml")
    assert pool["apiVersion"] == "inference.networking.k8s.io/v1"
    assert pool["spec"] == {
        "selector": {"matchLabels": {"app.kubernetes.io/instance": "dsv3-pd",
                                     "moegen.dev/serves-api": "true"}},
        "targetPorts": [{"number": 8000}],   # one HTTP port per API pod (vLLM internal LB)
        "endpointPickerRef": {"name": "dsv3-pd-epp", "port": {"number": 9002}}}
    route = _obj(files, "httproute.yaml")
    assert route["spec"]["parentRefs"] == [{"group": "gateway.networking.k8s.io",
                                            "kind": "Gateway", "name": "inference-gateway",
                                            "namespace": "gateway-system"}]
    assert route["spec"]["rules"][0]["backendRefs"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "dsv3-pd-pool"}]
    epp = _obj(files, "epp-deployment.yaml")["spec"]["template"]["spec"]["containers"][0]
    assert epp["args"][:6] == ["--pool-name", "dsv3-pd-pool", "--pool-namespace", "$(NAMESPACE)",
                               "--config-file", "/config/epp-config.yaml"]
    assert "vllm:num_requests_waiting" in epp["args"] and "vllm:kv_cache_usage_perc" in epp["args"]
    assert epp["env"] == [{"name": "NAMESPACE", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.namespace"}}}]
    role = _obj(files, "epp-role.yaml")
    assert {r for rule in role["rules"] for r in rule["resources"]} >= {"pods", "inferencepools"}
    assert all(rule["verbs"] == ["get", "list", "watch"] for rule in role["rules"])


def _templates(files, name):
    t = lws_templates(_obj(files, name))
    return t["leader"]["spec"], t.get("worker", t["leader"])["spec"]


def test_sidecar_fronts_the_decode_api_pod_only():
    """S1 decode: DP16 over two pods, the leader serves the API. The sidecar takes serving.port
    8000 (the pool's port) and forwards to vLLM moved to 8200; the headless worker and the
    prefill pods get none."""
    _, _, files = render_spec(S1, [IGW])
    leader, worker = _templates(files, "decode-lws.yaml")
    (sidecar,) = leader["initContainers"]
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["args"] == ["--port=8000", "--vllm-port=8200", "--connector=nixlv2",
                               "--secure-proxy=false"]
    assert sidecar["ports"] == [{"name": "sidecar", "containerPort": 8000, "protocol": "TCP"}]
    res = sidecar["resources"]
    assert res["requests"] == res["limits"]          # the pod stays Guaranteed QoS
    assert sidecar["securityContext"]["runAsNonRoot"] is True
    engine = leader["containers"][0]
    assert "--port 8200" in engine["command"][2]
    assert {"name": "http", "containerPort": 8200, "protocol": "TCP"} in engine["ports"]
    assert engine["readinessProbe"]["httpGet"]["port"] == "http"
    assert "initContainers" not in worker
    for spec in _templates(files, "prefill-lws.yaml"):
        assert "initContainers" not in spec
    prefill_leader = _templates(files, "prefill-lws.yaml")[0]
    assert "--port 8000" in prefill_leader["containers"][0]["command"][2]


def test_s3_sglang_sidecar_and_metrics():
    _, _, files = render_spec(S3, [IGW])
    (sidecar,) = _templates(files, "decode-lws.yaml")[0]["initContainers"]
    assert "--connector=sglang" in sidecar["args"]
    assert sidecar["env"] == [{"name": "SGLANG_BOOTSTRAP_PORT", "value": "8998"}]
    for name in ("prefill-lws.yaml", "decode-lws.yaml"):
        assert "--enable-metrics" in files[name]   # the picker scrapes queue and KV usage
    args = _obj(files, "epp-deployment.yaml")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--total-queued-requests-metric") + 1] == "sglang:num_queue_reqs"
    assert args[args.index("--kv-cache-usage-percentage-metric") + 1] == "sglang:token_usage"
    assert args[args.index("--lora-info-metric") + 1] == ""


def test_unified_roles_get_a_single_profile_and_no_sidecar():
    _, plan, files = render_spec(UNIFIED, [IGW])
    assert plan.router is None and plan.gateway is not None
    assert all("initContainers" not in text for name, text in files.items()
               if name.endswith("-lws.yaml"))
    handlers = [p["type"] for p in _config(files)["plugins"] if p["type"].endswith("handler")]
    assert handlers == ["single-profile-handler"]


def test_route_objects_pass_their_crds_which_can_fail():
    _, _, files = render_spec(S1, [IGW])
    objs = {o["kind"]: o for o in objects(files)}
    for kind in ("InferencePool", "HTTPRoute"):
        jsonschema.validate(objs[kind], _crd_schema(kind))
    bad = copy.deepcopy(objs["InferencePool"])
    bad["spec"]["targetPorts"] = [{"number": 8000 + i} for i in range(gw.MAX_TARGET_PORTS + 1)]
    with pytest.raises(jsonschema.ValidationError):   # maxItems 8
        jsonschema.validate(bad, _crd_schema("InferencePool"))
    bad = copy.deepcopy(objs["HTTPRoute"])
    bad["spec"]["rules"][0]["backendRef"] = {}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, _crd_schema("HTTPRoute"))


def _kustomize(tmp_path, files, overlay: str) -> list[dict]:
    write_tree(tmp_path / "base", files)
    over = tmp_path / "over"
    over.mkdir()
    (over / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + overlay
        + "resources:\n- ../base\n")
    built = subprocess.run([KUBECTL, "kustomize", str(over)], capture_output=True, text=True,
                           check=False)
    assert built.returncode == 0, built.stderr
    return [d for d in yaml.safe_load_all(built.stdout) if d]


@pytest.mark.skipif(shutil.which(KUBECTL) is None, reason="kubectl is not installed")
@pytest.mark.parametrize("spec", [S1, S3], ids=["s1", "s3"])
def test_namespace_override_keeps_the_gateway_working(spec, tmp_path):
    """``namespace: llm-prod`` over the output moves every object; nothing names the old
    namespace, the route still attaches to the Gateway in its own namespace, the pool and the
    route reference their objects without a namespace, the picker binds its ServiceAccount in
    the new namespace and reads it from the downward API."""
    _, plan, files = render_spec(spec, [IGW])
    docs = _kustomize(tmp_path, files, "namespace: llm-prod\n")
    assert {d["metadata"]["namespace"] for d in docs} == {"llm-prod"}
    text = yaml.safe_dump_all(docs)
    assert f"namespace: {plan.namespace}\n" not in text and f".{plan.namespace}." not in text
    by_kind = {d["kind"]: d for d in docs if d["kind"] in ("InferencePool", "HTTPRoute",
                                                           "RoleBinding")}
    route = by_kind["HTTPRoute"]["spec"]
    assert route["parentRefs"][0]["namespace"] == "gateway-system"
    assert "namespace" not in route["rules"][0]["backendRefs"][0]
    assert "namespace" not in by_kind["InferencePool"]["spec"]["endpointPickerRef"]
    assert [s["namespace"] for s in by_kind["RoleBinding"]["subjects"]] == ["llm-prod"]
    epp = next(d for d in docs if d["kind"] == "Deployment")
    env = epp["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[0]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"


@pytest.mark.skipif(shutil.which(KUBECTL) is None, reason="kubectl is not installed")
def test_name_prefix_keeps_the_references(tmp_path):
    """kustomizeconfig.yaml teaches kustomize the pool -> Service and route -> pool names."""
    _, _, files = render_spec(S1, [IGW])
    docs = _kustomize(tmp_path, files, "namePrefix: blue-\n")
    pool = next(d for d in docs if d["kind"] == "InferencePool")
    route = next(d for d in docs if d["kind"] == "HTTPRoute")
    assert pool["metadata"]["name"] == "blue-dsv3-pd-pool"
    assert pool["spec"]["endpointPickerRef"]["name"] == "blue-dsv3-pd-epp"
    assert route["spec"]["rules"][0]["backendRefs"][0]["name"] == "blue-dsv3-pd-pool"
    epp = next(d for d in docs if d["kind"] == "Deployment")
    assert epp["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] == "blue-dsv3-pd-epp"


def test_preflight_wants_the_gateway_crds():
    checked = pipeline.check(S1, [IGW])
    crds = {"leaderworkersets.leaderworkerset.x-k8s.io"}

    def get(path, query=None):
        if "customresourcedefinitions" in path:
            return {"metadata": {}} if path.rsplit("/", 1)[-1] in crds else None
        return None

    found = [f.message for f in preflight(checked, Api(get=get)) if f.code == "PRE001"]
    assert any("inferencepools.inference.networking.k8s.io" in m for m in found)
    assert any("httproutes.gateway.networking.k8s.io" in m for m in found)
    plain = [f.message for f in preflight(pipeline.check(S1), Api(get=get)) if f.code == "PRE001"]
    assert plain == []


def test_review_page_draws_the_route_and_names_the_scorers(tmp_path, capsys):
    from generator.cli import run
    assert run(["report", str(S1), "-f", str(IGW), "--format", "json"]) == 0
    topo = json.loads(capsys.readouterr().out)["topology"]
    assert topo["router"] is None
    first = [b["lines"][0]["text"] for b in topo["gateway"]]
    assert first == ["Gateway gateway-system/inference-gateway", "InferencePool dsv3-pd-pool",
                     "endpoint picker dsv3-pd-epp"]
    picker = " ".join(t["text"] for t in topo["gateway"][2]["lines"])
    for scorer in ("prefix-cache-scorer x2", "queue-scorer x1", "kv-cache-utilization-scorer x1"):
        assert scorer in picker
    labels = [f["label"] for f in topo["flows"]]
    assert labels == ["HTTPRoute", "ext-proc: pick endpoints", "1. decode pod (routing sidecar)",
                      "2. prefill leg (nixlv2)", "3. KV (nixl)"]
    page = tmp_path / "r.html"
    assert run(["report", str(S1), "-f", str(IGW), "-o", str(page)]) == 0
    assert 'class="gateway"' in page.read_text() and "kv-cache-utilization-scorer" in \
        page.read_text()


def test_pins_are_tagged_images_with_their_sources():
    """Each pinned image names a release tag (never latest), and every pin says where it was
    read (the repository and a commit or tag)."""
    import re
    for key, (value, source) in gw.PINS.items():
        assert value and source, key
        assert re.search(r"(at [0-9a-f]{7,}|v\d+\.\d+\.\d+)", source), (key, source)
    for image in (gw.EPP_IMAGE, gw.SIDECAR_IMAGE):
        assert re.fullmatch(r"ghcr\.io/llm-d/[a-z-]+:v\d+\.\d+\.\d+", image), image


def test_monitored_endpoint_picker_is_scraped_without_cluster_rbac():
    """The EPP authenticates metric scrapes by TokenReview unless told not to; moegen's RBAC is
    namespaced, so a monitored EPP serves them openly and a ServiceMonitor scrapes its Service."""
    gw_overlay = ROOT / "overlays" / "inference-gateway.yaml"
    mon = ROOT / "tests" / "golden" / "s3-monitoring" / "monitoring.yaml"
    _, _, plain = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml", [gw_overlay])
    _, _, watched = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml", [gw_overlay, mon])
    assert "--metrics-endpoint-auth=false" not in plain["epp-deployment.yaml"]
    assert "--metrics-endpoint-auth=false" in watched["epp-deployment.yaml"]
    sm = yaml.safe_load(watched["epp-servicemonitor.yaml"])
    svc = yaml.safe_load(watched["epp-service.yaml"])
    assert sm["spec"]["endpoints"][0]["port"] in [p["name"] for p in svc["spec"]["ports"]]
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()


def test_decode_client_service_goes_through_the_sidecar():
    """Behind the gateway the decode engine listens on 8200 behind the routing sidecar, which
    alone runs the P/D protocol: the decode client Service targets the sidecar's port."""
    _, _, files = render_spec(S1, [IGW])
    svc = yaml.safe_load(files["decode-service.yaml"])
    lws = yaml.safe_load(files["decode-lws.yaml"])
    leader = lws_templates(lws)["leader"]["spec"]
    sidecar = next(c for c in leader["initContainers"] if c["name"] == "routing-sidecar")
    (port,) = svc["spec"]["ports"]
    assert port["targetPort"] == sidecar["ports"][0]["name"] == "sidecar"
    assert sidecar["ports"][0]["containerPort"] == port["port"] == 8000
    epp = yaml.safe_load(files["epp-deployment.yaml"])["spec"]["template"]["spec"]
    args = epp["containers"][0]["args"]
    assert args[args.index("--pool-namespace") + 1] == "$(NAMESPACE)"
