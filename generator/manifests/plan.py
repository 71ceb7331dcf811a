"""The deployment plan: every object, name, number and argument, computed before templates run.

Input: a spec that passed every check, with its role inputs (layout + model shape), the engine
dialect and the roles' memory plans. Output: a frozen :class:`DeploymentPlan` that the templates
only substitute and loop over. Object names and labels follow ``generator/naming.py``.

* ``lws`` and ``pod-per-rank`` workloads: one LeaderWorkerSet per role (size = pods per
  instance: one per node, or one per data-parallel rank); LWS restarts an instance as a group
  (``RecreateGroupOnPodRestart``).
* ``statefulset`` (single-node instances only, rule LAY009): one StatefulSet per instance with
  its headless Service.
"""

from __future__ import annotations

import dataclasses

from dataclasses import dataclass, field, replace
from typing import Any

from ..engines import gateway as gw
from ..engines import sglang as sg
from ..engines.base import Dialect, EngineLaunch, RoleInput
from ..engines.caches import cache_env, cache_root
from ..engines.metrics import SGLANG_METRICS_FLAG
from ..engines.network import env_items, network_env
from ..engines.options import split_api_args
from ..engines.routers import (
    NAMESPACE_ENV,
    SMG_BOOTSTRAP_ANNOTATION,
    Discovery,
    discovery_supported,
    rendered_router,
    router_launch,
)
from ..layout import RoleLayout
from ..naming import (
    L_API,
    L_COMPONENT,
    L_INSTANCE,
    L_MANAGED,
    L_METRICS,
    L_MODE,
    L_NAME,
    L_REPLICA,
    L_ROLE,
    LWS_WORKER_INDEX_LABEL,
    client_service,
    env_configmap,
    epp_name,
    lws_name,
    lws_pod,
    pool_name,
    route_name,
    router_name,
    statefulset_name,
)
from ..pods import effective_pod
from ..sizing import RoleSizing
from ..sizing.host import HostPlan
from ..spec.models import InferenceDeployment
from .dashboard import DashboardPlan, dashboard_plan
from .scaling import ScaledObjectPlan, scaled_object
from . import lws as lwsv
from .monitoring import MonitoringPlan, monitoring_plan
from .pods import (
    ENGINE_STARTUP_S,
    LIVENESS_FAILURES,
    LIVENESS_PERIOD_S,
    READINESS_PERIOD_S,
    STARTUP_PERIOD_S,
    PodContext,
    PodPlan,
    launcher_context,
    pod_plan,
    pod_spec,
)


def router_probes(startup_s: int) -> dict[str, Any]:
    """Router probes, TCP on its HTTP port. The startup probe allows the engines' startup
    budget (the slowest role's, sizing/host.py) plus one minute: vllm-router and smg bind their
    port only once the engines answer their health checks, and they are told to wait
    ``startup_s`` (engines/routers.py)."""
    return {
        "startupProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": STARTUP_PERIOD_S,
                         "failureThreshold": (startup_s + 60) // STARTUP_PERIOD_S},
        "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": READINESS_PERIOD_S},
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
#: PodDisruptionBudget per role: one engine pod at a time may be evicted (a drain). Any pod of a
#: LeaderWorkerSet group takes its group down (RecreateGroupOnPodRestart), so this keeps
#: voluntary disruptions to one instance at a time (Kubernetes policy/v1).
PDB_MAX_UNAVAILABLE = 1
#: Gang scheduling (docs/spec.md §6.2; kueue.sigs.k8s.io docs "Run LeaderWorkerSet" and
#: "Topology-Aware Scheduling"; lws docs/examples/sample/gang-scheduling):
#: * Kueue (LWS integration from v0.11, StatefulSet from v0.9): the queue label on the workload;
#:   one Workload per LWS group (pod sets leader/worker). With platform.topology, Kueue's
#:   topology-aware scheduling keeps a group in one domain: the required-topology annotation on
#:   both templates and one pod-set group name (v0.13+); Kueue ignores pod affinity when placing.
#: * Volcano: the queue annotation on the LeaderWorkerSet (copied to its PodGroups; volcano
#:   mutate_podgroup.go), pods on the volcano scheduler.
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PODSET_GROUP = "kueue.x-k8s.io/podset-group-name"
KUEUE_GROUP_NAME = "engine"
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"
#: LeaderWorkerSet annotation that gives each group a topology domain of its own
#: (kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go ExclusiveKeyAnnotationKey).
LWS_EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"


#: LeaderWorkerSet policies (kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go):
#: * startupPolicy LeaderCreated: workers start with the leader and wait for its rendezvous port
#:   in the launcher; LeaderReady would wait for the leader's readiness, which needs the workers
#:   (vLLM/SGLang serve /health only once every rank joined): a deadlock (docs/field-failures.md
#:   #5).
#: * restartPolicy RecreateGroupOnPodRestart: any container restart recreates the whole group;
#:   the engines rendezvous only at start (rule LAY009).
#: * rollout maxSurge 0, maxUnavailable 1: a surge group would need a whole extra set of GPU
#:   nodes; groups are replaced one at a time.
LWS_STARTUP_POLICY = "LeaderCreated"
LWS_RESTART_POLICY = "RecreateGroupOnPodRestart"
LWS_MAX_SURGE, LWS_MAX_UNAVAILABLE = 0, 1
#: StatefulSet podManagementPolicy: Parallel (pods start together; Kubernetes apps/v1).
STS_POD_MANAGEMENT = "Parallel"


@dataclass(frozen=True)
class WorkloadPlan:
    """A LeaderWorkerSet or StatefulSet of one role (one file).

    ``size``: pods per instance; ``worker``: the LWS worker template (the leader's for
    single-pod instances: LWS requires one); ``selector``/``service_name``: StatefulSet only;
    the policies: see :data:`LWS_STARTUP_POLICY` and the constants beside it.
    """

    kind: str
    name: str
    file: str
    role: str
    labels: dict[str, str]
    replicas: int
    size: int
    leader: PodPlan
    worker: PodPlan | None = None
    selector: dict[str, str] = field(default_factory=dict)
    service_name: str | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    startup_policy: str = LWS_STARTUP_POLICY
    restart_policy: str = LWS_RESTART_POLICY
    #: An autoscaler owns the instance count: the manifest leaves ``spec.replicas`` out, so an
    #: apply or a GitOps sync does not reset what the autoscaler set.
    autoscaled: bool = False
    max_surge: int = LWS_MAX_SURGE
    max_unavailable: int = LWS_MAX_UNAVAILABLE
    pod_management: str = STS_POD_MANAGEMENT


@dataclass(frozen=True)
class DisaggregatedSetPlan:
    """platform.lws.disaggregatedSet: the roles' LeaderWorkerSets as the roles of one
    DisaggregatedSet (generator/manifests/lws.py; ``roles`` are the workloads' plans, rendered
    under ``spec.roles[].spec`` instead of as LeaderWorkerSet files)."""

    name: str
    file: str
    labels: dict[str, str]
    roles: list[WorkloadPlan]
    role_names: str = ""
    api: str = lwsv.DS_API


@dataclass(frozen=True)
class ServicePlan:
    """A Service (headless rendezvous or client)."""

    name: str
    file: str
    labels: dict[str, str]
    selector: dict[str, str]
    ports: list[dict[str, Any]]
    headless: bool


@dataclass(frozen=True)
class PdbPlan:
    """A PodDisruptionBudget over one role's engine pods."""

    name: str
    file: str
    labels: dict[str, str]
    selector: dict[str, str]
    max_unavailable: int = PDB_MAX_UNAVAILABLE


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
    #: The router discovers its engines: it gets POD_NAMESPACE, a Role to list/watch pods and
    #: a RoleBinding for its service account (moegen's own unless spec.pod names one).
    discovery: bool = False
    own_service_account: bool = False
    namespace_env: str = NAMESPACE_ENV
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)


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
    #: For the review page: the scheduling profiles and their scorers, the Gateway, the
    #: sidecar's connector ("" without prefill/decode roles).
    profiles: list[dict[str, Any]] = field(default_factory=list)
    parent: str = ""
    sidecar_connector: str = ""


@dataclass(frozen=True)
class EnvFilePlan:
    """One role's env file ``env/<role>.env`` and the ConfigMap generated from it."""

    role: str
    path: str
    configmap: str
    items: list[tuple[str, str]]


@dataclass(frozen=True)
class RolePlan:
    """Per role: the launch (for tests and conformance) and the role's layout."""

    name: str
    mode: str
    layout: RoleLayout
    launch: EngineLaunch


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


def build_plan(spec: InferenceDeployment, roles: list[RoleInput], dialect: Dialect,
               sizing: list[RoleSizing], host: list[HostPlan] | None = None,
               prediction=None) -> DeploymentPlan:
    """Build the plan of a spec that passed every check (raises nothing for valid input).

    ``sizing``: the roles' memory plans (their numbers are pinned on the command lines);
    ``host``: the roles' host resources and startup budgets, in role order (pods then carry
    only the user's requests when it is missing); ``prediction``: the roles' predicted
    figures (:mod:`generator.capacity.predict`), the dashboard's reference lines.
    """
    sizing_by_role = {z.name: z for z in sizing}
    host_plans = list(host) if host else [None] * len(roles)
    meta = spec.metadata
    base, ns = meta.name, meta.namespace
    common_labels = {**meta.labels, L_NAME: base, L_INSTANCE: base, L_MANAGED: "moegen"}
    workloads: list[WorkloadPlan] = []
    scaled: list[ScaledObjectPlan] = []
    services: list[ServicePlan] = []
    pdbs: list[PdbPlan] = []
    env_files: list[EnvFilePlan] = []
    role_plans: list[RolePlan] = []
    # Engine URLs the router dials: ``<pod>.<headless service>:<port>``, no namespace. The
    # router's DNS search path (``<its namespace>.svc.cluster.local``) completes them, so a
    # kustomize ``namespace:`` over the base moves the router and its engines together.
    endpoints: dict[str, list[str]] = {"prefill": [], "decode": [], "unified": []}

    rendered = rendered_router(spec.spec)
    pd_router = rendered == "deployment"
    gateway = rendered == "gateway"
    monitored = spec.spec.monitoring is not None and spec.spec.monitoring.enabled
    connector = next((r.kv_transfer.connector for r in roles
                      if r.mode == "prefill" and r.kv_transfer is not None), "")
    ports = {r.serving.port for r in roles if r.mode in ("prefill", "decode")}
    discovery = None
    if pd_router and spec.spec.router.discovery and len(ports) == 1 \
            and discovery_supported(dialect.engine, connector):
        discovery = Discovery(prefill={L_INSTANCE: base, L_MODE: "prefill", L_API: "true"},
                              decode={L_INSTANCE: base, L_MODE: "decode", L_API: "true"},
                              port=ports.pop())

    sidecar_connector = gw.sidecar_connector(dialect.engine, connector) if gateway else None
    restart_policy, restart_annotations = _restart_policy(spec)
    for role_spec, role, hplan in zip(spec.spec.roles, roles, host_plans):
        port = role.serving.port
        sidecar = None
        if gw.has_sidecar(spec.spec, role.mode):
            # The sidecar takes the role's port (the pool's target port); the engine moves
            # behind it (checked by PORT001).
            sidecar = gw.sidecar_container(dialect.engine, port, sidecar_connector or "",
                                           sg.BOOTSTRAP_PORT)
            role = replace(role, serving=replace(role.serving, port=gw.SIDECAR_ENGINE_PORT))
        launch = dialect.launch(role, sizing_by_role.get(role.name),
                                hplan.startup_s if hplan is not None else None)
        # SGLang serves /metrics only with the flag: for Prometheus and the endpoint picker.
        if (monitored or gateway) and dialect.engine == "sglang":
            launch = replace(launch, common=(*launch.common, SGLANG_METRICS_FLAG))
        if role_spec.engineArgs:   # checked by ENG004/ENG005; after the derived flags
            common, serving = split_api_args(role_spec.engineArgs)
            per_pod = tuple((*args, *serving) if serves else args
                            for args, serves in zip(launch.per_pod, launch.serves_api))
            launch = replace(launch, common=(*launch.common, *common), per_pod=per_pod)
        role_plans.append(RolePlan(role.name, role.mode, role.layout, launch))
        lay = role.layout
        rlabels = {**common_labels, L_COMPONENT: role.name, L_ROLE: role.name, L_MODE: role.mode}
        configmap = env_configmap(base, role.name)
        pool = spec.spec.nodePools[role_spec.nodePool]
        cache = cache_env(dialect.engine, dialect.requested,
                          cache_root(dialect.engine, dialect.requested, pool.gpu, lay))
        items = env_items(network_env(spec.spec.network, role.moe, role.kv_transfer, role.mnnvl)
                          + sorted(launch.env.items()) + cache,
                          {**spec.spec.network.env, **role_spec.env})
        env_files.append(EnvFilePlan(role.name, f"env/{role.name}.env", configmap, items))
        ctx = PodContext(spec=spec, role_spec=role_spec, role=role, launch=launch,
                         pool=pool, labels=rlabels,
                         launcher=launcher_context(launch, role.name,
                                                   f"{dialect.label} {dialect.version} dialect"),
                         configmap=configmap, pod=effective_pod(spec.spec, role_spec),
                         host=hplan, sidecar=sidecar)
        topology = role_spec.placement.topologyKey if role_spec.placement else None
        gang_labels, gang_annotations, tas = _gang(spec, lay.multi_pod)
        api = {L_API: "true"}
        # The pods whose /metrics the PodMonitor scrapes (SGLang: every node; vLLM: the API
        # pods, whose front end aggregates every DP rank).
        metrics = {L_METRICS: "true"} if monitored else {}
        # smg reads a discovered prefill pod's bootstrap port from this annotation.
        bootstrap = ({SMG_BOOTSTRAP_ANNOTATION: str(sg.BOOTSTRAP_PORT)}
                     if discovery is not None and dialect.engine == "sglang"
                     and role.mode == "prefill" else {})
        client_selector = {L_INSTANCE: base, L_ROLE: role.name}
        n_pods = len(lay.pods)
        if role_spec.workload in ("lws", "pod-per-rank"):
            name = lws_name(base, role.name)
            host = "$(LWS_LEADER_ADDRESS)" if lay.multi_pod else None
            index_label = LWS_WORKER_INDEX_LABEL if lay.multi_pod else None
            leader = pod_plan(ctx, pod_spec(ctx, range(0, 1), index_label, host),
                              {**(api if launch.serves_api[0] else {}),
                               **(metrics if launch.binds_http(0) else {})},
                              {**tas, **(bootstrap if launch.serves_api[0] else {})})
            worker_serves = any(launch.serves_api[1:])
            worker_metrics = any(launch.binds_http(i) for i in range(1, n_pods))
            workloads.append(WorkloadPlan(
                kind="LeaderWorkerSet", name=name, file=f"{role.name}-lws.yaml", role=role.name,
                labels=rlabels | gang_labels, replicas=role_spec.replicas, size=n_pods,
                leader=leader,
                worker=pod_plan(ctx, pod_spec(ctx, range(1, n_pods), index_label, host),
                                {**(api if worker_serves else {}),
                                 **(metrics if worker_metrics else {})},
                                {**tas, **(bootstrap if worker_serves else {})})
                if lay.multi_pod
                else leader,
                annotations={**gang_annotations,
                             **({LWS_EXCLUSIVE_TOPOLOGY: topology} if topology else {}),
                             **restart_annotations},
                restart_policy=restart_policy, autoscaled=role_spec.autoscaling is not None))
            if role_spec.autoscaling is not None:
                pool_name = role_spec.nodePool
                free = spec.spec.nodePools[pool_name].nodes - sum(
                    o.layout.nodes_needed for o_spec, o in zip(spec.spec.roles, roles)
                    if o_spec.nodePool == pool_name and o.name != role.name)
                scaled.append(scaled_object(
                    base, dialect.engine, role_spec, name, lay,
                    spec.spec.nodePools[pool_name], free,
                    hplan.startup_s if hplan is not None else ENGINE_STARTUP_S,
                    spec.spec.monitoring.prometheusUrl, spec.spec.engine.version))
            if not all(launch.serves_api):
                client_selector = {**client_selector, LWS_WORKER_INDEX_LABEL: "0"}
            for g in range(role_spec.replicas):
                for i in range(n_pods):
                    if launch.serves_api[i]:
                        endpoints[role.mode].append(
                            f"http://{lws_pod(base, role.name, g, i)}.{name}:{port}")
        else:  # statefulset: one single-pod StatefulSet per instance (LAY009)
            shared = pod_spec(ctx, range(0, 1), None, None)
            for r in range(role_spec.replicas):
                name = statefulset_name(base, role.name, r)
                replica = {L_REPLICA: str(r)}
                selector = {L_INSTANCE: base, L_ROLE: role.name, **replica}
                workloads.append(WorkloadPlan(
                    kind="StatefulSet", name=name, file=f"{role.name}-{r}-statefulset.yaml",
                    role=role.name, labels=rlabels | replica | gang_labels, replicas=1, size=1,
                    leader=pod_plan(ctx, shared, {**replica, **api, **metrics}, bootstrap),
                    selector=selector, service_name=name))
                services.append(ServicePlan(
                    name, f"{role.name}-{r}-headless-service.yaml", rlabels | replica, selector,
                    [{"name": p.name, "port": p.port, "targetPort": p.port, "protocol": "TCP"}
                     for p in launch.ports_of(0)], headless=True))
                endpoints[role.mode].append(f"http://{name}-0.{name}:{port}")
        pdbs.append(PdbPlan(f"{base}-{role.name}", f"{role.name}-pdb.yaml", rlabels,
                            {L_INSTANCE: base, L_ROLE: role.name}))
        # With the routing sidecar (decode behind the inference gateway) the role's API is the
        # sidecar: the engine behind it moved to gw.SIDECAR_ENGINE_PORT, and only the sidecar
        # runs the P/D protocol (llm-d routing sidecar: prefill first, then the local decode).
        target = gw.SIDECAR_PORT_NAME if sidecar is not None else "http"
        services.append(ServicePlan(
            client_service(base, role.name), f"{role.name}-service.yaml", rlabels, client_selector,
            [{"name": "http", "port": port, "targetPort": target, "protocol": "TCP"}],
            headless=False))

    router = None
    if pd_router:
        startup = max((h.startup_s for h in host_plans if h is not None),
                      default=ENGINE_STARTUP_S)
        router = _router_plan(spec, roles, endpoints, common_labels, startup, discovery)
    gateway_plan = None
    if gateway:
        gateway_plan = _gateway_plan(spec, roles, dialect.engine, common_labels,
                                     sidecar_connector or "")
    monitoring = None
    if monitored:
        monitoring = monitoring_plan(
            base, dialect.engine, spec.spec.monitoring.interval,
            [(r.name, r.mode, r.kv_transfer.connector if r.kv_transfer else "",
              r.admission is not None) for r in roles],
            sizing_by_role, router is not None, gateway_plan is not None)
        monitoring = dataclasses.replace(
            monitoring, labels=dict(common_labels) | dict(spec.spec.monitoring.labels))
    dashboard = None
    if monitored and spec.spec.monitoring.dashboard:
        dashboard = dashboard_plan(base, dialect.engine,
                                   [(r.name, r.mode, r.admission is not None) for r in roles],
                                   sizing_by_role, prediction,
                                   dict(common_labels) | dict(spec.spec.monitoring.labels))
    platform = spec.spec.platform
    disaggregated = None
    if platform is not None and platform.lws is not None and platform.lws.disaggregatedSet:
        # Checked: every role a LeaderWorkerSet (LWS005), the router selects by label (LWS006).
        disaggregated = DisaggregatedSetPlan(
            base, "disaggregatedset.yaml", dict(common_labels),
            [w for w in workloads if w.kind == "LeaderWorkerSet"],
            ", ".join(w.role for w in workloads if w.kind == "LeaderWorkerSet"))
    return DeploymentPlan(base, ns, common_labels, workloads, services, router, env_files,
                          role_plans, engine=dialect.engine, dialect=dialect.version, pdbs=pdbs,
                          monitoring=monitoring, gateway=gateway_plan,
                          disaggregated=disaggregated, dashboard=dashboard,
                          scaled_objects=scaled)


def _restart_policy(spec: InferenceDeployment) -> tuple[str, dict[str, str]]:
    """(restartPolicy, LeaderWorkerSet annotations) for ``platform.lws.restartPolicy``:
    RecreateGroupAfterStart is a restartPolicy value from LWS v0.9 and an annotation over the
    default policy in v0.8 (generator/manifests/lws.py; older releases: rule LWS003)."""
    platform = spec.spec.platform
    cfg = platform.lws if platform is not None else None
    if cfg is None or cfg.restartPolicy == LWS_RESTART_POLICY:
        return LWS_RESTART_POLICY, {}
    if lwsv.has(cfg.version, "recreateGroupAfterStart"):
        return cfg.restartPolicy, {}
    return LWS_RESTART_POLICY, {lwsv.RECREATE_AFTER_START_ANNOTATION: "true"}


def _gang(spec: InferenceDeployment, multi_pod: bool
          ) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(workload labels, workload annotations, pod-template annotations) of the platform's gang
    scheduler (see :data:`KUEUE_QUEUE_LABEL` and the constants beside it)."""
    platform = spec.spec.platform
    sched = platform.scheduler if platform is not None else None
    if sched is None or sched.kind == "default":
        return {}, {}, {}
    if sched.kind == "volcano":
        return {}, ({VOLCANO_QUEUE: sched.queue} if sched.queue else {}), {}
    tas = {}
    if platform.topology is not None and multi_pod:
        tas = {KUEUE_REQUIRED_TOPOLOGY: platform.topology.key, KUEUE_PODSET_GROUP: KUEUE_GROUP_NAME}
    return {KUEUE_QUEUE_LABEL: sched.queue or ""}, {}, tas


def _router_plan(spec: InferenceDeployment, roles: list[RoleInput],
                 endpoints: dict[str, list[str]], common_labels: dict[str, str],
                 startup_s: int, discovery: Discovery | None) -> RouterPlan:
    """The router: waits ``startup_s`` (the slowest role's cold start) for its engines; runs with
    ``spec.pod``'s pull secrets, service account, priority class, scheduler, labels and
    annotations (not its resources, volumes or affinity: those are the engines')."""
    cfg = spec.spec.router
    connector = next(r.kv_transfer.connector for r in roles
                     if r.mode == "prefill" and r.kv_transfer is not None)
    launch = router_launch(spec.spec.engine.name, port=cfg.port, policy=cfg.policy,
                           connector=connector, prefill_urls=endpoints["prefill"],
                           decode_urls=endpoints["decode"], startup_s=startup_s,
                           image=cfg.image, discovery=discovery)
    defaults = spec.spec.pod
    labels = {**common_labels, L_COMPONENT: "router", L_ROLE: "router"}
    return RouterPlan(
        name=router_name(spec.metadata.name),
        labels=labels,
        selector={L_INSTANCE: spec.metadata.name, L_ROLE: "router"},
        image=launch.image, args=list(launch.args), port=cfg.port,
        metrics_port=launch.metrics_port, replicas=cfg.replicas, command=list(launch.command),
        probes=router_probes(startup_s),
        resources={"requests": dict(ROUTER_RESOURCES), "limits": dict(ROUTER_RESOURCES)},
        security_context=dict(CONTROL_SECURITY),
        service_account=(defaults.serviceAccountName if defaults else None)
        or (router_name(spec.metadata.name) if discovery is not None else None),
        own_service_account=discovery is not None
        and not (defaults and defaults.serviceAccountName),
        discovery=discovery is not None,
        **_control_pod(spec, labels))


#: securityContext of moegen's own control containers (router, endpoint picker).
CONTROL_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


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
                  common_labels: dict[str, str], connector: str) -> GatewayPlan:
    """Router kind inference-gateway: the pool over the pods that serve the API, the endpoint
    picker (``spec.pod``'s pull secrets, service account, priority class, scheduler, labels
    and annotations, as the router) and the route from ``router.gateway.parentRef``."""
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
                   "timeouts": {"request": gw.ROUTE_REQUEST_TIMEOUT}}],
    }
    config = gw.epp_config(pd)
    text = gw.config_text(config)
    defaults = spec.spec.pod
    labels = {**common_labels, L_COMPONENT: "endpoint-picker", L_ROLE: "endpoint-picker"}
    own_sa = not (defaults and defaults.serviceAccountName)
    grpc = {"grpc": {"port": gw.EPP_HEALTH_PORT, "service": gw.EPP_HEALTH_SERVICE},
            "initialDelaySeconds": 5, "periodSeconds": 10}
    profiles = [{"name": prof["name"],
                 "scorers": [f"{p['pluginRef']} x{p['weight']}" for p in prof["plugins"]
                             if "weight" in p]}
                for prof in config["schedulingProfiles"]]
    return GatewayPlan(
        pool=pool, epp=epp, route=route, labels=dict(common_labels), epp_labels=labels,
        pool_spec=pool_spec, route_spec=route_spec,
        selector={L_INSTANCE: base, L_ROLE: "endpoint-picker"},
        image=cfg.image or gw.EPP_IMAGE,
        args=gw.epp_args(engine, pool, spec.spec.monitoring is not None
                         and spec.spec.monitoring.enabled), replicas=cfg.replicas,
        ports=[{"name": "grpc", "containerPort": gw.EPP_GRPC_PORT, "protocol": "TCP"},
               {"name": "grpc-health", "containerPort": gw.EPP_HEALTH_PORT, "protocol": "TCP"},
               {"name": "metrics", "containerPort": gw.EPP_METRICS_PORT, "protocol": "TCP"}],
        service_ports=[{"name": "grpc-ext-proc", "port": gw.EPP_GRPC_PORT,
                        "targetPort": "grpc", "protocol": "TCP", "appProtocol": "http2"},
                       {"name": "http-metrics", "port": gw.EPP_METRICS_PORT,
                        "targetPort": "metrics", "protocol": "TCP"}],
        probes={"readinessProbe": grpc, "livenessProbe": grpc},
        resources={"requests": dict(gw.EPP_RESOURCES), "limits": dict(gw.EPP_RESOURCES)},
        config_file=gw.EPP_CONFIG_FILE, config_dir=gw.EPP_CONFIG_DIR, config_text=text,
        config_data={gw.EPP_CONFIG_FILE: text},
        rules=[dict(r) for r in gw.EPP_RULES],
        service_account=(defaults.serviceAccountName if not own_sa else epp),
        own_service_account=own_sa, security_context=dict(CONTROL_SECURITY),
        **_control_pod(spec, labels, {gw.CONFIG_HASH_ANNOTATION: gw.config_hash(text)}),
        profiles=profiles,
        parent=f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name,
        sidecar_connector=connector if pd else "")
