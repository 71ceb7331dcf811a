"""The Gateway API Inference Extension route (``spec.router.kind: inference-gateway``): the
objects' contents at the selected llm-d-router release, computed here so that templates only
substitute.

Per-release facts (images, plugin registry, config group, feature gates, flags) come from
``router_releases.PickerRelease`` (extracted from each tag by ``tools/extract_routers.py``);
``spec.router.version`` picks the release (default: the newest known). The configuration is
built from what that release registers, following the P/D configuration each tag ships
(llm-d/llm-d-router deploy/config/pd-epp-config.yaml at the tag):

* apiVersion: the release's EndpointPickerConfig group (``inference.networking.x-k8s.io`` up to
  v0.8.0; ``llm-d.ai`` from v0.9.0, the old group still accepted with a deprecation warning:
  pkg/epp/config/loader/configloader.go at v0.10.0).
* featureGates: ``prepareDataPlugins`` only where the loader registers it (v0.6.0, v0.7.0: the
  Gateway API Inference Extension runner they build on). v0.8.0's own deploy config still lists
  it, but the GIE v1.5.0 it pins no longer registers it and the loader refuses unknown gates
  (gateway-api-inference-extension pkg/epp/config/loader/validation.go:92 at v1.5.0).
* The mode filter on moegen's label: ``label-selector-filter`` (``matchLabels``) where it is
  current (v0.9.0+), else ``by-label`` (``label``, ``validValues``; deprecated in v0.9.0).
* The P/D profile handler: ``disagg-profile-handler`` (``deciders: {prefill: ...}``) from v0.7.0,
  ``pd-profile-handler`` (``deciderPluginName``) at v0.6.0, where ``disagg-profile-handler`` is
  not registered (pkg/plugins/register.go at v0.6.0) and the picker would exit on an unknown
  type (GIE pkg/epp/config/loader/configloader.go: "plugin type ... is not registered").
* The headers handler (the sidecar reads the prefill pick from ``x-prefiller-host-port``): a
  separate plugin while it is current (``prefill-header-handler`` v0.6.0,
  ``disagg-headers-handler`` v0.7.0-v0.8.0); from v0.9.0 ``disagg-profile-handler`` sets the
  header itself and both are deprecated.
* The prefix data producer ``approx-prefix-cache-producer`` where registered (v0.8.0+: GIE
  v1.5.0's ``prefix-cache-scorer`` takes no parameters and scores the producer's match data;
  without a producer it scores nothing).

The picker's Deployment (args ``--pool-name``, ``--config-file``, env ``NAMESPACE`` from the
downward API, ports 9002 ext-proc / 9003 gRPC health / 9090 metrics, gRPC probes on 9003 service
``inference-extension``, grace 130 s) and its namespaced RBAC (pods, inferencepools,
inferenceobjectives: get/list/watch): kubernetes-sigs/gateway-api-inference-extension
config/charts/inferencepool/templates/{epp-deployment.yaml at 04a97e6, rbac.yaml at 503b050,
epp-service.yaml at 6db43ed}.

Routing sidecar (cmd/pd-sidecar; pkg/sidecar/proxy/options.go from v0.7.0): ``--port`` (it
listens on), the local engine's port (``--vllm-port``, deprecated for ``--model-server-port`` in
v0.10.0: llm-d-router#2142), the KV protocol (``--connector`` up to v0.6.0, ``--kv-connector``
from v0.7.0; ``--connector`` deprecated then removed in v0.10.0: llm-d-router#2054),
``--secure-proxy`` (default true: TLS with a self-signed certificate; the InferencePool's
appProtocol is plain ``http``), ``--data-parallel-size`` (one listener per local DP rank on
``--port + i`` forwarding to the engine's ``port + i``; the listeners bind ``POD_IP``:
pkg/sidecar/proxy/data_parallel.go). It runs on the decode pods that serve the API, as a native
sidecar (init container with ``restartPolicy: Always``), in front of the engine moved to port
8200 (llm-d guides: sidecar 8000, engine 8200: guides/pd-disaggregation/modelserver/gpu/vllm/
base/patch-decode.yaml); with ``sglang`` it reads the prefill bootstrap port from
``SGLANG_BOOTSTRAP_PORT`` (default 8998; llm-d/llm-d-routing-sidecar
internal/proxy/connector_sglang.go).

InferencePool ``inference.networking.k8s.io/v1``: ``selector.matchLabels``, ``targetPorts``
(bounds from the CRD of the GIE release the picker pins: 1..8, unique), ``endpointPickerRef``
{name, port.number}. HTTPRoute ``gateway.networking.k8s.io/v1`` (kubernetes-sigs/gateway-api
config/crd/standard at 4564255) from the user's Gateway to the pool.

Rank endpoints (:func:`rank_ports`): the picker keeps one series per metric family and endpoint,
the one with the greatest exposition timestamp (getLatestMetric,
pkg/epp/framework/plugins/datalayer/extractor/metrics/spec.go:103 at v0.10.0); vLLM exports one
series per engine (``engine`` label: vllm/v1/metrics/loggers.py at 0.33.0) and the Prometheus
text format carries no timestamps, so behind one API server the picker scores engine 0 only
(gateway-api-inference-extension#2950). vLLM's DP supervisor
(``--data-parallel-multi-port-external-lb``, first in 0.22.0; vllm/entrypoints/launchers/
dp_supervisor.py: one API server per local rank on ``--port + rank``, aggregated ``/health``
on ``--data-parallel-supervisor-port``, default 9256) makes each rank its own endpoint: the
pool targets one port per local rank (llm-d measured +26-30 % tokens/s on 32 x H200:
llm-d/llm-d guides/wide-ep/experimental-dp-aware/README.md). ``targetPorts`` applies to every
pod of the pool, so every role behind it needs the same number of local ranks.

Every kind of object reaches the engines by label selector in its own namespace: the EPP reads
its namespace from the downward API, the pool selects pods of its namespace, the route's
backendRef names the pool without a namespace; only the Gateway's namespace (the user's input)
is named.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from ..naming import L_MODE
from .metrics import METRICS
from .router_releases import PickerRelease, resolve
from .routers import GATEWAY_KIND, rendered_router, router_kind

EPP_CONFIG_KIND = "EndpointPickerConfig"
#: API versions of the objects moegen renders for the route (the pool's: the v1 CRD every
#: supported release's GIE pin serves, router-releases.json ``inferencePool``).
INFERENCE_POOL_API = "inference.networking.k8s.io/v1"
HTTPROUTE_API = "gateway.networking.k8s.io/v1"
POOL_GROUP = "inference.networking.k8s.io"
GATEWAY_GROUP = "gateway.networking.k8s.io"
#: EPP ports (GIE chart epp-deployment.yaml): ext-proc gRPC, gRPC health, Prometheus metrics.
EPP_GRPC_PORT, EPP_HEALTH_PORT, EPP_METRICS_PORT = 9002, 9003, 9090
#: The gRPC health service the EPP answers (GIE chart probes, no leader election).
EPP_HEALTH_SERVICE = "inference-extension"
#: EPP terminationGracePeriodSeconds (GIE chart: "should mirror the longest grace period of the
#: pods within the pool").
EPP_GRACE_S = 130
#: Where the EPP reads its configuration (a ConfigMap mounted read-only).
EPP_CONFIG_DIR, EPP_CONFIG_FILE = "/config", "epp-config.yaml"
#: Pod-template annotation of the EPP carrying its configuration's digest (a new configuration
#: rolls the Deployment; the EPP reads the file at start).
CONFIG_HASH_ANNOTATION = "moegen.dev/epp-config-hash"
#: The EPP's namespace, from the downward API (the GIE runner's default for --pool-namespace).
EPP_NAMESPACE_ENV = "NAMESPACE"
#: The engine port behind the decode sidecar (llm-d guides: vLLM and SGLang decode on 8200).
SIDECAR_ENGINE_PORT = 8200
#: kvTransfer.connector -> the sidecar's KV protocol per engine. vLLM's Mooncake: the sidecar
#: speaks it from v0.9.0 (``mooncake`` in router-releases.json ``kvConnectors``:
#: pkg/sidecar/proxy/connector_mooncake.go queries the prefill's bootstrap ``/query``); moegen
#: does not render it yet (RTR004). SGLang's protocol (bootstrap host, port and room on both
#: legs) is the same for its Mooncake and NIXL transfer backends.
SIDECAR_CONNECTORS = {("vllm", "nixl"): "nixlv2",
                      ("sglang", "nixl"): "sglang", ("sglang", "mooncake"): "sglang"}
#: Sidecar container resources, requests = limits so engine pods stay Guaranteed QoS: a Go
#: reverse proxy holding one request per in-flight stream.
SIDECAR_RESOURCES = {"cpu": "1", "memory": "1Gi"}
#: The EPP's resources (requests = limits): a Go ext-proc server holding per-endpoint metrics
#: and an LRU prefix index per server (prefix-cache-scorer).
EPP_RESOURCES = {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "1Gi"}
#: The route's request timeout when no longest request could be predicted: a streamed generation
#: of a long context lasts minutes; the Gateway API leaves the default to the implementation
#: (Envoy's is 15 s; the GIE chart hardcoded 300 s until kubernetes-sigs/
#: gateway-api-inference-extension PR#2729). With a prediction the route waits
#: generator/durations.py's request timeout (the longest request x margin).
ROUTE_REQUEST_TIMEOUT_S = 3600
#: Gateway API ``Duration`` (GEP-2257): at most 5 digits per unit, ``^([0-9]{1,5}(h|m|s|ms)){1,4}$``
#: (kubernetes-sigs/gateway-api apis/v1/shared_types.go Duration).
MAX_DURATION_S = 99999
#: The routing sidecar reuses an idle connection to a prefill engine, and to its own decode
#: engine, for up to 90 s: it proxies through httputil.NewSingleHostReverseProxy, whose
#: Transport is Go's http.DefaultTransport (IdleConnTimeout 90 s; llm-d/llm-d-inference-scheduler
#: pkg/sidecar/proxy/proxy.go at v0.6.0). Engines that close idle connections sooner reset the
#: requests sent on them (llm-d/llm-d PR#1564, PR#1686).
SIDECAR_POOL_IDLE_S = 90


def route_timeout(seconds: int | None) -> str:
    """The HTTPRoute's ``timeouts.request``: ``seconds`` (or :data:`ROUTE_REQUEST_TIMEOUT_S`),
    at most the Duration format's :data:`MAX_DURATION_S`."""
    return f"{min(seconds or ROUTE_REQUEST_TIMEOUT_S, MAX_DURATION_S)}s"
#: Namespaced read-only RBAC of the EPP (GIE chart rbac.yaml): its pods, its pool and the
#: objectives that name the pool.
def epp_rules(release: PickerRelease) -> list[dict]:
    """The picker's namespaced RBAC rules at ``release``: read pods and its InferencePool, and
    the InferenceObjectives / InferenceModelRewrites of every group it may watch (from 0.9.0
    ``llm-d.ai`` first when its CRD is installed, else the legacy group: a list it is not
    allowed makes its cache never sync and the manager exit; llm-d-router@v0.10.0:
    pkg/epp/server/controller_config.go, the chart's templates/rbac.yaml grants both)."""
    read = ["get", "list", "watch"]
    return [{"apiGroups": [""], "resources": ["pods"], "verbs": read},
            {"apiGroups": [POOL_GROUP], "resources": ["inferencepools"], "verbs": read},
            *({"apiGroups": [group], "resources": ["inferenceobjectives", "inferencemodelrewrites"],
               "verbs": read} for group in release.facts["objectiveGroups"]["groups"])]


#: More than one endpoint picker: leader election (GIE chart config/charts/epplib/templates/
#: _deployment.yaml and _leader-election-rbac.yaml at v1.5.0): the flag, a lease in the
#: namespace, and gRPC health services ``liveness``/``readiness`` (only the leader is ready).
EPP_HA_FLAG = "--ha-enable-leader-election"
EPP_HA_RULES = [
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
]

#: Scorer weights of each profile (llm-d deploy/config/pd-epp-config.yaml: prefix-cache 2,
#: queue 1; the kv-cache-utilization scorer, GIE's load scorer on the engines' KV usage, at 1).
SCORERS = (("prefix-cache-scorer", 2), ("queue-scorer", 1), ("kv-cache-utilization-scorer", 1))
#: The mode filter on moegen's label, current type first (see the module docstring).
LABEL_FILTERS = ("label-selector-filter", "by-label")
#: P/D profile handlers, current first, and the deciders' parameter shape of each.
PD_HANDLERS = ("disagg-profile-handler", "pd-profile-handler")
#: Headers handlers (a separate plugin while current).
HEADER_HANDLERS = ("disagg-headers-handler", "prefill-header-handler")
DECIDER = "always-disagg-pd-decider"
#: The prefix-match data producer of GIE v1.5.0+ (included where registered).
PREFIX_PRODUCER = "approx-prefix-cache-producer"
#: Feature gates moegen's configuration wants where the release registers them (the deploy
#: configs of v0.6.0-v0.8.0 enable it for the data producers).
WANTED_GATES = ("prepareDataPlugins",)
#: vLLM's DP supervisor (dp_supervisor.py): the launch flag and its health port's name.
DP_SUPERVISOR_FLAG = "--data-parallel-multi-port-external-lb"


def release_for(spec) -> PickerRelease:
    """The llm-d-router release of a DeploymentSpec (``router.version``, default the newest;
    an unknown one is refused by rule RTR010 before rendering)."""
    return PickerRelease(resolve(GATEWAY_KIND, spec.router.version))


def has_sidecar(spec, mode: str) -> bool:
    """A role of ``mode`` runs the routing sidecar in front of its engine (``spec``: a
    DeploymentSpec): the decode roles of a prefill/decode deployment behind kind
    inference-gateway. Its engine then listens on :data:`SIDECAR_ENGINE_PORT`."""
    return mode == "decode" and rendered_router(spec) == "gateway" \
        and any(r.mode == "prefill" for r in spec.roles)


def sidecar_connector(engine: str, connector: str) -> str | None:
    """The sidecar's KV protocol for the prefill roles' ``kvTransfer.connector`` (None: no
    sidecar protocol exists for it)."""
    return SIDECAR_CONNECTORS.get((engine, connector))


def _first_current(release: PickerRelease, names) -> str | None:
    return next((n for n in names if release.current(n)), None)


def _first_registered(release: PickerRelease, names) -> str | None:
    return next((n for n in names if release.plugin(n) is not None), None)


def _mode_filter(release: PickerRelease, mode: str) -> dict:
    kind = _first_current(release, LABEL_FILTERS) or _first_registered(release, LABEL_FILTERS)
    params = ({"matchLabels": {L_MODE: mode}} if kind == "label-selector-filter"
              else {"label": L_MODE, "validValues": [mode]})
    return {"type": kind, "name": f"{mode}-pods", "parameters": params}


def _pd_handler(release: PickerRelease) -> dict:
    kind = _first_current(release, PD_HANDLERS) or _first_registered(release, PD_HANDLERS)
    params = release.plugin(kind).parameters or {}
    if "deciders" in params:
        return {"type": kind, "parameters": {"deciders": {"prefill": DECIDER}}}
    return {"type": kind, "parameters": {"deciderPluginName": DECIDER}}


#: The screener that keeps a request's prefill and decode on one DisaggregatedSet revision
#: during a rollout (llm-d/llm-d-router@v0.10.0:pkg/epp/framework/plugins/requestcontrol/
#: screener/disaggregatedsetrollout/README.md; added to the wide-EP guide's picker by
#: llm-d/llm-d#2379). ``max-role``: a revision gets traffic once every role has a Ready pod,
#: in proportion to its pods of the most numerous role (moegen's roles keep a fixed ratio).
ROLLOUT_SCREENER = "disaggregatedset-rollout-screener"
#: The flag without which the picker refuses alpha plugins (llm-d-router@v0.10.0:
#: pkg/epp/framework/interface/plugin/registry.go ValidatePluginStability).
EXPERIMENTAL_FLAG = "--allow-experimental-plugins"


def rollout_screener(release: PickerRelease, set_name: str, roles: list[str]) -> dict | None:
    """The screener plugin for DisaggregatedSet ``set_name`` of ``roles``, or None where the
    release does not register it (before v0.10.0)."""
    if release.plugin(ROLLOUT_SCREENER) is None:
        return None
    from ..facts.lws import DS_NAME_LABEL
    return {"type": ROLLOUT_SCREENER, "name": "rollout-screener", "parameters": {
        "scope": {"labelSelector": f"{DS_NAME_LABEL}={set_name}"},
        "revisionGating": {"mode": "max-role", "requireRoles": {"values": list(roles)}}}}


def experimental_args(release: PickerRelease, config: dict) -> list[str]:
    """``--allow-experimental-plugins`` when ``config`` names an alpha plugin of ``release``."""
    plugins = [release.plugin(p["type"]) for p in config["plugins"]]
    alpha = any(x is not None and x.stability == "alpha" for x in plugins)
    return [EXPERIMENTAL_FLAG] if alpha and release.experimental_flag else []


def epp_config(release: PickerRelease, pd: bool, screener: dict | None = None) -> dict:
    """The EndpointPickerConfig at ``release``: with ``pd`` a decode profile and a prefill
    profile (the decode pick first, then always a prefill pick: moegen's P/D roles are sized for
    disaggregated traffic and SGLang's decode-mode engines cannot prefill locally); else one
    profile; ``screener`` (:func:`rollout_screener`) first among the plugins, in no profile (it
    runs once per request before them). Every type is one the release registers
    (tests/test_gateway.py checks the registry and the parameter fields of each supported
    release)."""
    producer = [{"type": PREFIX_PRODUCER}] if release.plugin(PREFIX_PRODUCER) else []
    scorers = [{"type": name} for name, _ in SCORERS]
    gates = [g for g in WANTED_GATES if g in release.feature_gates]
    head = {"apiVersion": release.config_api, "kind": EPP_CONFIG_KIND}
    if gates and pd:
        head["featureGates"] = gates

    def weights() -> list[dict]:
        return [{"pluginRef": name, "weight": w} for name, w in SCORERS]

    if not pd:
        return {**head,
                "plugins": [*producer, *scorers, {"type": "max-score-picker"},
                            {"type": "single-profile-handler"}],
                "schedulingProfiles": [{"name": "default", "plugins": [
                    *weights(), {"pluginRef": "max-score-picker"}]}]}
    filters = [_mode_filter(release, mode) for mode in ("prefill", "decode")]
    headers = _first_current(release, HEADER_HANDLERS)
    return {
        **head,
        "plugins": [*([screener] if screener else []), *producer, *filters, *scorers,
                    {"type": "max-score-picker"},
                    *([{"type": headers}] if headers else []),
                    {"type": DECIDER}, _pd_handler(release)],
        "schedulingProfiles": [
            {"name": mode, "plugins": [{"pluginRef": f"{mode}-pods"}, *weights(),
                                       {"pluginRef": "max-score-picker"}]}
            for mode in ("prefill", "decode")],
    }


def config_text(config: dict) -> str:
    """The configuration as the ConfigMap's file (block YAML, keys in a fixed order)."""
    import yaml   # the render path only (gen validate never writes the file)
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False, width=10_000)


def config_hash(text: str) -> str:
    """A short digest of the configuration: a pod-template annotation, so a new configuration
    rolls the EPP (it reads the file at start only)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: The EPP authenticates scrapes of its metrics endpoint by default (TokenReview and
#: SubjectAccessReview: kubernetes-sigs/gateway-api-inference-extension cmd/epp/runner/runner.go
#: ``metrics-endpoint-auth`` default true), which needs cluster-scoped RBAC and a token Secret
#: (the chart's epp-sa-token-secret.yaml); moegen's RBAC stays namespaced, so a monitored EPP
#: serves its metrics (scheduling and pool statistics, no request content) without it.
EPP_OPEN_METRICS_FLAG = "--metrics-endpoint-auth=false"


def epp_args(release: PickerRelease, engine: str, pool: str, monitored: bool = False) -> list[str]:
    """The EPP's command line at ``release``: its pool (the namespace comes from
    ``NAMESPACE``), its configuration file, tracing off (on by default, it exports to
    localhost:4317 where no collector listens: llm-d-router@v0.10.0:pkg/epp/server/options.go:149;
    the chart passes ``--tracing=false``) and, where the release still accepts them, the
    engine's metric names (queue depth, KV-cache usage; SGLang has no LoRA or cache-info series:
    empty names turn them off, values_sglang.yaml). From 0.7.0 the picker refuses the metric
    flags at start (:meth:`PickerRelease.refused`); the metrics extractor then reads a pod's
    engine from :func:`engine_labels`, and rule RTR014 refuses SGLang where neither works.
    ``monitored``: :data:`EPP_OPEN_METRICS_FLAG`, so the ServiceMonitor can scrape it. Every
    flag is one the release defines."""
    m = METRICS[engine]
    # The pool's namespace explicitly: releases read it from NAMESPACE (the chart at 04a97e6)
    # or POD_NAMESPACE (later runner options), else fall back to "default"
    # (gateway-api-inference-extension cmd/epp/runner --pool-namespace).
    args = ["--pool-name", pool, "--pool-namespace", f"$({EPP_NAMESPACE_ENV})",
            "--config-file", f"{EPP_CONFIG_DIR}/{EPP_CONFIG_FILE}"]
    if release.epp_flag("tracing"):
        args.append("--tracing=false")
    if not release.refused("total-queued-requests-metric"):
        args += ["--total-queued-requests-metric", m.waiting,
                 "--kv-cache-usage-percentage-metric", m.kv_usage]
        if release.epp_flag("total-running-requests-metric"):
            args += ["--total-running-requests-metric", m.running]
        if engine == "sglang":
            args += ["--lora-info-metric", "", "--cache-info-metric", ""]
    if monitored:
        args.append(EPP_OPEN_METRICS_FLAG)
    return args


def engine_labels(release: PickerRelease | None, engine: str) -> dict[str, str]:
    """The label that names the engine pods' engine to the picker's metrics extractor, where the
    release reads metrics through it (the data layer: the default from 0.8.0, GIE v1.5.0
    cmd/epp/runner/runner.go:326) and the engine is not the extractor's default (vLLM, GIE
    v1.4.0 pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go:84): SGLang.
    ``{}`` otherwise."""
    if release is None or engine == "vllm":
        return {}
    label = release.engine_label
    if label is None or release.metrics_collector["default"] != "datalayer":
        return {}
    return {label["key"]: engine}


def sglang_metrics_unreadable(release: PickerRelease) -> bool:
    """The release can read SGLang's metric names neither by flag (refused) nor by the engine
    label (its legacy collector ignores it): llm-d-router 0.7.0 on GIE v1.4.0."""
    return bool(release.refused("total-queued-requests-metric")) \
        and release.metrics_collector["default"] == "legacy"


#: The routing sidecar's container port name (the decode pods' API behind the gateway).
SIDECAR_PORT_NAME = "sidecar"


def sidecar_args(release: PickerRelease, port: int, engine_port: int, connector: str,
                 ranks: int = 1) -> list[str]:
    """The routing sidecar's command line at ``release`` (plain HTTP between the gateway and
    the sidecar); ``ranks`` > 1: one listener per local DP rank (``--data-parallel-size``)."""
    engine_flag = "model-server-port" if release.sidecar_flag("model-server-port") \
        else "vllm-port"
    kv_flag = "kv-connector" if release.sidecar_flag("kv-connector") else "connector"
    args = [f"--port={port}", f"--{engine_flag}={engine_port}", f"--{kv_flag}={connector}",
            "--secure-proxy=false"]
    if ranks > 1:
        args.append(f"--data-parallel-size={ranks}")
    return args


def engine_api_ports(role) -> tuple[int, ...]:
    """The HTTP API ports one API pod of ``role`` (a RoleInput) serves: the pool's
    ``targetPorts``. One (``serving.port``: vLLM's API server or SGLang's data-parallel
    controller in front of the pod's DP ranks; pod-per-rank: one rank per pod), or one per local
    DP rank with vLLM's DP supervisor (``role.rank_ports``, :func:`rank_ports`)."""
    return tuple(role.serving.port + i for i in range(role.rank_ports))


def rank_ports(spec, engine_has, layouts) -> int:
    """Local DP ranks per pod to serve as endpoints of their own (1: one endpoint per pod).

    ``spec``: a DeploymentSpec; ``engine_has(option)``: whether the engine release has an
    option; ``layouts``: each role's RoleLayout. Rank endpoints need kind inference-gateway
    with ``router.gateway.rankEndpoints`` not false, vLLM with the DP supervisor
    (:data:`DP_SUPERVISOR_FLAG`, vLLM >= 0.22.0), and every role of the pool with the same
    number of local DP ranks, at least 2 (the supervisor's minimum) and at most the pool's 8
    target ports; else 1 (rule RTR011 explains a refusal when rankEndpoints is true, RTR012
    warns that the picker then scores one engine per endpoint)."""
    gw = spec.router.gateway
    if router_kind(spec.engine.name, spec.router.kind) != GATEWAY_KIND or not spec.router.enabled \
            or (gw is not None and gw.rankEndpoints is False):
        return 1
    if rank_blocker(spec, engine_has, layouts) is not None:
        return 1
    return layouts[0].dp_local


def with_rank_ports(spec, roles: list, dialect) -> list:
    """``roles`` (RoleInputs of a DeploymentSpec's roles, None where unknown) with their
    ``rank_ports`` set (:func:`rank_ports`); unchanged when any role or the dialect is
    missing."""
    if dialect is None or not roles or any(r is None or r.layout.problem for r in roles):
        return roles
    n = rank_ports(spec, dialect.has, [r.layout for r in roles])
    return roles if n == 1 else [replace(r, rank_ports=n) for r in roles]


def rank_blocker(spec, engine_has, layouts) -> str | None:
    """Why the pool's roles cannot serve one endpoint per local DP rank (None: they can)."""
    if spec.engine.name != "vllm":
        return (f"{spec.engine.name} serves its DP ranks behind one HTTP server per pod; only "
                "vLLM's DP supervisor serves one per rank")
    if not engine_has(DP_SUPERVISOR_FLAG):
        return (f"vLLM {spec.engine.version} has no {DP_SUPERVISOR_FLAG} (first in 0.22.0)")
    locals_ = {lay.dp_local for lay in layouts}
    if len(locals_) != 1:
        return ("the pool's targetPorts apply to every pod it selects, and the roles run "
                f"{sorted(locals_)} local DP ranks per pod")
    (n,) = locals_
    if n < 2:
        return "one DP rank per pod already is one endpoint per rank"
    if n > 8:
        return f"{n} local DP ranks exceed the InferencePool's 8 target ports"
    return None


def sidecar_container(release: PickerRelease, engine: str, port: int, connector: str,
                      bootstrap_port: int, ranks: int = 1) -> dict:
    """The routing sidecar as a native sidecar container of a decode pod: it listens on the
    role's serving port (the pool's target port; ``ranks`` > 1: one per local DP rank) and
    forwards to the engine on :data:`SIDECAR_ENGINE_PORT` (+ rank), sending prefill to the pod
    the endpoint picker named in the ``x-prefiller-host-port`` header first. Ready when its
    ``/health`` answers (the sidecar's own handler). Restricted Pod Security: no privilege
    escalation, no capabilities, non-root."""
    ports = [{"name": SIDECAR_PORT_NAME, "containerPort": port, "protocol": "TCP"}]
    ports += [{"name": f"sidecar-{i}", "containerPort": port + i, "protocol": "TCP"}
              for i in range(1, ranks)]
    container: dict = {
        "name": "routing-sidecar",
        "image": release.image("sidecar"),
        "args": sidecar_args(release, port, SIDECAR_ENGINE_PORT, connector, ranks),
        "ports": ports,
        "readinessProbe": {"httpGet": {"path": "/health", "port": SIDECAR_PORT_NAME},
                           "periodSeconds": 10},
        "resources": {"requests": dict(SIDECAR_RESOURCES), "limits": dict(SIDECAR_RESOURCES)},
        "restartPolicy": "Always",
        # The image runs as 65532 and writes nothing (llm-d/llm-d-router@v0.10.0:
        # Dockerfile.sidecar USER 65532:65532; no file writes under pkg/sidecar).
        "securityContext": {"allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
                            "readOnlyRootFilesystem": True},
    }
    env = []
    if ranks > 1:   # the per-rank listeners bind the pod's IP (data_parallel.go POD_IP)
        env.append({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    if engine == "sglang":
        env.append({"name": "SGLANG_BOOTSTRAP_PORT", "value": str(bootstrap_port)})
    if env:
        container["env"] = env
    return container
