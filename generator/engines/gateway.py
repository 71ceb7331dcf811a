"""The Gateway API Inference Extension route (``spec.router.kind: inference-gateway``): pinned
upstream facts and the objects' contents, computed here so that templates only substitute.

Pinned release (one llm-d generation, read from its own files; change all together):

* Endpoint picker (EPP): ``ghcr.io/llm-d/llm-d-inference-scheduler:v0.6.0``, the image the
  llm-d guide pins next to the P/D configuration moegen follows (llm-d/llm-d
  guides/pd-disaggregation/gaie-pd/values_sglang.yaml at 607e693e): EndpointPickerConfig
  ``inference.networking.x-k8s.io/v1alpha1`` with ``featureGates: [prepareDataPlugins]``, a
  ``disagg-headers-handler``, an ``always-disagg-pd-decider`` and the P/D profile handler
  ``disagg-profile-handler`` (``deciders: {prefill: ...}``; ``pd-profile-handler`` is its
  deprecated alias in that generation: llm-d/llm-d-inference-scheduler
  pkg/plugins/profile/pd_profile_handler.go "PdProfileHandlerType is a legacy alias for
  DisaggProfileHandlerType"), filters, scorers and ``max-score-picker``. The EPP's metric
  flags per engine: the same file (SGLang) and guides/pd-disaggregation/gaie-pd/values.yaml at
  126f65d6 (vLLM ``kv-cache-usage-percentage-metric``). Its Deployment (args ``--pool-name``,
  ``--config-file``, env ``NAMESPACE`` from the downward API, ports 9002 ext-proc / 9003 gRPC
  health / 9090 metrics, gRPC probes on 9003 service ``inference-extension``, grace 130 s) and
  its namespaced RBAC (pods, inferencepools, inferenceobjectives: get/list/watch):
  kubernetes-sigs/gateway-api-inference-extension config/charts/inferencepool/templates/
  {epp-deployment.yaml at 04a97e6, rbac.yaml at 503b050, epp-service.yaml at 6db43ed}.
* Routing sidecar: ``ghcr.io/llm-d/llm-d-routing-sidecar:v0.6.0`` (built from
  llm-d/llm-d-inference-scheduler cmd/pd-sidecar/main.go, read at 10df70b): ``--port`` (it
  listens on), ``--vllm-port`` (the local engine), ``--connector`` one of ``nixlv2``,
  ``lmcache``, ``sglang`` (``nixl`` v1 was removed; llm-d/llm-d-routing-sidecar README: "lmcache
  and nixl connectors are deprecated. Use nixlv2"), ``--secure-proxy`` (default true: TLS with
  a self-signed certificate; the InferencePool's appProtocol is plain ``http``). It runs on the
  decode pods only, as a native sidecar (init container with ``restartPolicy: Always``), in
  front of the engine moved to port 8200 (llm-d guides: sidecar 8000, vLLM/SGLang decode 8200:
  guides/pd-disaggregation/modelserver/gpu/vllm/base/patch-decode.yaml); with ``sglang`` it
  reads the prefill bootstrap port from ``SGLANG_BOOTSTRAP_PORT`` (default 8998;
  llm-d/llm-d-routing-sidecar internal/proxy/connector_sglang.go).
* InferencePool ``inference.networking.k8s.io/v1``: ``selector.matchLabels``, ``targetPorts``
  (1..8, unique: config/crd/bases/inference.networking.k8s.io_inferencepools.yaml at 84436a9;
  api/v1/inferencepool_types.go), ``endpointPickerRef`` {name, port.number} (port required for a
  Service). HTTPRoute ``gateway.networking.k8s.io/v1`` (kubernetes-sigs/gateway-api
  config/crd/standard at 4564255) from the user's Gateway to the pool.

Every kind of object reaches the engines by label selector in its own namespace: the EPP reads
its namespace from the downward API, the pool selects pods of its namespace, the route's
backendRef names the pool without a namespace; only the Gateway's namespace (the user's input)
is named.
"""

from __future__ import annotations

import hashlib
import yaml

from ..naming import L_MODE
from .metrics import METRICS
from .routers import rendered_router

#: The pinned images (see the module docstring for where each comes from).
EPP_IMAGE = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.6.0"
SIDECAR_IMAGE = "ghcr.io/llm-d/llm-d-routing-sidecar:v0.6.0"
#: EndpointPickerConfig apiVersion/kind read by the pinned EPP (GIE apix/config/v1alpha1).
EPP_CONFIG_API_VERSION = "inference.networking.x-k8s.io/v1alpha1"
EPP_CONFIG_KIND = "EndpointPickerConfig"
#: API versions of the objects moegen renders for the route.
INFERENCE_POOL_API = "inference.networking.k8s.io/v1"
HTTPROUTE_API = "gateway.networking.k8s.io/v1"
POOL_GROUP = "inference.networking.k8s.io"
GATEWAY_GROUP = "gateway.networking.k8s.io"
#: InferencePool ``spec.targetPorts`` maxItems (the v1 CRD at 84436a9; GIE >= v1.5 serves
#: several ports per pod, one per local DP rank: gateway-api-inference-extension#1336).
MAX_TARGET_PORTS = 8
#: Every pinned upstream fact and where it was read (repository, file, commit or tag). Change
#: them together: the configuration's plugin names and the sidecar's flags belong to the tag.
PINS = {
    "epp_image": (EPP_IMAGE, "llm-d/llm-d guides/pd-disaggregation/gaie-pd/values_sglang.yaml "
                  "at 607e693e (inferenceExtension.image llm-d-inference-scheduler v0.6.0, with "
                  "the P/D configuration moegen renders)"),
    "sidecar_image": (SIDECAR_IMAGE, "llm-d-routing-sidecar v0.6.0, built from "
                      "llm-d/llm-d-inference-scheduler cmd/pd-sidecar/main.go (flags read at "
                      "10df70b: --port, --vllm-port, --connector nixlv2|lmcache|sglang, "
                      "--secure-proxy)"),
    "epp_config_api": (EPP_CONFIG_API_VERSION, "kubernetes-sigs/gateway-api-inference-extension "
                       "apix/config/v1alpha1/endpointpickerconfig_types.go at 050687e; "
                       "loader pkg/epp/config/loader/configloader.go at 0482b0f"),
    "inference_pool_api": (INFERENCE_POOL_API, "kubernetes-sigs/gateway-api-inference-extension "
                           "api/v1/inferencepool_types.go; config/crd/bases/"
                           "inference.networking.k8s.io_inferencepools.yaml at 84436a9"),
    "httproute_api": (HTTPROUTE_API, "kubernetes-sigs/gateway-api config/crd/standard/"
                      "gateway.networking.k8s.io_httproutes.yaml at 4564255"),
}
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
#: kvTransfer.connector -> the sidecar's ``--connector`` per engine (what it supports: nixlv2,
#: lmcache, sglang). vLLM's Mooncake has no sidecar protocol; SGLang's protocol (bootstrap host,
#: port and room on both legs) is the same for its Mooncake and NIXL transfer backends.
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
EPP_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [POOL_GROUP], "resources": ["inferencepools"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["inference.networking.x-k8s.io"],
     "resources": ["inferenceobjectives", "inferencemodelrewrites"],
     "verbs": ["get", "list", "watch"]},
]

#: Scorer weights of each profile (llm-d values_sglang.yaml: prefix-cache 2, queue 1; the
#: kv-cache-utilization scorer, GIE's load scorer on the engines' KV usage, at 1).
SCORERS = (("prefix-cache-scorer", 2), ("queue-scorer", 1), ("kv-cache-utilization-scorer", 1))
#: The filter plugin that selects pods by moegen's mode label (llm-d-inference-scheduler
#: docs/architecture.md ``by-label``: ``label``, ``validValues``).
BY_LABEL = "by-label"


def has_sidecar(spec, mode: str) -> bool:
    """A role of ``mode`` runs the routing sidecar in front of its engine (``spec``: a
    DeploymentSpec): the decode roles of a prefill/decode deployment behind kind
    inference-gateway. Its engine then listens on :data:`SIDECAR_ENGINE_PORT`."""
    return mode == "decode" and rendered_router(spec) == "gateway" \
        and any(r.mode == "prefill" for r in spec.roles)


def sidecar_connector(engine: str, connector: str) -> str | None:
    """The sidecar's ``--connector`` for the prefill roles' ``kvTransfer.connector`` (None: no
    sidecar protocol exists for it)."""
    return SIDECAR_CONNECTORS.get((engine, connector))


def epp_config(pd: bool) -> dict:
    """The EndpointPickerConfig: with ``pd`` a decode profile and a prefill profile (the decode
    pick first, then always a prefill pick: moegen's P/D roles are sized for disaggregated
    traffic and SGLang's decode-mode engines cannot prefill locally); else one profile."""
    scorers = [{"type": name} for name, _ in SCORERS]

    def weights() -> list[dict]:
        return [{"pluginRef": name, "weight": w} for name, w in SCORERS]

    if not pd:
        return {"apiVersion": EPP_CONFIG_API_VERSION, "kind": EPP_CONFIG_KIND,
                "plugins": [*scorers, {"type": "max-score-picker"},
                            {"type": "single-profile-handler"}],
                "schedulingProfiles": [{"name": "default", "plugins": [
                    *weights(), {"pluginRef": "max-score-picker"}]}]}
    filters = [{"type": BY_LABEL, "name": f"{mode}-pods",
                "parameters": {"label": L_MODE, "validValues": [mode]}}
               for mode in ("prefill", "decode")]
    return {
        "apiVersion": EPP_CONFIG_API_VERSION, "kind": EPP_CONFIG_KIND,
        "featureGates": ["prepareDataPlugins"],
        "plugins": [*filters, *scorers, {"type": "max-score-picker"},
                    {"type": "disagg-headers-handler"},
                    {"type": "always-disagg-pd-decider"},
                    {"type": "disagg-profile-handler",
                     "parameters": {"deciders": {"prefill": "always-disagg-pd-decider"}}}],
        "schedulingProfiles": [
            {"name": mode, "plugins": [{"pluginRef": f"{mode}-pods"}, *weights(),
                                       {"pluginRef": "max-score-picker"}]}
            for mode in ("prefill", "decode")],
    }


def config_text(config: dict) -> str:
    """The configuration as the ConfigMap's file (block YAML, keys in a fixed order)."""
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


def epp_args(engine: str, pool: str, monitored: bool = False) -> list[str]:
    """The EPP's command line: its pool (the namespace comes from ``NAMESPACE``), its
    configuration file and the engine's metric names (queue depth, KV-cache usage; SGLang has no
    LoRA or cache-info series: empty names turn them off, values_sglang.yaml); ``monitored``:
    :data:`EPP_OPEN_METRICS_FLAG`, so the ServiceMonitor can scrape it."""
    m = METRICS[engine]
    # The pool's namespace explicitly: releases read it from NAMESPACE (the chart at 04a97e6)
    # or POD_NAMESPACE (later runner options), else fall back to "default"
    # (gateway-api-inference-extension cmd/epp/runner --pool-namespace).
    args = ["--pool-name", pool, "--pool-namespace", f"$({EPP_NAMESPACE_ENV})",
            "--config-file", f"{EPP_CONFIG_DIR}/{EPP_CONFIG_FILE}",
            "--total-queued-requests-metric", m.waiting,
            "--kv-cache-usage-percentage-metric", m.kv_usage]
    if engine == "sglang":
        args += ["--lora-info-metric", "", "--cache-info-metric", ""]
    if monitored:
        args.append(EPP_OPEN_METRICS_FLAG)
    return args


#: The routing sidecar's container port name (the decode pods' API behind the gateway).
SIDECAR_PORT_NAME = "sidecar"


def sidecar_args(port: int, engine_port: int, connector: str) -> list[str]:
    """The routing sidecar's command line (plain HTTP between the gateway and the sidecar)."""
    return [f"--port={port}", f"--vllm-port={engine_port}", f"--connector={connector}",
            "--secure-proxy=false"]


def engine_api_ports(role) -> tuple[int, ...]:
    """The HTTP API ports one API pod of ``role`` (a RoleInput) serves: the pool's
    ``targetPorts``, one per local DP rank where an engine runs an HTTP server per rank. moegen's
    vLLM and SGLang pods serve one port (``serving.port``), their DP ranks behind it (vLLM
    internal load balancing, SGLang's data-parallel controller; pod-per-rank: one rank per
    pod), so the pool has one target port."""
    return (role.serving.port,)


def sidecar_container(engine: str, port: int, connector: str, bootstrap_port: int) -> dict:
    """The routing sidecar as a native sidecar container of a decode pod: it listens on the
    role's serving port (the pool's target port) and forwards to the engine on
    :data:`SIDECAR_ENGINE_PORT`, sending prefill to the pod the endpoint picker named in the
    ``x-prefiller-host-port`` header first. Ready when its ``/health`` answers (the sidecar's own
    handler). Restricted Pod Security: no privilege escalation, no capabilities, non-root."""
    container: dict = {
        "name": "routing-sidecar",
        "image": SIDECAR_IMAGE,
        "args": sidecar_args(port, SIDECAR_ENGINE_PORT, connector),
        "ports": [{"name": SIDECAR_PORT_NAME, "containerPort": port, "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": SIDECAR_PORT_NAME},
                           "periodSeconds": 10},
        "resources": {"requests": dict(SIDECAR_RESOURCES), "limits": dict(SIDECAR_RESOURCES)},
        "restartPolicy": "Always",
        "securityContext": {"allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True},
    }
    if engine == "sglang":
        container["env"] = [{"name": "SGLANG_BOOTSTRAP_PORT", "value": str(bootstrap_port)}]
    return container
