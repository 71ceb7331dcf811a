"""Engine pod templates: the launcher script's context, env, ports, resources, volumes and probes.

Everything is computed here; ``templates/_pod.yaml.j2`` and ``_launch.sh.j2`` only substitute.
Timing constants name their reason; engine facts come from the dialect's :class:`EngineLaunch`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from ..catalog import GPUS
from ..engines.base import LEADER_IP, POD_IP, EngineLaunch, Port
from ..engines.caches import CACHE_MOUNT
from ..naming import L_INSTANCE, L_ROLE, LWS_GROUP_KEY_LABEL
from ..pods import DRAIN_S, PRESTOP_S, STARTUP_PERIOD_S, PodSettings, termination_grace
from ..roles import RoleInput
from .. import security
from ..sizing.host import EPHEMERAL_BASE_GIB, RAY_RENDEZVOUS_S, HostPlan, PodResources
from ..spec.models import InferenceDeployment, NodePool, Role

#: Startup probe: every STARTUP_PERIOD_S for the role's cold-start budget (sizing/host.py:
#: the pod's share of the checkpoint at the stated read bandwidth + JIT warm-up + rendezvous). The
#: engines' budget when no host plan is at hand (what a router waits for otherwise): 30 min
#: (llm-d allows 45 min; kserve LLMInferenceService 30 min).
ENGINE_STARTUP_S = 1800
#: Readiness every 10 s (3 misses = out of the Service) and liveness every 30 s with 5 misses
#: and 10 s timeouts: a 2.5 min grace so a long decode step or GC pause does not restart a
#: 20-minute load (liveness only starts after the startup probe; llm-d guides use 30 s x 3).
READINESS_PERIOD_S, READINESS_FAILURES = 10, 3
LIVENESS_PERIOD_S, LIVENESS_FAILURES, LIVENESS_TIMEOUT_S = 30, 5, 10
#: Workers wait for the leader's rendezvous port (DNS name resolved, then a TCP connect every
#: 5 s) for up to 240 x 5 s = 20 min, then exit non-zero: a headless vLLM engine gives up 5 min
#: after dialling a leader that is not there (HANDSHAKE_TIMEOUT_MINS, vllm/v1/engine/core.py),
#: and an empty address must never reach the engine (kserve PR#5155, aws-do-eks PR#62). The
#: leader pulls the same image and starts at the same time (LWS startupPolicy LeaderCreated).
RESOLVE_TRIES, RESOLVE_SLEEP_S = 240, 5
#: A Ray leader waits for every pod's Ray node to be alive before its engine starts, as vLLM's
#: multi-node-serving.sh leader does (vllm-project/vllm@v0.8.5:examples/online_serving/
#: multi-node-serving.sh polls every 5 s), but as long as a worker waits for the leader
#: (RESOLVE_TRIES x RESOLVE_SLEEP_S = 20 min, not the script's ray_init_timeout of 300 s): a
#: worker whose node pulls the image slower no longer restarts the group. The wait is a
#: deadline on the clock, not a count of polls (each poll starts a Python process that imports
#: Ray and joins the cluster, seconds of its own), so it ends within the startup budget's
#: rendezvous (sizing/host.py RAY_RENDEZVOUS_S) and the startup probe never kills a leader
#: still waiting. vLLM 0.33.0 would itself wait up to 1800 s for a placement group the cluster
#: cannot hold yet (vllm/v1/executor/ray_utils.py PG_WAIT_TIMEOUT, _wait_until_pg_ready); the
#: wait here fails sooner, inside the probe's budget, and says how many nodes it saw.


#: The pod's index in its instance and the leader's DNS name, as the pod template defines them.
INDEX_ENV, LEADER_HOST_ENV = "MOEGEN_POD_INDEX", "MOEGEN_LEADER_HOST"


@dataclass(frozen=True, eq=False)
class PodSpecPlan:
    """The spec of a pod template, shared by every template of a role that runs the same pods
    (a role's workloads share one object, rendered once). ``env`` is a list
    of Kubernetes EnvVar dicts (order kept: later entries may reference earlier ones); every other
    mapping is emitted with sorted keys. Compared and hashed by identity (the renderer keys its
    rendered specs by object)."""

    image: str
    launcher: dict[str, Any]
    env: list[dict[str, Any]]
    env_configmap: str
    ports: list[dict[str, Any]]
    resources: dict[str, Any]
    volumes: list[dict[str, Any]]
    volume_mounts: list[dict[str, Any]]
    security_context: dict[str, Any]
    pod_security_context: dict[str, Any]
    termination_grace_s: int
    host_network: bool
    dns_policy: str | None
    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]]
    probes: dict[str, Any]
    lifecycle: dict[str, Any]
    affinity: dict[str, Any] | None = None
    image_pull_secrets: list[dict[str, str]] = field(default_factory=list)
    service_account: str | None = None
    priority_class: str | None = None
    scheduler_name: str | None = None
    #: Native sidecars (init containers with ``restartPolicy: Always``): the routing sidecar of
    #: decode pods behind router kind inference-gateway (engines/gateway.py).
    init_containers: list[dict[str, Any]] = field(default_factory=list)
    #: Pod-level DRA claims (``spec.resourceClaims``): the IMEX channel of an NVL72 pool's
    #: ComputeDomain (``network.computeDomain``), which the engine container claims too.
    resource_claims: list[dict[str, Any]] = field(default_factory=list)
    #: ``automountServiceAccountToken``: False, the engines never call the API server
    #: (generator/security.py).
    automount_token: bool = False


@dataclass(frozen=True)
class PodPlan:
    """A pod template: its metadata and its (possibly shared) spec."""

    labels: dict[str, str]
    annotations: dict[str, str]
    spec: PodSpecPlan


def _q(arg: str) -> str:
    """Shell-quote one argument; arguments holding a placeholder become double-quoted
    expansions (placeholders only ever sit next to digits and a colon, e.g. "${X}:20000")."""
    if POD_IP in arg or LEADER_IP in arg:
        return f'"{arg}"'
    return shlex.quote(arg)


def group_args(args: tuple[str, ...]) -> list[list[str]]:
    """Split a flat argv into one group per option (``--flag value...``), for one line each."""
    groups: list[list[str]] = []
    for a in args:
        if a.startswith("-") or not groups:
            groups.append([a])
        else:
            groups[-1].append(a)
    return groups


def launcher_context(launch: EngineLaunch, role: str, engine: str) -> dict[str, Any]:
    """Context of templates/_launch.sh.j2 (every argument already shell-quoted).

    ``engine``: how the launcher's header names the dialect, e.g. ``vLLM 0.33.0 dialect``.
    """
    multi = len(launch.per_pod) > 1
    ray = launch.ray_port is not None and multi
    cases = [{"index": str(i),
              "resolve": any(LEADER_IP in a for a in extra) or (ray and i > 0),
              "args": " ".join(_q(a) for a in extra),
              "env": [f"{k}={_q(v)}" for k, v in
                      (launch.pod_env[i] if i < len(launch.pod_env) else ())],
              "ray_head": ray and i == 0, "ray_node": ray and i > 0}
             for i, extra in enumerate(launch.per_pod)]
    port = launch.rendezvous_port
    return {
        "role": role,
        "engine": engine,
        "notes": list(launch.notes),
        "multi": multi,
        "cases": cases,
        "last_index": str(len(launch.per_pod) - 1),
        "program": " ".join(_q(a) for a in launch.program),
        "args": [" ".join(_q(a) for a in group) for group in group_args(launch.common)],
        "single_args": " ".join(_q(a) for a in launch.per_pod[0]) if not multi else "",
        "resolve_tries": str(RESOLVE_TRIES),
        "resolve_sleep": str(RESOLVE_SLEEP_S),
        "resolve_budget": str(RESOLVE_TRIES * RESOLVE_SLEEP_S),
        "rendezvous_port": str(port) if port else "",
        # A Ray cluster (parallel.executor ray): the head's port, the nodes the leader waits
        # for (one per pod) and for how long (a deadline: RAY_RENDEZVOUS_S).
        "ray_port": str(launch.ray_port) if ray else "",
        "ray_nodes": str(len(launch.per_pod)),
        "ray_budget": str(RAY_RENDEZVOUS_S),
        # The environment variables the launcher reads: the pod's index in its instance and the
        # leader's DNS name (the pod template defines them; a platform target may name the
        # ones its controller injects instead).
        "index_env": INDEX_ENV,
        "leader_env": LEADER_HOST_ENV,
    }


@dataclass(frozen=True)
class PodContext:
    """What every pod template of one role shares."""

    spec: InferenceDeployment
    role_spec: Role
    role: RoleInput
    launch: EngineLaunch
    pool: NodePool
    labels: dict[str, str]
    launcher: dict[str, Any]
    configmap: str
    pod: PodSettings
    host: HostPlan | None
    #: The routing sidecar container of the role's API pods (None: no sidecar).
    sidecar: dict[str, Any] | None = None
    #: The engines' graceful drain, s (generator/durations.py); the grace period covers it.
    drain_s: int = DRAIN_S


def pod_plan(ctx: PodContext, spec: PodSpecPlan, extra_labels: dict[str, str] | None = None,
             extra_annotations: dict[str, str] | None = None) -> PodPlan:
    """A pod template of the role: the user's ``pod.labels`` under the role's labels
    (+ ``extra_labels``; moegen's keys win: selectors use them), the user's annotations
    (+ ``extra_annotations``, then checkov's skip annotations of the pod's waivers: moegen's
    winning) and ``spec``."""
    return PodPlan(labels={**ctx.pod.labels, **ctx.labels, **(extra_labels or {})},
                   annotations={**ctx.pod.annotations, **(extra_annotations or {}),
                                **security.skip_annotations(engine_waivers(ctx, spec))},
                   spec=spec)


def engine_waivers(ctx: PodContext, spec: PodSpecPlan) -> list[security.Waiver]:
    """The checkov checks an engine pod template fails on purpose (generator/security.py)."""
    net = ctx.spec.spec.network
    return security.engine_waivers(
        image=spec.image, rdma=net.rdma is not None, host_network=spec.host_network,
        privileged=bool(ctx.pod.privileged), pod_ctx=spec.pod_security_context,
        serves_api=bool(spec.probes), token_env=any(e["name"] == "HF_TOKEN" for e in spec.env),
        network_policy=security.network_policy_waiver(ctx.spec))


def _resources(ctx: PodContext, pods: range) -> dict[str, Any]:
    """Requests and limits of the pods ``pods`` (the largest of them): derived from the host
    plan, each replaced by the user's ``pod.cpu/memory/ephemeralStorage``; limits equal the
    requests unless ``pod.limits`` sets them (GPUs and RDMA: limits only, Kubernetes copies
    extended resources to the requests)."""
    role, pod, net = ctx.role, ctx.pod, ctx.spec.spec.network
    requests: dict[str, Any] = {}
    derived: PodResources | None = None
    if ctx.host is not None:
        derived = max((ctx.host.pods[i] for i in pods), key=lambda r: (r.memory_gib, r.cpu))
        requests = {"cpu": str(derived.cpu), "memory": f"{derived.memory_gib}Gi",
                    "ephemeral-storage": f"{derived.ephemeral_gib}Gi"}
    for key, value in (("cpu", pod.cpu), ("memory", pod.memory),
                       ("ephemeral-storage", pod.ephemeral_storage)):
        if value is not None:
            requests[key] = value
    limits: dict[str, Any] = dict(requests)
    if pod.limits is not None:
        for key, value in (("cpu", pod.limits.cpu), ("memory", pod.limits.memory),
                           ("ephemeral-storage", pod.limits.ephemeralStorage)):
            if value is not None:
                limits[key] = value
    # The pool's device-plugin resource: nvidia.com/gpu or amd.com/gpu (catalog Gpu.resource).
    limits[GPUS[ctx.pool.gpu].resource] = role.layout.gpus_per_pod
    if net.rdma is not None and net.rdma.resourceName is not None:
        limits[net.rdma.resourceName] = net.rdma.resourceCount
    claims = {"claims": [{"name": IMEX_CLAIM}]} if role.mnnvl else {}
    return {"limits": limits} | ({"requests": requests} if requests else {}) | claims


#: The pod's claim name for the ComputeDomain's IMEX channel (Kubernetes PodSpec resourceClaims;
#: the NVIDIA DRA driver's ComputeDomain guide: a pod claims the domain's
#: resourceClaimTemplate and its container lists the claim in resources.claims).
IMEX_CLAIM = "imex-channel"


def container_security(ctx: PodContext) -> dict[str, Any]:
    """The engine container's securityContext: every capability dropped, IPC_LOCK added back
    for RDMA (ibverbs memory registration pins pages: kernel drivers/infiniband/core/umem.c
    ib_umem_get needs CAP_IPC_LOCK above RLIMIT_MEMLOCK), no privilege escalation; or
    ``privileged`` when ``pod.privileged`` (some platforms need it for GPU-initiated RDMA:
    docs/platform-facts.md §5). The root filesystem is read-only: the engines write only to
    their volumes, /tmp and ``HOME`` (generator/security.py TMP_MOUNT)."""
    if ctx.pod.privileged:
        return {"privileged": True, "readOnlyRootFilesystem": True}
    caps: dict[str, Any] = {"drop": ["ALL"]}
    if ctx.spec.spec.network.rdma is not None:
        caps["add"] = ["IPC_LOCK"]
    return {"allowPrivilegeEscalation": False, "capabilities": caps,
            "readOnlyRootFilesystem": True}


#: The first Kubernetes release whose API server keeps podAffinity ``matchLabelKeys``
#: (feature gate MatchLabelKeysInPodAffinity: alpha, off, in 1.29-1.30; beta, on, from 1.31:
#: KEP-3633). An older server drops the field, and the group term then holds every LWS group
#: of the namespace in one domain (checked by ``gen preflight``, PRE009).
MATCH_LABEL_KEYS_SINCE = (1, 31)


def group_affinity(spec: InferenceDeployment, multi_pod: bool) -> bool:
    """Whether a role's pods carry the group pod affinity on ``matchLabelKeys``:
    ``platform.topology`` set, a multi-pod group, and no Kueue (whose topology-aware
    scheduling places the group instead)."""
    platform = spec.spec.platform
    kueue = platform is not None and platform.scheduler is not None \
        and platform.scheduler.kind == "kueue"
    return platform is not None and platform.topology is not None and multi_pod and not kueue


def _affinity(ctx: PodContext) -> dict[str, Any] | None:
    """The user's ``pod.affinity``; with ``platform.topology``, the pods of a multi-pod group in
    one domain; for a StatefulSet role (single-pod instances) with
    ``placement.topologyKey``, a required pod anti-affinity that keeps one instance of the role
    per topology domain (what LWS's exclusive-topology annotation does for groups; a pod's own
    anti-affinity term never matches itself)."""
    aff = dict(ctx.pod.affinity) if ctx.pod.affinity else None
    platform = ctx.spec.spec.platform
    if group_affinity(ctx.spec, ctx.role.layout.multi_pod):

        # Every pod of a LeaderWorkerSet group in the domain of its group's other pods: required
        # pod affinity on the group's own key (matchLabelKeys, Kubernetes >= 1.31 default on:
        # KEP-3633); the first pod of a group goes anywhere (a term no pod matches yet is
        # satisfied by the pod itself).
        group = {"labelSelector": {"matchExpressions": [
                     {"key": LWS_GROUP_KEY_LABEL, "operator": "Exists"}]},
                 "matchLabelKeys": [LWS_GROUP_KEY_LABEL],
                 "topologyKey": platform.topology.key}
        aff = aff or {}
        pa = dict(aff.get("podAffinity") or {})
        pa["requiredDuringSchedulingIgnoredDuringExecution"] = [
            *(pa.get("requiredDuringSchedulingIgnoredDuringExecution") or []), group]
        aff = {**aff, "podAffinity": pa}
    placement = ctx.role_spec.placement
    if placement is None or placement.topologyKey is None or ctx.role_spec.workload != "statefulset":
        return aff
    term = {"labelSelector": {"matchLabels": {L_INSTANCE: ctx.labels[L_INSTANCE],
                                              L_ROLE: ctx.labels[L_ROLE]}},
            "topologyKey": placement.topologyKey}
    aff = aff or {}
    anti = dict(aff.get("podAntiAffinity") or {})
    required = list(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    anti["requiredDuringSchedulingIgnoredDuringExecution"] = [*required, term]
    return {**aff, "podAntiAffinity": anti}


def pod_spec(ctx: PodContext, pods: range, index_label: str | None,
             leader_host: str | None) -> PodSpecPlan:
    """The pod spec of pods ``pods`` of an instance (the leader: ``range(0, 1)``; LWS workers:
    ``range(1, n)``); a template declares the union of its pods' ports.

    ``index_label``: the label that carries the pod index (multi-pod instances);
    ``leader_host``: the leader's DNS name as the pod sees it (``$(LWS_LEADER_ADDRESS)``).
    """
    spec, role, launch = ctx.spec, ctx.role, ctx.launch
    net = spec.spec.network
    env: list[dict[str, Any]] = [
        {"name": "MOEGEN_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    if index_label:
        env.append({"name": INDEX_ENV,
                    "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{index_label}']"}}})
    if leader_host:
        env.append({"name": LEADER_HOST_ENV, "value": leader_host})
    if role.kv_transfer is not None and role.kv_transfer.connector == "nixl" \
            and spec.spec.engine.name == "vllm":
        # Each pod's own IP: a host copied across pods breaks the NIXL handshake
        # (vllm/envs.py default "localhost"; dynamo#2706, vllm PR#41806).
        env.append({"name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
                    "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    if spec.spec.engine.name == "sglang":
        # The address SGLang advertises for KV transfer and its bootstrap: without it a UDP probe
        # to 8.8.8.8 picks it, which fails without a default route and picks the default
        # route's NIC on multi-homed hostNetwork nodes (sgl-project/sglang@v0.5.23:
        # python/sglang/srt/utils/network.py get_local_ip_auto: SGLANG_HOST_IP, then the NIC
        # SGLANG_LOCAL_IP_NIC names, then the probe).
        env.append({"name": "SGLANG_HOST_IP",
                    "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    # The root filesystem is read-only: every write below ~ lands in the /tmp emptyDir
    # (generator/security.py HOME).
    env.append({"name": "HOME", "value": security.HOME})
    own = next((r.env for r in spec.spec.roles if r.name == role.name), {})
    env += hub_env(spec.spec.model.hub, {**net.env, **own})
    if spec.spec.model.tokenSecret is not None:
        ref = spec.spec.model.tokenSecret
        env.append({"name": "HF_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}})
    serves_api = any(launch.serves_api[i] for i in pods)
    ports: list[Port] = []
    for i in pods:
        ports += [p for p in launch.ports_of(i) if p not in ports]
    if not any(launch.binds_http(i) for i in pods):
        ports = [p for p in ports if p.name != "http"]
    resources = _resources(ctx, pods)
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {
        "medium": "Memory", "sizeLimit": f"{ctx.pod.shm_gib}Gi"}}]
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    volumes.append({"name": "tmp", "emptyDir": {"sizeLimit": f"{EPHEMERAL_BASE_GIB}Gi"}})
    mounts.append({"name": "tmp", "mountPath": security.TMP_MOUNT})
    if spec.spec.model.volume is not None and spec.spec.model.path:
        volumes.append({"name": "model", **spec.spec.model.volume.sources()})
        mounts.append({"name": "model", "mountPath": spec.spec.model.path, "readOnly": True})
    hub = spec.spec.model.hub
    if hub is not None and hub.cache is not None:
        volumes.append({"name": HUB_VOLUME, **hub.cache.sources()})
        mounts.append({"name": HUB_VOLUME, "mountPath": hub.mountPath})
    cache = ctx.pod.cache
    volumes.append({"name": "compile-cache", **(cache.volume.sources() if cache.volume else
                    {"emptyDir": {"sizeLimit": f"{cache.sizeGiB}Gi"}})})
    mounts.append({"name": "compile-cache", "mountPath": CACHE_MOUNT})
    volumes += [dict(v) for v in ctx.pod.extra_volumes]
    mounts += [dict(m) for m in ctx.pod.extra_volume_mounts]
    probes: dict[str, Any] = {}
    startup_s = ctx.host.startup_s if ctx.host is not None else ENGINE_STARTUP_S
    if serves_api:
        check = {"httpGet": {"path": "/health", "port": launch.probe_port}}
        timeout = launch.health_timeout_s
        probes = {
            "startupProbe": {**check, "periodSeconds": STARTUP_PERIOD_S,
                             "failureThreshold": startup_s // STARTUP_PERIOD_S,
                             "timeoutSeconds": timeout},
            "readinessProbe": {**check, "periodSeconds": READINESS_PERIOD_S,
                               "failureThreshold": READINESS_FAILURES, "timeoutSeconds": timeout},
            "livenessProbe": {**check, "periodSeconds": LIVENESS_PERIOD_S,
                              "failureThreshold": LIVENESS_FAILURES,
                              "timeoutSeconds": max(LIVENESS_TIMEOUT_S, timeout)},
        }
    return PodSpecPlan(
        image=spec.spec.engine.image,
        launcher=ctx.launcher,
        env=env,
        env_configmap=ctx.configmap,
        ports=[{"name": p.name, "containerPort": p.port, "protocol": "TCP"} for p in ports],
        resources=resources,
        volumes=volumes,
        volume_mounts=mounts,
        security_context=container_security(ctx),
        pod_security_context={"seccompProfile": {"type": "RuntimeDefault"},
                              **(ctx.pod.security_context or {})},
        termination_grace_s=termination_grace(ctx.drain_s),
        host_network=net.hostNetwork,
        dns_policy="ClusterFirstWithHostNet" if net.hostNetwork else None,
        node_selector=dict(ctx.pool.nodeSelector),
        tolerations=[t.model_dump(exclude_none=True) for t in ctx.pool.tolerations],
        probes=probes,
        lifecycle={"preStop": {"exec": {"command": ["/bin/sh", "-c", f"sleep {PRESTOP_S}"]}}},
        affinity=_affinity(ctx),
        image_pull_secrets=[{"name": n} for n in ctx.pod.image_pull_secrets],
        service_account=ctx.pod.service_account,
        priority_class=ctx.pod.priority_class,
        scheduler_name=ctx.pod.scheduler_name or _gang_scheduler(ctx),
        init_containers=[dict(ctx.sidecar)] if ctx.sidecar is not None and serves_api else [],
        resource_claims=[{"name": IMEX_CLAIM, "resourceClaimTemplateName":
                          net.computeDomain.resourceClaimTemplate}] if role.mnnvl else [],
    )


def _gang_scheduler(ctx: PodContext) -> str | None:
    """``volcano`` when the platform gangs groups with Volcano (the LWS controller then makes a
    PodGroup per group for pods of that scheduler: lws pkg/schedulerprovider/volcano_provider.go)."""
    platform = ctx.spec.spec.platform
    if platform is not None and platform.scheduler is not None \
            and platform.scheduler.kind == "volcano":
        return "volcano"
    return None


#: The volume name of the Hugging Face cache (model.hub.cache).
HUB_VOLUME = "hf-cache"


def hub_env(hub, user_env: dict[str, str]) -> list[dict[str, Any]]:
    """The variables a Hub download needs (huggingface_hub constants.py): HF_HOME at the cache
    mount, unless the role's env places the cache itself (HF_HOME or HF_HUB_CACHE), and
    HF_HUB_OFFLINE=1 for an offline cache."""
    if hub is None:
        return []
    out = []
    if not {"HF_HOME", "HF_HUB_CACHE"} & set(user_env):
        out.append({"name": "HF_HOME", "value": hub.mountPath})
    if hub.offline and "HF_HUB_OFFLINE" not in user_env:
        out.append({"name": "HF_HUB_OFFLINE", "value": "1"})
    return out
