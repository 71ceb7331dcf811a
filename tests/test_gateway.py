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
from generator.engines.router_releases import PickerRelease, known
from generator.preflight import Api, preflight
from tests.helpers import EXAMPLES, ROOT, lws_templates, objects, render_spec, validate_schema
from tests.test_manifests_valid import _crd_schema

IGW = ROOT / "overlays" / "inference-gateway.yaml"
S1 = EXAMPLES / "s1-16xh20-pd.yaml"
S3 = EXAMPLES / "s3-v4pro-pd-dp16.yaml"
UNIFIED = EXAMPLES / "s1-32xh20-unified.yaml"
KUBECTL = "/usr/bin/kubectl"
EPP_SCHEMA = json.loads((ROOT / "tests" / "gateway" / "endpointpickerconfig.schema.json")
                        .read_text())

#: Every llm-d-router release moegen renders for (router-releases.json, tools/extract_routers.py).
RELEASES = known("llm-d-router")
PROFILE_HANDLERS = {"single-profile-handler", "disagg-profile-handler", "pd-profile-handler"}
PICKERS = {"max-score-picker", "random-picker", "weighted-random-picker"}


def _unknown_keys(params, schema, path="") -> list[str]:
    """Parameter keys (nested) the plugin's parameter structs do not declare."""
    out = []
    for key, value in (params or {}).items():
        if key not in schema:
            out.append(f"{path}{key}")
        elif isinstance(value, dict) and isinstance(schema[key], dict):
            out += _unknown_keys(value, schema[key], f"{path}{key}.")
    return out


def _loader_errors(cfg: dict, release: PickerRelease, experimental: bool = False) -> list[str]:
    """What the release's endpoint picker refuses at start, from its own registry and parameter
    structs (router-releases.json) and its loader rules (gateway-api-inference-extension
    pkg/epp/config/loader/configloader.go at 0482b0f, llm-d-router pkg/epp/config/loader at
    v0.9.0+: a missing type, duplicate plugin names (a name defaults to the type), unregistered
    types, exactly one profile handler, single-profile-handler with one profile; validation.go:
    profile names present and unique, every pluginRef defined, feature gates registered), the
    apiVersion the loader's scheme knows, alpha plugins without --allow-experimental-plugins
    (pkg/epp/framework/interface/plugin/registry.go ValidatePluginStability, v0.10.0), and what
    the plugins' factories look up by name (the deciders; one picker per profile). Parameter
    keys a plugin does not declare are errors in every release: fatal where the release decodes
    strictly (llm-d-router#1134), silently ignored (so a wrong configuration) before."""
    errors = []
    if cfg["apiVersion"] not in release.facts["config"]["accepted"]:
        errors.append(f"apiVersion {cfg['apiVersion']} not in the scheme")
    names = [p.get("name") or p["type"] for p in cfg["plugins"]]
    if len(set(names)) != len(names):
        errors.append(f"duplicate plugin names {names}")
    for p in cfg["plugins"]:
        plugin = release.plugin(p["type"])
        if plugin is None:
            errors.append(f"type {p['type']} not registered")
            continue
        if plugin.stability == "alpha" and not experimental:
            errors.append(f"type {p['type']} is alpha (needs --allow-experimental-plugins)")
        if plugin.parameters is None and p.get("parameters"):
            errors.append(f"type {p['type']}: parameters unreadable")
        errors += [f"type {p['type']}: unknown parameter {k}"
                   for k in _unknown_keys(p.get("parameters"), plugin.parameters or {})]
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
        params = h.get("parameters") or {}
        deciders = list((params.get("deciders") or {}).values())
        if params.get("deciderPluginName"):
            deciders.append(params["deciderPluginName"])
        errors += [f"decider {d} not defined" for d in deciders if d not in names]
        if h["type"] in ("disagg-profile-handler", "pd-profile-handler") \
                and set(profiles) != {"prefill", "decode"}:
            errors.append(f"{h['type']} needs profiles prefill and decode: {profiles}")
    errors += [f"gate {g} unknown" for g in cfg.get("featureGates", [])
               if g not in release.feature_gates]
    return errors


def _schema_for(release: PickerRelease) -> dict:
    """The EndpointPickerConfig schema with the release's accepted apiVersions."""
    schema = copy.deepcopy(EPP_SCHEMA)
    schema["properties"]["apiVersion"] = {"enum": release.facts["config"]["accepted"]}
    return schema


def _config(files: dict[str, str]) -> dict:
    cm = yaml.safe_load(files["epp-configmap.yaml"])
    return yaml.safe_load(cm["data"][gw.EPP_CONFIG_FILE])


@pytest.mark.parametrize("spec", [S1, S3, UNIFIED], ids=["s1", "s3", "unified"])
def test_epp_config_passes_the_upstream_types_and_loader(spec):
    _, plan, files = render_spec(spec, [IGW])
    cfg = _config(files)
    newest = PickerRelease(RELEASES[-1])
    validate_schema(cfg, _schema_for(newest))
    assert _loader_errors(cfg, newest) == []
    assert cfg["apiVersion"] == "llm-d.ai/v1alpha1"    # v0.10.0: llm-d-router's own group
    profiles = [p["name"] for p in cfg["schedulingProfiles"]]
    assert profiles == (["default"] if spec == UNIFIED else ["prefill", "decode"])
    # The same text is what the EPP reads and what rolls it on a change.
    dep = yaml.safe_load(files["epp-deployment.yaml"])
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations[gw.CONFIG_HASH_ANNOTATION] == gw.config_hash(plan.gateway.config_text)


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("pd", [True, False], ids=["pd", "unified"])
def test_epp_config_starts_at_every_release(version, pd):
    """The configuration moegen renders for each supported release passes that release's own
    registry, parameter structs and loader rules (what v0.6.0 refused at start when the
    v0.7.0 plugin names were rendered for it)."""
    release = PickerRelease(version)
    cfg = gw.epp_config(release, pd)
    validate_schema(cfg, _schema_for(release))
    assert _loader_errors(cfg, release) == []
    for p in cfg["plugins"]:     # nothing deprecated where a current type exists
        assert release.plugin(p["type"]).deprecated is None or \
            not any(release.current(t) for t in gw.LABEL_FILTERS + gw.PD_HANDLERS
                    if t.split("-")[0] == p["type"].split("-")[0]), (version, p["type"])


def test_disaggregatedset_rollout_screener_pins_one_revision():
    """With a DisaggregatedSet behind the picker, the screener (llm-d-router v0.10.0, alpha) is
    configured over the set's pods and both roles, and the picker gets the flag that admits
    alpha plugins; v0.9.0 does not register it, and nothing is added there."""
    release = PickerRelease("0.10.0")
    screener = gw.rollout_screener(release, "dsv3-pd", ["prefill", "decode"])
    cfg = gw.epp_config(release, True, screener)
    assert cfg["plugins"][0] == {
        "type": "disaggregatedset-rollout-screener", "name": "rollout-screener",
        "parameters": {"scope": {"labelSelector": "disaggregatedset.x-k8s.io/name=dsv3-pd"},
                       "revisionGating": {"mode": "max-role",
                                          "requireRoles": {"values": ["prefill", "decode"]}}}}
    assert all("rollout-screener" not in [r["pluginRef"] for r in p["plugins"]]
               for p in cfg["schedulingProfiles"])           # not in a profile
    assert _loader_errors(cfg, release) == [
        "type disaggregatedset-rollout-screener is alpha (needs --allow-experimental-plugins)"]
    assert _loader_errors(cfg, release, experimental=True) == []
    assert gw.experimental_args(release, cfg) == ["--allow-experimental-plugins"]
    assert gw.experimental_args(release, gw.epp_config(release, True)) == []
    assert gw.rollout_screener(PickerRelease("0.9.0"), "dsv3-pd", ["prefill", "decode"]) is None


def test_the_v060_mismatch_is_caught():
    """The configuration moegen rendered at 4f0a1dd for the pinned v0.6.0 image (v0.7.0's
    plugin names, issue 19) fails v0.6.0's registry: pkg/plugins/register.go at v0.6.0 has
    neither disagg-headers-handler nor disagg-profile-handler."""
    cfg = gw.epp_config(PickerRelease("0.7.0"), pd=True)
    cfg["apiVersion"] = "inference.networking.x-k8s.io/v1alpha1"
    errors = _loader_errors(cfg, PickerRelease("0.6.0"))
    assert "type disagg-headers-handler not registered" in errors
    assert "type disagg-profile-handler not registered" in errors
    # v0.8.0 with v0.7.0's gate: GIE v1.5.0 no longer registers prepareDataPlugins.
    assert "gate prepareDataPlugins unknown" in _loader_errors(cfg, PickerRelease("0.8.0"))
    # A strict release refuses a parameter its struct lacks (llm-d-router#1134).
    bad = gw.epp_config(PickerRelease("0.10.0"), pd=True)
    bad["plugins"][-1]["parameters"]["decider"] = "x"
    assert "type disagg-profile-handler: unknown parameter decider" in \
        _loader_errors(bad, PickerRelease("0.10.0"))


@pytest.mark.parametrize("version", RELEASES)
def test_epp_and_sidecar_flags_exist_at_every_release(version):
    """Every flag the picker and the sidecar get is one the release parses, none removed; the
    sidecar's KV protocol is one it supports."""
    release = PickerRelease(version)
    for engine in ("vllm", "sglang"):
        for arg in gw.epp_args(release, engine, "pool", monitored=True) + [gw.EPP_HA_FLAG]:
            if arg.startswith("--"):
                assert release.epp_flag(arg[2:].split("=")[0]) is not None, (version, arg)
    for connector in ("nixlv2", "sglang"):
        assert connector in release.kv_connectors
        for arg in gw.sidecar_args(release, 8000, 8200, connector, ranks=8):
            flag = release.sidecar_flag(arg[2:].split("=")[0])
            assert flag is not None and "deprecated" not in flag, (version, arg)


def test_sidecar_flags_follow_the_renames():
    """--connector -> --kv-connector (v0.7.0; removed in v0.10.0: llm-d-router#2054),
    --vllm-port -> --model-server-port (v0.10.0: #2142)."""
    assert gw.sidecar_args(PickerRelease("0.6.0"), 8000, 8200, "nixlv2") == [
        "--port=8000", "--vllm-port=8200", "--connector=nixlv2", "--secure-proxy=false"]
    assert gw.sidecar_args(PickerRelease("0.9.0"), 8000, 8200, "nixlv2")[1:3] == [
        "--vllm-port=8200", "--kv-connector=nixlv2"]
    assert gw.sidecar_args(PickerRelease("0.10.0"), 8000, 8200, "nixlv2", ranks=8) == [
        "--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2",
        "--secure-proxy=false", "--data-parallel-size=8"]
    assert PickerRelease("0.10.0").sidecar_flag("connector") is None
    assert "model-server-port" in PickerRelease("0.10.0").sidecar_flag("vllm-port")["deprecated"]


def test_epp_config_checks_can_fail():
    """The schema rejects an unknown field, the loader rules a dangling pluginRef and a second
    profile handler (checks that cannot fail are none)."""
    release = PickerRelease(RELEASES[-1])
    cfg = gw.epp_config(release, pd=True)
    bad = copy.deepcopy(cfg)
    bad["schedulingProfile"] = []
    with pytest.raises(jsonschema.ValidationError):
        validate_schema(bad, _schema_for(release))
    bad = copy.deepcopy(cfg)
    bad["schedulingProfiles"][0]["plugins"].append({"pluginRef": "no-such-plugin"})
    bad["plugins"].append({"type": "single-profile-handler"})
    errors = _loader_errors(bad, release)
    assert any("undefined plugin no-such-plugin" in e for e in errors)
    assert "2 profile handlers" in errors
    bad = copy.deepcopy(cfg)
    bad["plugins"].append({"type": "topology-affinity-filter"})   # alpha at v0.10.0
    assert any("alpha" in e for e in _loader_errors(bad, release))


def test_pd_profiles_select_pods_by_moegen_mode_label():
    newest = gw.epp_config(PickerRelease("0.10.0"), pd=True)
    filters = {p["name"]: (p["type"], p["parameters"]) for p in newest["plugins"]
               if p.get("name", "").endswith("-pods")}
    assert filters == {
        "prefill-pods": ("label-selector-filter", {"matchLabels": {"moegen.dev/mode": "prefill"}}),
        "decode-pods": ("label-selector-filter", {"matchLabels": {"moegen.dev/mode": "decode"}})}
    old = gw.epp_config(PickerRelease("0.8.0"), pd=True)   # before label-selector-filter
    assert [p["parameters"] for p in old["plugins"] if p["type"] == "by-label"] == [
        {"label": "moegen.dev/mode", "validValues": ["prefill"]},
        {"label": "moegen.dev/mode", "validValues": ["decode"]}]
    for cfg in (newest, old):
        for prof in cfg["schedulingProfiles"]:
            assert prof["plugins"][0] == {"pluginRef": f"{prof['name']}-pods"}
            assert [p["pluginRef"] for p in prof["plugins"] if "weight" in p] == \
                ["prefix-cache-scorer", "queue-scorer", "kv-cache-utilization-scorer"]


def test_pd_handlers_per_release():
    """v0.6.0: pd-profile-handler + prefill-header-handler and the prepareDataPlugins gate;
    v0.7.0: disagg-* with the gate; v0.8.0: no gate (GIE v1.5.0) and the prefix producer;
    v0.9.0+: no headers handler (disagg-profile-handler sets the header)."""
    def shape(version):
        cfg = gw.epp_config(PickerRelease(version), pd=True)
        return ([p["type"] for p in cfg["plugins"] if "handler" in p["type"]
                 or p["type"].endswith("producer")], cfg.get("featureGates"))
    assert shape("0.6.0") == (["prefill-header-handler", "pd-profile-handler"],
                              ["prepareDataPlugins"])
    assert shape("0.7.0") == (["disagg-headers-handler", "disagg-profile-handler"],
                              ["prepareDataPlugins"])
    assert shape("0.8.0") == (["approx-prefix-cache-producer", "disagg-headers-handler",
                               "disagg-profile-handler"], None)
    assert shape("0.10.0") == (["approx-prefix-cache-producer", "disagg-profile-handler"], None)
    v6 = gw.epp_config(PickerRelease("0.6.0"), pd=True)
    assert v6["plugins"][-1]["parameters"] == {"deciderPluginName": "always-disagg-pd-decider"}


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
    # llm-d-router 0.10.0 refuses the metric flags at start (pkg/epp/server/options.go:398,
    # "deprecated and cannot be used"); vLLM's names are its extractor's defaults.
    assert not [a for a in epp["args"] if a.endswith("-metric")]
    assert "--tracing=false" in epp["args"]
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
    assert sidecar["args"] == ["--port=8000", "--model-server-port=8200",   # v0.10.0
                               "--kv-connector=nixlv2", "--secure-proxy=false"]
    assert sidecar["image"] == "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0"
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
    assert "--kv-connector=sglang" in sidecar["args"]
    assert sidecar["env"] == [{"name": "SGLANG_BOOTSTRAP_PORT", "value": "8998"}]
    for name in ("prefill-lws.yaml", "decode-lws.yaml"):
        assert "--enable-metrics" in files[name]   # the picker scrapes queue and KV usage
    args = _obj(files, "epp-deployment.yaml")["spec"]["template"]["spec"]["containers"][0]["args"]
    # 0.10.0 refuses the metric flags; its extractor reads the engine from llm-d.ai/engine-type
    # (pkg/epp/framework/plugins/datalayer/extractor/metrics/mapping_registry.go:29), vLLM's
    # names for a pod without it: every pod the pool selects says sglang.
    assert not [a for a in args if a.endswith("-metric")]
    for name in ("prefill-lws.yaml", "decode-lws.yaml"):
        for tmpl in lws_templates(_obj(files, name)).values():
            assert tmpl["metadata"]["labels"]["llm-d.ai/engine-type"] == "sglang"


@pytest.mark.parametrize("version,flags,label", [
    # GIE fd30cb97714a: legacy collector, the flags name SGLang's series.
    ("0.6.0", True, None),
    # GIE v1.5.0: the data layer by default (runner.go:326), label key of mapping_registry.go:29.
    ("0.8.0", False, "inference.networking.k8s.io/engine-type"),
    ("0.9.0", False, "llm-d.ai/engine-type"),
])
def test_sglang_metric_names_reach_the_picker_at_each_release(version, flags, label, tmp_path):
    over = tmp_path / "v.yaml"
    over.write_text(f'spec:\n  router: {{version: "{version}"}}\n')
    _, _, files = render_spec(S3, [IGW, over])
    args = _obj(files, "epp-deployment.yaml")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert ("--total-queued-requests-metric" in args) is flags
    if flags:
        assert args[args.index("--total-queued-requests-metric") + 1] == "sglang:num_queue_reqs"
        assert args[args.index("--kv-cache-usage-percentage-metric") + 1] == "sglang:token_usage"
        assert args[args.index("--lora-info-metric") + 1] == ""
        # the running-requests series too (its default, vllm:num_requests_running, never
        # matches SGLang: GIE fd30cb97714a pkg/epp/backend/metrics/metrics.go:100)
        assert args[args.index("--total-running-requests-metric") + 1] == "sglang:num_running_reqs"
    labels = lws_templates(_obj(files, "decode-lws.yaml"))["leader"]["metadata"]["labels"]
    assert {k for k in labels if k.endswith("/engine-type")} == ({label} if label else set())
    # The picker watches InferenceObjectives in every group it may prefer (llm-d.ai from 0.9.0:
    # pkg/epp/server/controller_config.go supportedInferenceAPIGVs).
    role = _obj(files, "epp-role.yaml")
    groups = [g for r in role["rules"] if "inferenceobjectives" in r["resources"]
              for g in r["apiGroups"]]
    assert groups == (["llm-d.ai", "inference.networking.x-k8s.io"] if version == "0.9.0"
                      else ["inference.networking.x-k8s.io"])


def test_sglang_behind_llm_d_router_0_7_is_refused(tmp_path):
    """0.7.0 (GIE v1.4.0) refuses the metric flags and its legacy collector reads vLLM's
    names: RTR014, not a picker that scores every SGLang pod as idle."""
    from generator import pipeline
    over = tmp_path / "v.yaml"
    over.write_text('spec:\n  router: {version: "0.7.0"}\n')
    checked = pipeline.check(S3, [IGW, over])
    (f,) = [f for f in checked.findings if f.code == "RTR014"]
    assert "gateway-api-inference-extension@v1.4.0:pkg/epp/server/options.go:249" in f.message
    assert (f.location.file, f.location.line) == (str(over), 2)


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
        validate_schema(objs[kind], _crd_schema(kind))
    bad = copy.deepcopy(objs["InferencePool"])
    bound = PickerRelease(RELEASES[-1]).pool_ports["maxItems"]   # 8, the CRD the picker pins
    bad["spec"]["targetPorts"] = [{"number": 8000 + i} for i in range(bound + 1)]
    with pytest.raises(jsonschema.ValidationError):   # maxItems 8
        validate_schema(bad, _crd_schema("InferencePool"))
    bad = copy.deepcopy(objs["HTTPRoute"])
    bad["spec"]["rules"][0]["backendRef"] = {}
    with pytest.raises(jsonschema.ValidationError):
        validate_schema(bad, _crd_schema("HTTPRoute"))


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
        return {"gitVersion": "v1.32.0"} if path == "/version" else None   # an API server

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


def test_images_follow_the_release():
    """Each release's images are its Makefile's repositories at its tag: renamed in v0.9.0
    (llm-d docs/reference/images-and-versions.md: llm-d-router-endpoint-picker,
    llm-d-router-disagg-sidecar); router.version picks the release."""
    assert PickerRelease("0.6.0").image("epp") == "ghcr.io/llm-d/llm-d-inference-scheduler:v0.6.0"
    assert PickerRelease("0.8.0").image("sidecar") == "ghcr.io/llm-d/llm-d-routing-sidecar:v0.8.0"
    assert PickerRelease("0.9.0").image("epp") == \
        "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"
    pinned = ROOT / "tests" / "golden" / "s1-inference-gateway" / "case.yaml"
    assert pinned.exists()
    _, plan, files = render_spec(S1, [IGW, _overlay_file("router: {version: v0.7.0}")])
    assert plan.gateway.image == "ghcr.io/llm-d/llm-d-inference-scheduler:v0.7.0"
    assert "llm-d-routing-sidecar:v0.7.0" in files["decode-lws.yaml"]
    assert "apiVersion: inference.networking.x-k8s.io/v1alpha1" in files["epp-configmap.yaml"]


def _overlay_file(text: str):
    import tempfile
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write("spec:\n  " + text + "\n")
    f.close()
    from pathlib import Path
    return Path(f.name)


def test_unknown_router_release_is_refused_with_the_list():
    checked = pipeline.check(S1, [IGW, _overlay_file("router: {version: 0.5.0}")])
    (hit,) = [f for f in checked.findings if f.code == "RTR010"]
    assert "0.6.0, 0.7.0, 0.8.0, 0.9.0, 0.10.0" in hit.message
    assert hit.path == "$.spec.router.version"
    smg = pipeline.check(S3, [_overlay_file("router: {version: 1.0.0}")])
    assert [f.code for f in smg.findings if f.severity.value == "error"] == ["RTR010"]
    assert "1.9.0, 1.11.0, 1.12.0, 1.13.0" in smg.findings[0].message or any(
        "1.9.0, 1.11.0, 1.12.0, 1.13.0" in f.message for f in smg.findings)


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


@pytest.mark.parametrize("component", ["vllm-router", "smg"])
def test_router_flags_exist_at_every_release(component):
    """Every option router_launch renders (static URLs and discovery) is one of the release's
    router_args.py options, and its image tag is the release."""
    from generator.engines.routers import Discovery, router_launch
    engine = "vllm" if component == "vllm-router" else "sglang"
    for version in known(component):
        for discovery in (None, Discovery({"a": "b"}, {"a": "c"}, 8000)):
            launch = router_launch(engine, port=8080, policy="round_robin", connector="nixl",
                                   prefill_urls=["http://p:8000"], decode_urls=["http://d:8000"],
                                   startup_s=600, discovery=discovery, version=version,
                                   drain_s=88)
            options = [a for a in launch.args if a.startswith("--")]
            assert options and all(launch.release.has(o) for o in options), (version, options)
            # smg images carry the bare version (release-docker.yml), vllm-router's the tag.
            prefix = "v" if component == "vllm-router" else ""
            assert launch.image.endswith(f":{prefix}{version}")


def test_routers_stay_up():
    """Two routers behind a PodDisruptionBudget; readiness is /readiness (healthy engines
    registered); the drain is the engines' (generator/durations.py: 1.5 x the mean request at
    the sized load), which outlives S1's predicted request: 1.5 x (20.666 s TTFT + 1200 x
    19.4 ms TPOT) = 65.92 -> 66 s, grace = 10 s preStop + 66 + 5 = 81 s (the 30 s default cut
    it). S3 (smg): 1.5 x (2.397 s + 1500 x 33.6 ms) = 79.20 -> 80 s, passed as
    --shutdown-grace-period-secs, and smg's worker health check waits 25 s > SGLang's
    generating /health (20 s; smg's default 5 s)."""
    _, plan, files = render_spec(S1)
    dep = yaml.safe_load(files["router-deployment.yaml"])["spec"]
    assert dep["replicas"] == 2
    pod = dep["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 81
    (router,) = pod["containers"]
    assert router["lifecycle"] == {"preStop": {"sleep": {"seconds": 10}}}
    assert router["readinessProbe"]["httpGet"] == {"path": "/readiness", "port": "http"}
    assert "tcpSocket" in router["livenessProbe"]
    pdb = yaml.safe_load(files["router-pdb.yaml"])
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == dep["selector"]["matchLabels"]
    _, _, files = render_spec(S3)
    args = yaml.safe_load(files["router-deployment.yaml"])["spec"]["template"]["spec"][
        "containers"][0]["args"]
    assert args[args.index("--shutdown-grace-period-secs") + 1] == "80"
    assert args[args.index("--health-check-timeout-secs") + 1] == "25"
    one = render_spec(S1, [_overlay_file("router: {replicas: 1}")])[2]
    assert "router-pdb.yaml" not in one


def test_epp_replicas_elect_a_leader():
    """Two endpoint pickers run with leader election (GIE chart epplib at v1.5.0): the flag,
    lease RBAC, and the liveness/readiness gRPC health services."""
    _, _, files = render_spec(S1, [IGW, _overlay_file("router: {replicas: 2}")])
    dep = yaml.safe_load(files["epp-deployment.yaml"])["spec"]
    (epp,) = dep["template"]["spec"]["containers"]
    assert dep["replicas"] == 2 and gw.EPP_HA_FLAG in epp["args"]
    assert epp["readinessProbe"]["grpc"]["service"] == "readiness"
    assert epp["livenessProbe"]["grpc"]["service"] == "liveness"
    role = yaml.safe_load(files["epp-role.yaml"])
    assert any("leases" in r["resources"] for r in role["rules"])
    single = yaml.safe_load(render_spec(S1, [IGW])[2]["epp-deployment.yaml"])["spec"]
    assert gw.EPP_HA_FLAG not in single["template"]["spec"]["containers"][0]["args"]


def test_unified_dp_serves_one_endpoint_per_rank():
    """s1-32xh20-unified: DP32 over 4 pods, 8 ranks each. Behind the gateway every pod runs
    vLLM's DP supervisor (0.33.0 has --data-parallel-multi-port-external-lb, first in 0.22.0):
    ranks 8p..8p+7 on ports 8000-8007, probed on the supervisor's 9256; the pool targets the 8
    ports, so the picker scores each engine; rankEndpoints: false keeps one port."""
    checked, plan, files = render_spec(UNIFIED, [IGW])
    assert [f.code for f in checked.findings] == []
    pool = yaml.safe_load(files["inferencepool.yaml"])["spec"]
    assert pool["targetPorts"] == [{"number": 8000 + i} for i in range(8)]
    lwt = yaml.safe_load(files["serve-lws.yaml"])["spec"]["leaderWorkerTemplate"]
    for which, start in (("leaderTemplate", 0), ("workerTemplate", 8)):
        spec = lwt[which]
        assert spec["metadata"]["labels"]["moegen.dev/serves-api"] == "true"
        (engine,) = spec["spec"]["containers"]
        ports = {p["name"]: p["containerPort"] for p in engine["ports"]}
        assert [ports["http"]] + [ports[f"http-{i}"] for i in range(1, 8)] == \
            list(range(8000, 8008))
        assert ports["dp-supervisor"] == 9256
        assert engine["readinessProbe"]["httpGet"] == {"path": "/health",
                                                        "port": "dp-supervisor"}
        script = engine["command"][2]
        assert "--data-parallel-multi-port-external-lb --data-parallel-size-local 8 " \
               f"--data-parallel-start-rank {start} " in script
        assert "--headless" not in script
    off = render_spec(UNIFIED, [IGW, _overlay_file(
        "router: {gateway: {parentRef: {name: inference-gateway, namespace: gateway-system}, "
        "rankEndpoints: false}}")])
    assert yaml.safe_load(off[2]["inferencepool.yaml"])["spec"]["targetPorts"] == [
        {"number": 8000}]
    assert [f.code for f in off[0].findings] == ["RTR012"]


def test_rank_endpoints_need_vllm_022():
    """vLLM 0.21.0 has no DP supervisor: rankEndpoints: true is refused with the reason."""
    checked = pipeline.check(UNIFIED, [IGW, _overlay_file(
        "engine: {version: '0.21.0', image: 'vllm/vllm-openai:v0.21.0'}\n"
        "  router: {gateway: {parentRef: {name: g}, rankEndpoints: true}}")])
    hits = [f for f in checked.findings if f.code == "RTR011"]
    assert len(hits) == 1 and "first in 0.22.0" in hits[0].message


def test_sidecar_fronts_every_rank_port():
    """With rank endpoints the decode sidecar listens on 8000-8007 (--data-parallel-size=8,
    pkg/sidecar/proxy/data_parallel.go: port + i -> engine port + i) on the pod's IP."""
    c = gw.sidecar_container(PickerRelease("0.10.0"), "vllm", 8000, "nixlv2", 8998, ranks=8)
    assert [p["containerPort"] for p in c["ports"]] == list(range(8000, 8008))
    assert c["args"][-1] == "--data-parallel-size=8"
    assert c["env"] == [{"name": "POD_IP", "valueFrom": {"fieldRef": {
        "fieldPath": "status.podIP"}}}]
    assert PickerRelease("0.10.0").facts["sidecar"]["dataParallelEnv"] == ["POD_IP"]
