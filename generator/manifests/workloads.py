"""Per role, its Kubernetes objects: the LeaderWorkerSet or StatefulSets, Services, the
PodDisruptionBudget, the env file and the KEDA ScaledObject, with the engine launch they run.

:func:`add_role` is called by :func:`generator.manifests.plan.build_plan` once per role of the
deployment model (the role's layout, memory plan and host plan already computed there):

* ``lws`` and ``pod-per-rank`` workloads: one LeaderWorkerSet per role (size = pods per
  instance: one per node, or one per data-parallel rank); LWS restarts an instance as a group
  (``RecreateGroupOnPodRestart``, or ``RecreateGroupAfterStart`` for groups of several pods on
  a release that has it: generator/facts/lws.py restart_policy).
* ``statefulset`` (single-node instances only, rule LAY009): one StatefulSet per role, one pod
  per instance, with its headless Service.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..durations import Durations, timing_env
from ..engines import gateway as gw
from ..engines import sglang as sg
from ..engines.base import Dialect, EngineLaunch
from ..engines.caches import cache_env, cache_root
from ..engines.metrics import SGLANG_METRICS_FLAG
from ..engines.network import env_items, network_env
from ..engines.options import split_api_args
from ..engines.routers import (
    SMG_BOOTSTRAP_ANNOTATION,
    Discovery,
    discovery_supported,
    rendered_router,
)
from ..facts import lws as lwsv
from ..layout import RoleLayout
from ..naming import (
    SIZED_LOAD,
    L_API,
    L_COMPONENT,
    L_INSTANCE,
    L_MANAGED,
    L_METRICS,
    L_MODE,
    L_NAME,
    L_ROLE,
    LWS_WORKER_INDEX_LABEL,
    client_service,
    env_configmap,
    lws_name,
    lws_pod,
    statefulset_name,
    statefulset_pod,
)
from ..lifecycle import client_service as has_client_service
from ..lifecycle import rollout
from ..pods import effective_pod
from ..roles import RoleInput
from ..sizing import RoleSizing
from ..sizing.host import HostPlan
from ..spec.models import InferenceDeployment, Role
from .. import security
from .pods import (
    ENGINE_STARTUP_S,
    PodContext,
    PodPlan,
    launcher_context,
    pod_plan,
    pod_spec,
)
from .scaling import ScaledObjectPlan, scaled_object

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
#:   (vLLM/SGLang serve /health only once every rank joined): a deadlock (docs/design.md §4).
#: * restartPolicy: the group is re-created when a container restarts (the engines rendezvous
#:   only at start, rule LAY009): RecreateGroupOnPodRestart at once, or RecreateGroupAfterStart
#:   once no pod of the group is still pending, chosen by LWS release and group shape
#:   (generator/facts/lws.py restart_policy; kubernetes-sigs/lws#726).
#: * rollout maxSurge 0, maxUnavailable 1: a surge group would need a whole extra set of GPU
#:   nodes; groups are replaced one at a time.
LWS_STARTUP_POLICY = "LeaderCreated"
LWS_RESTART_POLICY = lwsv.ON_POD_RESTART
LWS_MAX_SURGE, LWS_MAX_UNAVAILABLE = 0, 1


#: StatefulSet podManagementPolicy: Parallel (pods start together; Kubernetes apps/v1).
STS_POD_MANAGEMENT = "Parallel"


@dataclass(frozen=True)
class WorkloadPlan:
    """A LeaderWorkerSet or StatefulSet of one role (one file).

    ``size``: pods per instance; ``worker``: the LWS worker template, None for single-pod
    instances (the LeaderWorkerSet then has only a workerTemplate, which LWS uses for the
    leader when leaderTemplate is unset: kubernetes-sigs/lws@v0.10.0:pkg/controllers/
    leaderworkerset_controller.go constructLeaderStatefulSetApplyConfiguration, the same since
    v0.3.0); ``selector``/``service_name``: StatefulSet only;
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


def _rollout(shared: SharedInputs, name: str) -> dict[str, int]:
    """maxSurge and maxUnavailable of role ``name``'s LeaderWorkerSet (generator/lifecycle.py)."""
    i = next(j for j, r in enumerate(shared.spec.spec.roles) if r.name == name)
    plan = rollout(shared.spec, shared.roles, i)
    return {"max_surge": plan.max_surge, "max_unavailable": plan.max_unavailable}


def _restart_policy(spec: InferenceDeployment, multi_pod: bool) -> tuple[str, dict[str, str]]:
    """(restartPolicy, LeaderWorkerSet annotations) of a role's LeaderWorkerSet: by
    ``platform.lws`` (release, explicit policy) and the group's shape (``multi_pod``:
    generator/facts/lws.py restart_policy; RecreateGroupAfterStart is a restartPolicy value from
    LWS v0.9 and an annotation over the default policy in v0.8, older releases: rule LWS003)."""
    platform = spec.spec.platform
    cfg = platform.lws if platform is not None else None
    return lwsv.restart_policy(cfg.version if cfg is not None else None,
                               cfg.restartPolicy if cfg is not None else None, multi_pod)


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


@dataclass(frozen=True)
class SharedInputs:
    """What every role's objects share: the deployment's name, labels, engine dialect, router
    kind and the decisions that depend on all roles.

    Attributes:
        spec, roles, dialect: the deployment model's spec, roles (all resolved) and dialect.
        base: ``metadata.name``; labels: the labels of every object.
        pd_router / gateway: router kind ``deployment`` (vllm-router, smg) / inference gateway.
        monitored: ``spec.monitoring.enabled``.
        discovery: the router finds its engines by label (None: static URLs).
        sidecar_connector: the routing sidecar's connector (inference gateway), else None.
        picker: the llm-d-router release of the endpoint picker and routing sidecar
            (``router.version``, engines/gateway.py ``release_for``), else None.
        durations: the predicted durations every timeout pair is derived from
            (generator/durations.py).
    """

    spec: InferenceDeployment
    roles: list[RoleInput]
    dialect: Dialect
    base: str
    labels: dict[str, str]
    pd_router: bool
    gateway: bool
    monitored: bool
    discovery: Discovery | None
    sidecar_connector: str | None
    picker: Any
    durations: Durations = field(default_factory=Durations)


def shared_inputs(spec: InferenceDeployment, roles: list[RoleInput],
                  dialect: Dialect, durations: Durations | None = None) -> SharedInputs:
    """The :class:`SharedInputs` of a checked deployment."""
    base = spec.metadata.name
    rendered = rendered_router(spec.spec)
    pd_router = rendered == "deployment"
    connector = next((r.kv_transfer.connector for r in roles
                      if r.mode == "prefill" and r.kv_transfer is not None), "")
    ports = {r.serving.port for r in roles if r.mode in ("prefill", "decode")}
    discovery = None
    if pd_router and spec.spec.router.discovery and len(ports) == 1 \
            and discovery_supported(dialect.engine, connector):
        discovery = Discovery(prefill={L_INSTANCE: base, L_MODE: "prefill", L_API: "true"},
                              decode={L_INSTANCE: base, L_MODE: "decode", L_API: "true"},
                              port=ports.pop())
    gateway = rendered == "gateway"
    return SharedInputs(
        spec=spec, roles=roles, dialect=dialect, base=base,
        labels={**spec.metadata.labels, L_NAME: base, L_INSTANCE: base, L_MANAGED: "moegen"},
        pd_router=pd_router, gateway=gateway,
        monitored=spec.spec.monitoring is not None and spec.spec.monitoring.enabled,
        discovery=discovery,
        sidecar_connector=gw.sidecar_connector(dialect.engine, connector) if gateway else None,
        picker=gw.release_for(spec.spec) if gateway else None,
        durations=durations or Durations())


@dataclass
class RoleObjects:
    """The objects of the roles added so far (:func:`add_role` appends), and the engine URLs the
    router dials: ``<pod>.<headless service>:<port>``, no namespace. The router's DNS search
    path (``<its namespace>.svc.cluster.local``) completes them, so a kustomize ``namespace:``
    over the base moves the router and its engines together."""

    workloads: list[WorkloadPlan] = field(default_factory=list)
    scaled: list[ScaledObjectPlan] = field(default_factory=list)
    services: list[ServicePlan] = field(default_factory=list)
    pdbs: list[PdbPlan] = field(default_factory=list)
    env_files: list[EnvFilePlan] = field(default_factory=list)
    role_plans: list[RolePlan] = field(default_factory=list)
    endpoints: dict[str, list[str]] = field(
        default_factory=lambda: {"prefill": [], "decode": [], "unified": []})


def role_launch(shared: SharedInputs, role_spec: Role, role: RoleInput,
                hplan: HostPlan | None, sizing: RoleSizing | None
                ) -> tuple[RoleInput, EngineLaunch, dict[str, Any] | None]:
    """The role as its engine runs it (behind the routing sidecar it moves to
    ``gw.SIDECAR_ENGINE_PORT``), its launch (derived flags, then the metrics flag, then the
    user's engineArgs: ENG004/ENG005 checked them) and the sidecar container (or None)."""
    dialect = shared.dialect
    sidecar = None
    if gw.has_sidecar(shared.spec.spec, role.mode):
        # The sidecar takes the role's port (the pool's target port); the engine moves
        # behind it (checked by PORT001).
        sidecar = gw.sidecar_container(shared.picker, dialect.engine, role.serving.port,
                                       shared.sidecar_connector or "", sg.BOOTSTRAP_PORT,
                                       role.rank_ports)
        role = replace(role, serving=replace(role.serving, port=gw.SIDECAR_ENGINE_PORT))
        if role.network.bindAddress == "podIP":
            # The sidecar dials its engine at localhost (llm-d/llm-d-router@v0.10.0:
            # pkg/sidecar/proxy/options.go:399) and the kubelet's probes and the PodMonitor
            # at the pod IP: the engine behind it listens on both (every interface of the
            # pod; the sidecar itself listens on every interface, proxy_helpers.go:33).
            # Rule NET091 says what that exposes with hostNetwork (generator/manifests/
            # addresses.py checks every such pair).
            role = replace(role, network=role.network.model_copy(update={"bindAddress": "all"}))
    launch = dialect.launch(role, sizing, hplan.startup_s if hplan is not None else None,
                            drain_s=shared.durations.drain_s)
    # Timeouts paired with another component (generator/durations.py).
    launch = replace(launch, env={**launch.env, **timing_env(shared.spec, dialect.engine,
                                                             role.mode, shared.durations)})
    # SGLang serves /metrics only with the flag: for Prometheus and the endpoint picker.
    if (shared.monitored or shared.gateway) and dialect.engine == "sglang":
        launch = replace(launch, common=(*launch.common, SGLANG_METRICS_FLAG))
    if role_spec.engineArgs:   # after the derived flags
        common, serving = split_api_args(role_spec.engineArgs)
        per_pod = tuple((*args, *serving) if serves else args
                        for args, serves in zip(launch.per_pod, launch.serves_api))
        launch = replace(launch, common=(*launch.common, *common), per_pod=per_pod)
    return role, launch, sidecar


def add_role(out: RoleObjects, shared: SharedInputs, role_spec: Role, role: RoleInput,
             hplan: HostPlan | None, sizing: RoleSizing | None) -> None:
    """Append one role's objects to ``out`` (see the module docstring)."""
    spec, dialect, base = shared.spec, shared.dialect, shared.base
    port = role.serving.port
    role, launch, sidecar = role_launch(shared, role_spec, role, hplan, sizing)
    out.role_plans.append(RolePlan(role.name, role.mode, role.layout, launch))
    lay = role.layout
    rlabels = {**shared.labels, L_COMPONENT: role.name, L_ROLE: role.name, L_MODE: role.mode}
    configmap = env_configmap(base, role.name)
    pool = spec.spec.nodePools[role_spec.nodePool]
    cache = cache_env(dialect.engine, dialect.requested,
                      cache_root(dialect.engine, dialect.requested, pool.gpu, lay))
    items = env_items(network_env(spec.spec.network, role.moe, role.kv_transfer, role.mnnvl)
                      + sorted(launch.env.items()) + cache,
                      {**spec.spec.network.env, **role_spec.env})
    out.env_files.append(EnvFilePlan(role.name, f"env/{role.name}.env", configmap, items))
    ctx = PodContext(spec=spec, role_spec=role_spec, role=role, launch=launch,
                     pool=pool, labels=rlabels,
                     launcher=launcher_context(launch, role.name,
                                               f"{dialect.label} {dialect.version} dialect"),
                     configmap=configmap, pod=effective_pod(spec.spec, role_spec),
                     host=hplan, sidecar=sidecar, drain_s=shared.durations.drain_s)
    # The pods whose /metrics the PodMonitor scrapes (SGLang: every node; vLLM: the API
    # pods, whose front end aggregates every DP rank).
    metrics = {L_METRICS: "true"} if shared.monitored else {}
    # Behind the inference gateway: which engine's metric names the picker reads (SGLang).
    metrics = {**metrics, **gw.engine_labels(shared.picker, dialect.engine)}
    # smg reads a discovered prefill pod's bootstrap port from this annotation.
    bootstrap = ({SMG_BOOTSTRAP_ANNOTATION: str(sg.BOOTSTRAP_PORT)}
                 if shared.discovery is not None and dialect.engine == "sglang"
                 and role.mode == "prefill" else {})
    client_selector = {L_INSTANCE: base, L_ROLE: role.name}
    if role_spec.workload in ("lws", "pod-per-rank"):
        if not all(launch.serves_api):
            client_selector = {**client_selector, LWS_WORKER_INDEX_LABEL: "0"}
        _add_lws(out, shared, ctx, rlabels, metrics, bootstrap, hplan, port)
    else:
        _add_statefulsets(out, shared, ctx, rlabels, metrics, bootstrap, port)
    out.pdbs.append(PdbPlan(f"{base}-{role.name}", f"{role.name}-pdb.yaml", rlabels,
                            {L_INSTANCE: base, L_ROLE: role.name}))
    # With the routing sidecar (decode behind the inference gateway) the role's API is the
    # sidecar: the engine behind it moved to gw.SIDECAR_ENGINE_PORT, and only the sidecar
    # runs the P/D protocol (llm-d routing sidecar: prefill first, then the local decode).
    # Behind a router the prefill/decode engines are no entry point (generator/lifecycle.py).
    target = gw.SIDECAR_PORT_NAME if sidecar is not None else "http"
    if has_client_service(spec, role.mode, sidecar is not None):
        out.services.append(ServicePlan(
            client_service(base, role.name), f"{role.name}-service.yaml", rlabels,
            client_selector,
            [{"name": "http", "port": port, "targetPort": target, "protocol": "TCP"}],
            headless=False))


def sized_load(spec: InferenceDeployment, role_spec: Role) -> dict[str, str]:
    """``{SIZED_LOAD: "concurrency=200 traffic=3500/1200 acceptance=0.7"}`` (the parts the
    spec sets), or ``{}``."""
    parts = []
    if role_spec.sizing.concurrency is not None:
        parts.append(f"concurrency={role_spec.sizing.concurrency}")
    t = spec.spec.traffic
    if t is not None:
        parts += [f"traffic={t.inputTokens}/{t.outputTokens}", f"acceptance={t.acceptance:g}"]
    return {SIZED_LOAD: " ".join(parts)} if parts else {}


def _add_lws(out: RoleObjects, shared: SharedInputs, ctx: PodContext, rlabels: dict[str, str],
             metrics: dict[str, str], bootstrap: dict[str, str], hplan: HostPlan | None,
             port: int) -> None:
    """The role's LeaderWorkerSet (its worker template the leader's for single-pod
    instances: LWS requires one), its ScaledObject, and the router's engine URLs."""
    spec, base, role, role_spec, launch = shared.spec, shared.base, ctx.role, ctx.role_spec, \
        ctx.launch
    lay = role.layout
    topology = role_spec.placement.topologyKey if role_spec.placement else None
    gang_labels, gang_annotations, tas = _gang(spec, lay.multi_pod)
    api = {L_API: "true"}
    n_pods = len(lay.pods)
    name = lws_name(base, role.name)
    host = "$(LWS_LEADER_ADDRESS)" if lay.multi_pod else None
    index_label = LWS_WORKER_INDEX_LABEL if lay.multi_pod else None
    restart_policy, restart_annotations = _restart_policy(spec, lay.multi_pod)
    leader = pod_plan(ctx, pod_spec(ctx, range(0, 1), index_label, host),
                      {**(api if launch.serves_api[0] else {}),
                       **(metrics if launch.binds_http(0) else {})},
                      {**tas, **(bootstrap if launch.serves_api[0] else {})})
    worker_serves = any(launch.serves_api[1:])
    worker_metrics = any(launch.binds_http(i) for i in range(1, n_pods))
    out.workloads.append(WorkloadPlan(
        kind="LeaderWorkerSet", name=name, file=f"{role.name}-lws.yaml", role=role.name,
        labels=rlabels | gang_labels, replicas=role_spec.replicas, size=n_pods,
        leader=leader,
        worker=pod_plan(ctx, pod_spec(ctx, range(1, n_pods), index_label, host),
                        {**(api if worker_serves else {}),
                         **(metrics if worker_metrics else {})},
                        {**tas, **(bootstrap if worker_serves else {})})
        if lay.multi_pod else None,
        annotations={**gang_annotations,
                     **({LWS_EXCLUSIVE_TOPOLOGY: topology} if topology else {}),
                     **restart_annotations, **sized_load(spec, role_spec)},
        restart_policy=restart_policy, autoscaled=role_spec.autoscaling is not None,
        **_rollout(shared, role.name)))
    if role_spec.autoscaling is not None:
        pool_name = role_spec.nodePool
        free = spec.spec.nodePools[pool_name].nodes - sum(
            o.layout.nodes_needed for o_spec, o in zip(spec.spec.roles, shared.roles)
            if o_spec.nodePool == pool_name and o.name != role.name)
        out.scaled.append(scaled_object(
            base, shared.dialect.engine, role_spec, name, lay,
            spec.spec.nodePools[pool_name], free,
            hplan.startup_s if hplan is not None else ENGINE_STARTUP_S,
            spec.spec.monitoring.prometheusUrl, spec.spec.engine.version))
    for g in range(role_spec.replicas):
        for i in range(n_pods):
            if launch.serves_api[i]:
                out.endpoints[role.mode].append(
                    f"http://{lws_pod(base, role.name, g, i)}.{name}:{port}")


def _add_statefulsets(out: RoleObjects, shared: SharedInputs, ctx: PodContext,
                      rlabels: dict[str, str], metrics: dict[str, str],
                      bootstrap: dict[str, str], port: int) -> None:
    """statefulset: one StatefulSet per role (single-node instances, LAY009; ``replicas`` =
    instances, so a template change rolls one instance at a time: Kubernetes apps/v1
    RollingUpdate, in reverse ordinal order; podManagementPolicy only affects scaling) with
    its headless Service, and the router's engine URLs (pod ``<name>-<r>``)."""
    base, role, role_spec, launch = shared.base, ctx.role, ctx.role_spec, ctx.launch
    gang_labels = _gang(shared.spec, False)[0]
    name = statefulset_name(base, role.name)
    selector = {L_INSTANCE: base, L_ROLE: role.name}
    leader = pod_plan(ctx, pod_spec(ctx, range(0, 1), None, None), {L_API: "true", **metrics},
                      bootstrap)
    out.workloads.append(WorkloadPlan(
        kind="StatefulSet", name=name, file=f"{role.name}-statefulset.yaml",
        role=role.name, labels=rlabels | gang_labels, replicas=role_spec.replicas, size=1,
        leader=leader, selector=selector, service_name=name,
        # checkov reads a StatefulSet's waivers on the object, not on its pod template; the
        # sized load, as on a LeaderWorkerSet, so that an import of the tree reads it back
        annotations={**{k: v for k, v in leader.annotations.items()
                        if k.startswith(security.SKIP_PREFIX)},
                     **sized_load(shared.spec, role_spec)}))
    out.services.append(ServicePlan(
        name, f"{role.name}-headless-service.yaml", rlabels, selector,
        [{"name": p.name, "port": p.port, "targetPort": p.port, "protocol": "TCP"}
         for p in launch.ports_of(0)], headless=True))
    for r in range(role_spec.replicas):
        out.endpoints[role.mode].append(
            f"http://{statefulset_pod(base, role.name, r)}.{name}:{port}")
