"""The deployment plan: every object, name, number and argument, computed before templates run.

Input: the deployment model (:class:`~generator.deployment.Deployment`) of a spec that passed
every check: its roles (layout + model shape), the engine dialect, the roles' memory and host
plans, the prediction. Output: a frozen :class:`DeploymentPlan` that a target
(``generator/targets``) turns into files; templates only substitute and loop over it. Object
names and labels follow ``generator/naming.py``; per role objects are built in
:mod:`.workloads`, the router and the inference gateway here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import security
from ..deployment import Deployment
from ..durations import Durations
from ..engines import gateway as gw
from ..engines.routers import (
    NAMESPACE_ENV,
    ROUTER_REPLICAS,
    Discovery,
    router_launch,
)
from ..facts import lws as lwsv
from ..naming import (
    L_API,
    L_COMPONENT,
    L_INSTANCE,
    L_ROLE,
    epp_name,
    pool_name,
    route_name,
    router_name,
)
from ..pods import PRESTOP_S, termination_grace
from ..roles import RoleInput
from ..sizing import RoleSizing
from ..spec.models import InferenceDeployment
from .netpol import NetworkPolicyPlan, network_policies
from .pods import (
    ENGINE_STARTUP_S,
    LIVENESS_FAILURES,
    LIVENESS_PERIOD_S,
    READINESS_PERIOD_S,
    STARTUP_PERIOD_S,
)
from .scaling import ScaledObjectPlan
from .workloads import (
    EnvFilePlan,
    PdbPlan,
    RoleObjects,
    RolePlan,
    ServicePlan,
    WorkloadPlan,
    add_role,
    shared_inputs,
)

if TYPE_CHECKING:   # monitoring and its dashboard are imported for a monitored spec only
    from .dashboard import DashboardPlan
    from .monitoring import MonitoringPlan


def router_probes(startup_s: int) -> dict[str, Any]:
    """Router probes. The startup probe (TCP on its HTTP port) allows the engines' startup
    budget (the slowest role's, sizing/host.py) plus one minute: vllm-router and smg bind their
    port only once the engines answer their health checks, and they are told to wait
    ``startup_s`` (engines/routers.py). Readiness means "has healthy engines": ``/readiness``
    answers 503 until a healthy prefill and decode worker are registered (vllm-router 0.1.17
    src/routers/http/pd_router.rs:1616) or while workers are short or the router drains (smg
    v1.9.0 model_gateway/src/health.rs:221); liveness stays TCP, so an engine outage does not
    restart the router."""
    return {
        "startupProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": STARTUP_PERIOD_S,
                         "failureThreshold": (startup_s + 60) // STARTUP_PERIOD_S},
        "readinessProbe": {"httpGet": {"path": "/readiness", "port": "http"},
                           "periodSeconds": READINESS_PERIOD_S},
        "livenessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": LIVENESS_PERIOD_S,
                          "failureThreshold": LIVENESS_FAILURES},
    }


#: Router pod requests (= limits): vllm-router and smg are Rust async proxies holding request
#: state only (no tokenizer with the static PD policies); 2 cores and 2 GiB leave room for
#: thousands of streaming connections. Ephemeral storage: logs.
ROUTER_RESOURCES = {"cpu": "2", "memory": "2Gi", "ephemeral-storage": "1Gi"}
#: Annotations of the hashed env ConfigMaps: an env change makes a new ConfigMap (new hash) while
#: LWS still rolls groups of the old revision, which a re-created old group needs; so GitOps tools
#: never prune them (Argo CD ``Prune=false``, argo-cd#1629; Flux
#: ``kustomize.toolkit.fluxcd.io/prune: disabled``, fluxcd/kustomize-controller#1180). Old ones
#: are small; delete them once a rollout has finished.
GENERATED_CONFIGMAP_ANNOTATIONS = {"argocd.argoproj.io/sync-options": "Prune=false",
                                   "argocd.argoproj.io/sync-wave": "-1",
                                   "kustomize.toolkit.fluxcd.io/prune": "disabled"}
#: Argo CD sync waves (argo-cd docs "Sync Phases and Waves"): the env ConfigMaps (-1) before the
#: engines (0, the default), the router (1) after them, so a first sync never starts a router
#: whose engines are not declared yet.
ROUTER_SYNC_WAVE = "1"


@dataclass(frozen=True)
class DisaggregatedSetPlan:
    """platform.lws.disaggregatedSet: the roles' LeaderWorkerSets as the roles of one
    DisaggregatedSet (generator/facts/lws.py; ``roles`` are the workloads' plans, rendered
    under ``spec.roles[].spec`` instead of as LeaderWorkerSet files)."""

    name: str
    file: str
    labels: dict[str, str]
    roles: list[WorkloadPlan]
    role_names: str = ""
    api: str = lwsv.DS_API


@dataclass(frozen=True)
class RouterPlan:
    """The PD router Deployment and its Service."""

    name: str
    labels: dict[str, str]
    selector: dict[str, str]
    image: str
    args: list[str]
    port: int
    metrics_port: int
    replicas: int
    command: list[str] = field(default_factory=list)
    probes: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)
    security_context: dict[str, Any] = field(default_factory=dict)
    image_pull_secrets: list[dict[str, str]] = field(default_factory=list)
    service_account: str | None = None
    priority_class: str | None = None
    scheduler_name: str | None = None
    sync_wave: str = ROUTER_SYNC_WAVE
    #: Graceful stop: preStop sleeps ``prestop_s`` (Service endpoints drop the pod first), the
    #: router then drains in-flight requests (``drain_s``); the grace period covers both.
    prestop_s: int = 0
    grace_s: int = 30
    #: The router discovers its engines: it gets POD_NAMESPACE, a Role to list/watch pods and
    #: a RoleBinding for its service account (moegen's own unless spec.pod names one).
    discovery: bool = False
    own_service_account: bool = False
    namespace_env: str = NAMESPACE_ENV
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    #: checkov's skip annotations of the Deployment (generator/security.py; also on the pod).
    annotations: dict[str, str] = field(default_factory=dict)
    tmp_mib: int = security.CONTROL_TMP_MIB


@dataclass(frozen=True)
class GatewayPlan:
    """Router kind inference-gateway (engines/gateway.py): the InferencePool, its endpoint
    picker (Deployment, Service, ConfigMap, ServiceAccount, Role, RoleBinding) and the
    HTTPRoute from the user's Gateway. ``pool_spec``/``route_spec``/``service_ports`` are the
    objects' specs as dicts; the EPP pod fields mirror :class:`RouterPlan`'s."""

    pool: str
    epp: str
    route: str
    labels: dict[str, str]
    epp_labels: dict[str, str]
    pool_spec: dict[str, Any]
    route_spec: dict[str, Any]
    selector: dict[str, str]
    image: str
    args: list[str]
    replicas: int
    ports: list[dict[str, Any]]
    service_ports: list[dict[str, Any]]
    probes: dict[str, Any]
    resources: dict[str, Any]
    config_file: str
    config_dir: str
    config_text: str
    config_data: dict[str, str]
    rules: list[dict[str, Any]]
    service_account: str
    own_service_account: bool
    namespace_env: str = gw.EPP_NAMESPACE_ENV
    grace_s: int = gw.EPP_GRACE_S
    pool_api: str = gw.INFERENCE_POOL_API
    route_api: str = gw.HTTPROUTE_API
    security_context: dict[str, Any] = field(default_factory=dict)
    image_pull_secrets: list[dict[str, str]] = field(default_factory=list)
    priority_class: str | None = None
    scheduler_name: str | None = None
    sync_wave: str = ROUTER_SYNC_WAVE
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    tmp_mib: int = security.CONTROL_TMP_MIB
    #: For the review page: the scheduling profiles and their scorers, the Gateway, the
    #: sidecar's connector ("" without prefill/decode roles).
    profiles: list[dict[str, Any]] = field(default_factory=list)
    parent: str = ""
    sidecar_connector: str = ""


@dataclass(frozen=True)
class DeploymentPlan:
    """Everything the templates need; nothing left to compute."""

    name: str
    namespace: str
    labels: dict[str, str]
    workloads: list[WorkloadPlan]
    services: list[ServicePlan]
    router: RouterPlan | None
    env_files: list[EnvFilePlan]
    roles: list[RolePlan] = field(default_factory=list)
    engine: str = ""
    dialect: str = ""
    generated_annotations: dict[str, str] = field(
        default_factory=lambda: dict(GENERATED_CONFIGMAP_ANNOTATIONS))
    pdbs: list[PdbPlan] = field(default_factory=list)
    monitoring: MonitoringPlan | None = None
    dashboard: DashboardPlan | None = None
    scaled_objects: list[ScaledObjectPlan] = field(default_factory=list)
    gateway: GatewayPlan | None = None
    disaggregated: DisaggregatedSetPlan | None = None
    #: The NetworkPolicies (kubernetes target, network.networkPolicy): generator/manifests/netpol.py.
    network_policies: list[NetworkPolicyPlan] = field(default_factory=list)


def build_plan(model: Deployment, timed: bool = True) -> DeploymentPlan:
    """Build the plan of a deployment model that passed every check (raises nothing for valid
    input): per role its workloads, Services, PDB and env file (:mod:`.workloads`: the roles'
    memory plans are pinned on the command lines, their host plans size the pods), then the
    router or the inference gateway, monitoring, the dashboard (whose reference lines are the
    model's prediction) and the DisaggregatedSet. Without ``timed`` the plan's timeouts are
    :class:`Durations`' defaults and its dashboard has no predicted lines: the model is not
    timed (the perf model is not loaded), every object, name, port and address is the same
    (gen validate's address check, NET100)."""
    spec, dialect = model.spec, model.dialect
    roles = [r for r in model.roles if r is not None]
    sizing_by_role = {z.name: z for z in model.sizing if isinstance(z, RoleSizing)}
    host_plans = list(model.host) if model.host else [None] * len(roles)
    durations = model.durations if timed else Durations()
    shared = shared_inputs(spec, roles, dialect, durations)
    base, common_labels = shared.base, shared.labels
    out = RoleObjects()
    for role_spec, role, hplan in zip(spec.spec.roles, roles, host_plans):
        add_role(out, shared, role_spec, role, hplan, sizing_by_role.get(role.name))

    router = None
    if shared.pd_router:
        startup = max((h.startup_s for h in host_plans if h is not None),
                      default=ENGINE_STARTUP_S)
        router = _router_plan(spec, roles, out.endpoints, common_labels, startup,
                              shared.discovery, durations)
        if router.replicas > 1:
            out.pdbs.append(PdbPlan(router.name, "router-pdb.yaml", router.labels,
                                    router.selector))
    gateway_plan = None
    if shared.gateway:
        gateway_plan = _gateway_plan(spec, roles, dialect.engine, common_labels,
                                     shared.sidecar_connector or "", shared.picker, durations)
    monitoring = None
    if shared.monitored:
        from .monitoring import monitoring_plan
        monitoring = monitoring_plan(
            base, dialect.engine, spec.spec.monitoring.interval,
            [(r.name, r.mode, r.kv_transfer.connector if r.kv_transfer else "",
              r.admission is not None) for r in roles],
            sizing_by_role, router is not None, gateway_plan is not None,
            spec.spec.engine.version)
        monitoring = dataclasses.replace(
            monitoring, labels=dict(common_labels) | dict(spec.spec.monitoring.labels))
    dashboard = None
    if shared.monitored and spec.spec.monitoring.dashboard:
        from .dashboard import dashboard_plan
        dashboard = dashboard_plan(base, dialect.engine,
                                   [(r.name, r.mode, r.admission is not None) for r in roles],
                                   sizing_by_role, model.prediction if timed else None,
                                   dict(common_labels) | dict(spec.spec.monitoring.labels))
    platform = spec.spec.platform
    disaggregated = None
    if platform is not None and platform.lws is not None and platform.lws.disaggregatedSet:
        # Checked: every role a LeaderWorkerSet (LWS005), the router selects by label (LWS006).
        lws_roles = [w for w in out.workloads if w.kind == "LeaderWorkerSet"]
        disaggregated = DisaggregatedSetPlan(
            base, "disaggregatedset.yaml", dict(common_labels), lws_roles,
            ", ".join(w.role for w in lws_roles))
    policies = network_policies(spec, base, common_labels, out.workloads, router, gateway_plan) \
        if security.network_policy_waiver(spec) is None else []
    return DeploymentPlan(base, spec.metadata.namespace, common_labels, out.workloads,
                          out.services, router, out.env_files, out.role_plans,
                          engine=dialect.engine, dialect=dialect.version, pdbs=out.pdbs,
                          monitoring=monitoring, gateway=gateway_plan,
                          disaggregated=disaggregated, dashboard=dashboard,
                          scaled_objects=out.scaled, network_policies=policies)


def _router_plan(spec: InferenceDeployment, roles: list[RoleInput],
                 endpoints: dict[str, list[str]], common_labels: dict[str, str],
                 startup_s: int, discovery: Discovery | None,
                 durations: Durations) -> RouterPlan:
    """The router: waits ``startup_s`` (the slowest role's cold start) for its engines and
    ``durations.request_timeout_s`` for a request (generator/durations.py: the longest request),
    drains ``durations.drain_s`` on SIGTERM (the engines' drain: the mean request with margin)
    after a preStop pause; runs with
    ``spec.pod``'s pull secrets, priority class, scheduler, labels and annotations (not its
    resources, volumes, affinity or service account: those are the engines'), under
    ``router.serviceAccountName`` or, when it discovers its engines, its own ServiceAccount (the
    pod-watch Role is bound to it, never to the engines' account)."""
    cfg = spec.spec.router
    connector = next(r.kv_transfer.connector for r in roles
                     if r.mode == "prefill" and r.kv_transfer is not None)
    drain = durations.drain_s
    launch = router_launch(spec.spec.engine.name, port=cfg.port, policy=cfg.policy,
                           connector=connector, prefill_urls=endpoints["prefill"],
                           decode_urls=endpoints["decode"], startup_s=startup_s,
                           image=cfg.image, discovery=discovery, version=cfg.version,
                           drain_s=drain, request_timeout_s=durations.request_timeout_s)
    labels = {**common_labels, L_COMPONENT: "router", L_ROLE: "router"}
    # vllm-router's image runs its binary as any user; smg's is an engine image (security.py)
    nonroot = launch.command[:1] == ("vllm-router",)
    skips = security.skip_annotations(security.control_waivers(
        image=launch.image, api_token="router-api-token" if discovery is not None else None,
        root=None if nonroot else "smg-root",
        network_policy=security.network_policy_waiver(spec)))
    return RouterPlan(
        name=router_name(spec.metadata.name),
        labels=labels,
        selector={L_INSTANCE: spec.metadata.name, L_ROLE: "router"},
        image=launch.image, args=list(launch.args), port=cfg.port,
        metrics_port=launch.metrics_port, replicas=cfg.replicas or ROUTER_REPLICAS,
        command=list(launch.command), prestop_s=PRESTOP_S, grace_s=PRESTOP_S + drain + 5,
        probes=router_probes(startup_s),
        resources={"requests": dict(ROUTER_RESOURCES), "limits": dict(ROUTER_RESOURCES)},
        security_context={**CONTROL_SECURITY, **(NONROOT if nonroot else {})},
        service_account=cfg.serviceAccountName
        or (router_name(spec.metadata.name) if discovery is not None else None),
        own_service_account=discovery is not None and not cfg.serviceAccountName,
        discovery=discovery is not None, annotations=skips,
        **_control_pod(spec, labels, skips))


#: securityContext of moegen's own control containers (router, endpoint picker): they write
#: nothing outside their /tmp emptyDir (generator/security.py).
CONTROL_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                    "readOnlyRootFilesystem": True}
#: ... and the user of those whose image allows a non-root one (security.NONROOT_UID).
NONROOT = {"runAsNonRoot": True, "runAsUser": security.NONROOT_UID}


def _control_pod(spec: InferenceDeployment, labels: dict[str, str],
                 annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``spec.pod`` settings a platform enforces that the router and the endpoint picker
    take: pull secrets, priority class, scheduler, labels (under ``labels``) and annotations
    (+ ``annotations``); not the engines' resources, volumes or affinity."""
    d = spec.spec.pod
    return {"image_pull_secrets": [{"name": n} for n in (d.imagePullSecrets or [])] if d else [],
            "priority_class": d.priorityClassName if d else None,
            "scheduler_name": d.schedulerName if d else None,
            "pod_labels": {**((d.labels or {}) if d else {}), **labels},
            "pod_annotations": {**((d.annotations or {}) if d else {}), **(annotations or {})}}


def _gateway_plan(spec: InferenceDeployment, roles: list[RoleInput], engine: str,
                  common_labels: dict[str, str], connector: str, release,
                  durations: Durations) -> GatewayPlan:
    """Router kind inference-gateway: the pool over the pods that serve the API, the endpoint
    picker (``spec.pod``'s pull secrets, priority class, scheduler, labels and annotations, as
    the router; ``router.serviceAccountName`` or its own ServiceAccount) and the route from
    ``router.gateway.parentRef``."""
    base = spec.metadata.name
    cfg = spec.spec.router
    pd = {"prefill", "decode"} <= {r.mode for r in roles}
    pool, epp, route = pool_name(base), epp_name(base), route_name(base)
    ports = sorted({p for r in roles for p in gw.engine_api_ports(r)})
    pool_spec = {
        "selector": {"matchLabels": {L_INSTANCE: base, L_API: "true"}},
        "targetPorts": [{"number": p} for p in ports],
        "endpointPickerRef": {"name": epp, "port": {"number": gw.EPP_GRPC_PORT}},
    }
    ref = cfg.gateway.parentRef   # set: rule RTR001
    parent = {"group": gw.GATEWAY_GROUP, "kind": "Gateway", "name": ref.name}
    if ref.namespace is not None:
        parent["namespace"] = ref.namespace
    route_spec = {
        "parentRefs": [parent],
        "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                   "backendRefs": [{"group": gw.POOL_GROUP, "kind": "InferencePool",
                                    "name": pool}],
                   "timeouts": {"request": gw.route_timeout(
                       durations.request_timeout_s if durations.longest_request_s is not None
                       else None)}}],
    }
    lws = spec.spec.platform.lws if spec.spec.platform is not None else None
    screener = gw.rollout_screener(release, base, [r.name for r in roles]) \
        if pd and lws is not None and lws.disaggregatedSet else None
    config = gw.epp_config(release, pd, screener)
    text = gw.config_text(config)
    labels = {**common_labels, L_COMPONENT: "endpoint-picker", L_ROLE: "endpoint-picker"}
    own_sa = not cfg.serviceAccountName
    image = cfg.image or release.image("epp")
    # the picker's image runs as 65532 (security.NONROOT_UID)
    skips = security.skip_annotations(security.control_waivers(
        image=image, api_token="picker-api-token", root=None,
        network_policy=security.network_policy_waiver(spec)))
    replicas = cfg.replicas or 1
    ha = replicas > 1

    def grpc(service: str) -> dict:
        return {"grpc": {"port": gw.EPP_HEALTH_PORT, "service": service if ha
                         else gw.EPP_HEALTH_SERVICE},
                "initialDelaySeconds": 5, "periodSeconds": 10}
    profiles = [{"name": prof["name"],
                 "scorers": [f"{p['pluginRef']} x{p['weight']}" for p in prof["plugins"]
                             if "weight" in p]}
                for prof in config["schedulingProfiles"]]
    return GatewayPlan(
        pool=pool, epp=epp, route=route, labels=dict(common_labels), epp_labels=labels,
        pool_spec=pool_spec, route_spec=route_spec,
        selector={L_INSTANCE: base, L_ROLE: "endpoint-picker"},
        image=image,
        args=gw.epp_args(release, engine, pool, spec.spec.monitoring is not None
                         and spec.spec.monitoring.enabled) + ([gw.EPP_HA_FLAG] if ha else [])
        + gw.experimental_args(release, config),
        replicas=replicas,
        ports=[{"name": "grpc", "containerPort": gw.EPP_GRPC_PORT, "protocol": "TCP"},
               {"name": "grpc-health", "containerPort": gw.EPP_HEALTH_PORT, "protocol": "TCP"},
               {"name": "metrics", "containerPort": gw.EPP_METRICS_PORT, "protocol": "TCP"}],
        service_ports=[{"name": "grpc-ext-proc", "port": gw.EPP_GRPC_PORT,
                        "targetPort": "grpc", "protocol": "TCP", "appProtocol": "http2"},
                       {"name": "http-metrics", "port": gw.EPP_METRICS_PORT,
                        "targetPort": "metrics", "protocol": "TCP"}],
        probes={"readinessProbe": grpc("readiness"), "livenessProbe": grpc("liveness")},
        resources={"requests": dict(gw.EPP_RESOURCES), "limits": dict(gw.EPP_RESOURCES)},
        config_file=gw.EPP_CONFIG_FILE, config_dir=gw.EPP_CONFIG_DIR, config_text=text,
        config_data={gw.EPP_CONFIG_FILE: text},
        rules=[dict(r) for r in gw.epp_rules(release) + (gw.EPP_HA_RULES if ha else [])],
        service_account=cfg.serviceAccountName or epp,
        own_service_account=own_sa, security_context={**CONTROL_SECURITY, **NONROOT},
        grace_s=max(gw.EPP_GRACE_S, termination_grace(durations.drain_s)),
        annotations=skips,
        **_control_pod(spec, labels, {gw.CONFIG_HASH_ANNOTATION: gw.config_hash(text), **skips}),
        profiles=profiles,
        parent=f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name,
        sidecar_connector=connector if pd else "")
