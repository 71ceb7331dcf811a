"""The deployment plan: every object, name, number and argument, computed before templates run.

Input: a spec that passed every check, with its role inputs (layout + model shape) and the engine
dialect. Output: a frozen :class:`DeploymentPlan` that the templates only substitute and loop over.

Names (``B`` = metadata.name, ``R`` = role name, ``r`` = replica index):

* ``lws`` and ``pod-per-rank`` workloads: LeaderWorkerSet ``B-R`` (replicas = role replicas,
  size = pods per instance: one per node, or one per data-parallel rank); the LWS controller
  creates the headless Service ``B-R`` itself and restarts an instance as a group
  (``RecreateGroupOnPodRestart``).
* ``statefulset`` (single-pod instances only, rule LAY009): StatefulSet ``B-R-r`` per instance
  with headless Service ``B-R-r``.
* client Service ``B-R-api`` (pods that serve the API), router Deployment/Service ``B-router``,
  env ConfigMap ``B-R-env`` (kustomize configMapGenerator from ``env/R.env``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from .engines.common import LEADER_IP, POD_IP, EngineLaunch, Port, RoleInput
from .layout import RoleLayout
from .spec.models import InferenceDeployment

#: Label keys (Kubernetes recommended labels + moegen's own).
L_NAME, L_INSTANCE, L_COMPONENT, L_MANAGED = (
    "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component",
    "app.kubernetes.io/managed-by")
L_ROLE, L_MODE, L_REPLICA = "moegen.dev/role", "moegen.dev/mode", "moegen.dev/replica"
#: Pod-index labels set by the controllers: LWS (lws pkg/utils/pod/pod_utils.go) and the
#: StatefulSet controller (Kubernetes >= 1.28, ``apps.kubernetes.io/pod-index``).
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
STS_POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"

#: /dev/shm default, GiB: Dynamo's operator default and KServe's DP default are 8Gi
#: (shared/research/field-failures.md #3: NCCL fails with the 64 MiB container default).
SHM_DEFAULT_GIB = 8
#: Startup probe budget, s: a DeepSeek-V3 load plus DP handshake takes 7-20 min
#: (shared/research/anchors-k8s.md §7.7; llm-d allows 45 min). 10 s x 180 = 30 min.
STARTUP_PERIOD_S, STARTUP_FAILURES = 10, 180
#: Readiness every 10 s (3 misses = out of the Service) and liveness every 30 s with 5 misses
#: and 10 s timeouts: a 2.5 min grace so a long decode step or GC pause does not restart a
#: 20-minute load (liveness only starts after the startup probe; llm-d guides use 30 s x 3).
READINESS_PERIOD_S, READINESS_FAILURES = 10, 3
LIVENESS_PERIOD_S, LIVENESS_FAILURES, LIVENESS_TIMEOUT_S = 30, 5, 10
#: terminationGracePeriodSeconds: time for the API server to drain in-flight requests after
#: SIGTERM before the kubelet kills the engine (Kubernetes default is 30 s; long generations
#: need more, and 60 s keeps rollouts of a group reasonably fast).
TERMINATION_GRACE_S = 60
#: The engines' startup budget, s (the startup probe's): what a router waits for its workers.
ENGINE_STARTUP_S = STARTUP_PERIOD_S * STARTUP_FAILURES
#: Router probes: TCP on its HTTP port. vllm-router and smg bind their port only after the
#: workers answer their health checks (vllm-router RouterArgs.worker_startup_timeout_secs,
#: default 600; smg 1800): the router is told to wait the engines' startup budget
#: (``--worker-startup-timeout-secs``), and its startup probe allows that plus one minute
#: before liveness starts, so the kubelet never kills a router that is waiting for engines.
ROUTER_STARTUP_FAILURES = (ENGINE_STARTUP_S + 60) // STARTUP_PERIOD_S
ROUTER_PROBES = {
    "startupProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": STARTUP_PERIOD_S,
                     "failureThreshold": ROUTER_STARTUP_FAILURES},
    "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": READINESS_PERIOD_S},
    "livenessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": LIVENESS_PERIOD_S,
                      "failureThreshold": LIVENESS_FAILURES},
}
#: Workers wait for the leader's rendezvous port (DNS name resolved, then a TCP connect every
#: 5 s) for up to 240 x 5 s = 20 min, then exit non-zero: a headless vLLM engine gives up 5 min
#: after dialling a leader that is not there (HANDSHAKE_TIMEOUT_MINS, vllm/v1/engine/core.py),
#: and an empty address must never reach the engine (shared/research/field-failures.md #4). The
#: leader pulls the same image and starts at the same time (LWS startupPolicy LeaderCreated).
RESOLVE_TRIES, RESOLVE_SLEEP_S = 240, 5
#: SGLang's PD router: smg (Shepherd Model Gateway, successor of sglang-router), image
#: lightseekorg/smg (its entrypoint is the router; args as smg's RouterArgs, smg 1.13.0
#: py_src/smg/router_args.py): --pd-disaggregation, --prefill URL BOOTSTRAP_PORT, --decode URL.
SGLANG_ROUTER_IMAGE = "lightseekorg/smg:v1.13.0"
#: The PD router: vllm-router (vllm-project/router), the vLLM team's PD router, pinned.
#: Flags from its RouterArgs (py_src/vllm_router/router_args.py, 0.1.17): --vllm-pd-disaggregation,
#: --prefill URL [BOOTSTRAP_PORT], --decode URL, --kv-connector {nixl,mooncake,moriio},
#: --policy, --host (default 127.0.0.1: must be 0.0.0.0 in a pod), --port,
#: --prometheus-host/--prometheus-port (29000).
ROUTER_IMAGE = "vllm/vllm-router:v0.1.17"
ROUTER_METRICS_PORT = 29000
ROUTER_CONNECTORS = {"nixl": "nixl", "mooncake": "mooncake"}


def shm_gib(role, layout: RoleLayout) -> int:
    """/dev/shm size of the role's pods, GiB (``pod.shmSizeGiB`` or :data:`SHM_DEFAULT_GIB`)."""
    if role.pod is not None and role.pod.shmSizeGiB is not None:
        return role.pod.shmSizeGiB
    return SHM_DEFAULT_GIB


@dataclass(frozen=True)
class PodPlan:
    """A pod template. ``env`` is a list of Kubernetes EnvVar dicts (order kept: later entries
    may reference earlier ones); every other mapping is emitted with sorted keys."""

    labels: dict[str, str]
    annotations: dict[str, str]
    image: str
    launcher: dict[str, Any]
    env: list[dict[str, Any]]
    env_configmap: str
    ports: list[dict[str, Any]]
    resources: dict[str, Any]
    volumes: list[dict[str, Any]]
    volume_mounts: list[dict[str, Any]]
    security_context: dict[str, Any] | None
    termination_grace_s: int
    host_network: bool
    dns_policy: str | None
    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]]
    probes: dict[str, Any]


@dataclass(frozen=True)
class WorkloadPlan:
    """A LeaderWorkerSet or StatefulSet of one role (one file)."""

    kind: str
    name: str
    file: str
    role: str
    labels: dict[str, str]
    replicas: int
    size: int
    leader: PodPlan
    worker: PodPlan | None
    selector: dict[str, str]
    service_name: str | None


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
    probes: dict[str, Any] = field(default_factory=lambda: dict(ROUTER_PROBES))


@dataclass(frozen=True)
class EnvFilePlan:
    """One role's env file ``env/<role>.env`` and the ConfigMap generated from it."""

    role: str
    path: str
    configmap: str
    items: list[tuple[str, str]]


@dataclass(frozen=True)
class RolePlan:
    """Per role: the launch (for tests and conformance) and the role's objects."""

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


def _q(arg: str) -> str:
    """Shell-quote one argument; arguments holding a placeholder become double-quoted
    expansions (placeholders only ever sit next to digits and a colon, e.g. "${X}:20000")."""
    if POD_IP in arg or LEADER_IP in arg:
        return f'"{arg}"'
    return shlex.quote(arg)


def _launcher(launch: EngineLaunch, role: RoleInput, dialect_version: str,
              engine_label: str) -> dict[str, Any]:
    """Context for templates/launch.sh.j2 (all arguments already shell-quoted)."""
    multi = len(launch.per_pod) > 1
    cases = []
    for i, extra in enumerate(launch.per_pod):
        cases.append({
            "index": str(i),
            "resolve": any(LEADER_IP in a for a in extra),
            "args": " ".join(_q(a) for a in extra),
        })
    port = launch.rendezvous_port
    return {
        "role": role.name,
        "engine": f"{engine_label} {dialect_version} dialect",
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
    }


def group_args(args: tuple[str, ...]) -> list[list[str]]:
    """Split a flat argv into one group per option (``--flag value...``), for one line each."""
    groups: list[list[str]] = []
    for a in args:
        if a.startswith("-") or not groups:
            groups.append([a])
        else:
            groups[-1].append(a)
    return groups


def _ports(ports: tuple[Port, ...]) -> list[dict[str, Any]]:
    return [{"name": p.name, "containerPort": p.port, "protocol": "TCP"} for p in ports]


def network_env(spec: InferenceDeployment, role: RoleInput) -> list[tuple[str, str]]:
    """Network variables of a role, in a fixed order (sources in each comment).

    * GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME: the bootstrap NIC (PyTorch Gloo; NCCL env docs).
    * NCCL_IB_HCA: ``=``-prefixed exact list so mlx5_1 does not also match mlx5_10 (NCCL env docs).
    * NCCL_IB_GID_INDEX: RoCE GID (NCCL env docs).
    * UCX_NET_DEVICES: RDMA ports ``<hca>:1`` plus ``lo`` (NIXL's UCX backend needs a TCP/loopback
      device: sglang PR#40641, nixl#299).
    * NVSHMEM_*: DeepEP's NVSHMEM transport (NVSHMEM env docs; llm-d wide-EP manifests):
      IBGDA remote transport, bootstrap NIC, HCA list and GID index.
    """
    net = spec.spec.network
    out: list[tuple[str, str]] = []
    if net.socketInterface:
        out += [("GLOO_SOCKET_IFNAME", net.socketInterface),
                ("NCCL_SOCKET_IFNAME", net.socketInterface)]
    deepep = bool(role.moe and role.moe.all2all and role.moe.all2all.startswith("deepep"))
    if net.rdma is not None:
        out.append(("NCCL_IB_HCA", "=" + ",".join(net.rdma.devices)))
        if net.rdma.gidIndex is not None:
            out.append(("NCCL_IB_GID_INDEX", str(net.rdma.gidIndex)))
        if role.kv_transfer is not None:
            out.append(("UCX_NET_DEVICES", ",".join(f"{d}:1" for d in net.rdma.devices) + ",lo"))
    if deepep:
        if net.socketInterface:
            out.append(("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", net.socketInterface))
        if net.rdma is not None:
            out += [("NVSHMEM_REMOTE_TRANSPORT", "ibgda"), ("NVSHMEM_IB_ENABLE_IBGDA", "1"),
                    ("NVSHMEM_HCA_LIST", ",".join(f"{d}:1" for d in net.rdma.devices))]
            if net.rdma.gidIndex is not None:
                out.append(("NVSHMEM_IB_GID_INDEX", str(net.rdma.gidIndex)))
    return out


def env_items(derived: list[tuple[str, str]], overrides: dict[str, str]) -> list[tuple[str, str]]:
    """One value per key: derived variables in order, a user override replacing a derived value
    in place (NET003 warns), other user variables after them (kustomize refuses an env file that
    sets a key twice)."""
    out = [(k, overrides.get(k, v)) for k, v in derived]
    have = {k for k, _ in out}
    return out + [(k, v) for k, v in overrides.items() if k not in have]


def build_plan(spec: InferenceDeployment, roles: list[RoleInput], dialect,
               sizing: list | None = None) -> DeploymentPlan:
    """Build the plan of a spec that passed every check (raises nothing for valid input).

    ``sizing``: per role its RoleSizing (SGLang renders the planned ``--mem-fraction-static``).
    """
    sizing_by_role = {z.name: z for z in (sizing or []) if hasattr(z, "name")}
    meta = spec.metadata
    base = meta.name
    ns = meta.namespace
    common_labels = {**meta.labels, L_NAME: base, L_INSTANCE: base, L_MANAGED: "moegen"}
    workloads: list[WorkloadPlan] = []
    services: list[ServicePlan] = []
    env_files: list[EnvFilePlan] = []
    role_plans: list[RolePlan] = []
    endpoints: dict[str, list[str]] = {"prefill": [], "decode": []}

    for role_spec, role in zip(spec.spec.roles, roles):
        pool = spec.spec.nodePools[role_spec.nodePool]
        if spec.spec.engine.name == "sglang":
            launch = dialect.launch(role, sizing_by_role[role.name].utilization)
        else:
            z = sizing_by_role.get(role.name)
            launch = dialect.launch(role, z.batched_tokens if z is not None else None)
        role_plans.append(RolePlan(role.name, role.mode, role.layout, launch))
        lay = role.layout
        rlabels = {**common_labels, L_COMPONENT: role.name, L_ROLE: role.name, L_MODE: role.mode}
        configmap = f"{base}-{role.name}-env"
        items = env_items(network_env(spec, role) + sorted(launch.env.items()),
                          dict(spec.spec.network.env))
        env_files.append(EnvFilePlan(role.name, f"env/{role.name}.env", configmap, items))

        launcher = _launcher(launch, role, dialect.version,
                             "vLLM" if spec.spec.engine.name == "vllm" else "SGLang")
        port = role.serving["port"]
        client_selector = {L_INSTANCE: base, L_ROLE: role.name}

        def pod(pods: range, index_label: str | None, leader_host: str | None,
                extra_labels: dict[str, str]) -> PodPlan:
            return _pod_plan(spec, role_spec, role, launch, pool, rlabels | extra_labels,
                             launcher, configmap, pods, index_label, leader_host)

        n_pods = len(lay.pods)
        if role_spec.workload in ("lws", "pod-per-rank"):
            name = f"{base}-{role.name}"
            host = "$(LWS_LEADER_ADDRESS)" if lay.multi_pod else None
            index_label = LWS_WORKER_INDEX_LABEL if lay.multi_pod else None
            leader = pod(range(0, 1), index_label, host, {})
            worker = pod(range(1, n_pods), index_label, host, {}) if lay.multi_pod else None
            workloads.append(WorkloadPlan("LeaderWorkerSet", name, f"{role.name}-lws.yaml",
                                          role.name, rlabels, role_spec.replicas, n_pods,
                                          leader, worker, {}, None))
            if not all(launch.serves_api):
                client_selector = {**client_selector, LWS_WORKER_INDEX_LABEL: "0"}
            for g in range(role_spec.replicas):
                # LWS pod names: leader <lws>-<group>, workers <lws>-<group>-<index>, all in
                # the subdomain of the LWS's headless Service <lws> (lws pod_utils.go).
                for i in range(n_pods):
                    if launch.serves_api[i]:
                        host_name = f"{name}-{g}" if i == 0 else f"{name}-{g}-{i}"
                        endpoints.setdefault(role.mode, []).append(
                            f"http://{host_name}.{name}.{ns}:{port}")
        else:  # statefulset: one single-pod StatefulSet per instance (LAY009)
            for r in range(role_spec.replicas):
                name = f"{base}-{role.name}-{r}"
                sel = {L_INSTANCE: base, L_ROLE: role.name, L_REPLICA: str(r)}
                the_pod = pod(range(0, 1), None, None, {L_REPLICA: str(r)})
                workloads.append(WorkloadPlan("StatefulSet", name, f"{role.name}-{r}-statefulset.yaml",
                                              role.name, rlabels | {L_REPLICA: str(r)},
                                              1, 1, the_pod, None, sel, name))
                services.append(ServicePlan(name, f"{role.name}-{r}-headless-service.yaml",
                                            rlabels | {L_REPLICA: str(r)}, sel,
                                            _service_ports(launch), True))
                endpoints.setdefault(role.mode, []).append(f"http://{name}-0.{name}.{ns}:{port}")
        services.append(ServicePlan(f"{base}-{role.name}-api", f"{role.name}-service.yaml",
                                    rlabels, client_selector,
                                    [{"name": "http", "port": port, "targetPort": "http",
                                      "protocol": "TCP"}], False))

    router = None
    pd = any(r.mode == "prefill" for r in roles) and any(r.mode == "decode" for r in roles)
    if pd and spec.spec.router.enabled:
        router = _router_plan(spec, roles, endpoints, common_labels)
    return DeploymentPlan(base, ns, common_labels, workloads, services, router, env_files,
                          role_plans, engine=spec.spec.engine.name, dialect=dialect.version)


def _service_ports(launch: EngineLaunch) -> list[dict[str, Any]]:
    return [{"name": p.name, "port": p.port, "targetPort": p.port, "protocol": "TCP"}
            for p in launch.ports_of(0)]


def _router_plan(spec: InferenceDeployment, roles: list[RoleInput],
                 endpoints: dict[str, list[str]], common_labels: dict[str, str]) -> RouterPlan:
    cfg = spec.spec.router
    connector = next(r.kv_transfer.connector for r in roles if r.mode == "prefill")
    name = f"{spec.metadata.name}-router"
    labels = {**common_labels, L_COMPONENT: "router", L_ROLE: "router"}
    selector = {L_INSTANCE: spec.metadata.name, L_ROLE: "router"}
    if spec.spec.engine.name == "sglang":
        from .engines.sglang import BOOTSTRAP_PORT
        args = ["--pd-disaggregation", "--host", "0.0.0.0", "--port", str(cfg.port),
                "--policy", cfg.policy, "--worker-startup-timeout-secs", str(ENGINE_STARTUP_S)]
        for url in endpoints["prefill"]:
            args += ["--prefill", url, str(BOOTSTRAP_PORT)]
        for url in endpoints["decode"]:
            args += ["--decode", url]
        args += ["--prometheus-host", "0.0.0.0", "--prometheus-port", str(ROUTER_METRICS_PORT)]
        # smg's console script needs a subcommand: `smg launch` runs the router alone
        # (smg 1.13.0 py_src/smg/cli.py).
        return RouterPlan(name, labels, selector, cfg.image or SGLANG_ROUTER_IMAGE, args,
                          cfg.port, ROUTER_METRICS_PORT, cfg.replicas, command=["smg", "launch"])
    args = ["--vllm-pd-disaggregation", "--host", "0.0.0.0", "--port", str(cfg.port),
            "--policy", cfg.policy, "--kv-connector", ROUTER_CONNECTORS[connector],
            "--worker-startup-timeout-secs", str(ENGINE_STARTUP_S)]
    for url in endpoints["prefill"]:
        args += ["--prefill", url]
        if connector == "mooncake":
            from .engines.vllm import MOONCAKE_BOOTSTRAP_PORT
            args.append(str(MOONCAKE_BOOTSTRAP_PORT))
    for url in endpoints["decode"]:
        args += ["--decode", url]
    args += ["--prometheus-host", "0.0.0.0", "--prometheus-port", str(ROUTER_METRICS_PORT)]
    return RouterPlan(name, labels, selector, cfg.image or ROUTER_IMAGE, args, cfg.port,
                      ROUTER_METRICS_PORT, cfg.replicas, command=["vllm-router"])


def _pod_plan(spec, role_spec, role: RoleInput, launch: EngineLaunch, pool, labels, launcher,
              configmap: str, pods: range, index_label: str | None,
              leader_host: str | None) -> PodPlan:
    """The pod template of pods ``pods`` of an instance (the leader: ``range(0, 1)``; LWS
    workers: ``range(1, n)``); a template declares the union of its pods' ports."""
    net = spec.spec.network
    lay = role.layout
    env: list[dict[str, Any]] = [
        {"name": "MOEGEN_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    if index_label:
        env.append({"name": "MOEGEN_POD_INDEX",
                    "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{index_label}']"}}})
    if leader_host:
        env.append({"name": "MOEGEN_LEADER_HOST", "value": leader_host})
    if role.kv_transfer is not None and role.kv_transfer.connector == "nixl":
        # Each pod's own IP: a host copied across pods breaks the NIXL handshake
        # (vllm/envs.py default "localhost"; shared/research/field-failures.md #7).
        env.append({"name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
                    "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    if spec.spec.model.tokenSecret is not None:
        ref = spec.spec.model.tokenSecret
        env.append({"name": "HF_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}})
    serves_api = any(launch.serves_api[i] for i in pods)
    ports: list[Port] = []
    for i in pods:
        ports += [p for p in launch.ports_of(i) if p not in ports]
    if not serves_api:
        ports = [p for p in ports if p.name != "http"]
    limits: dict[str, Any] = {"nvidia.com/gpu": lay.gpus_per_pod}
    requests: dict[str, Any] = {}
    if net.rdma is not None:
        limits[net.rdma.resourceName] = net.rdma.resourceCount
    pod_cfg = role_spec.pod
    if pod_cfg is not None and pod_cfg.cpu:
        limits["cpu"] = requests["cpu"] = pod_cfg.cpu
    if pod_cfg is not None and pod_cfg.memory:
        limits["memory"] = requests["memory"] = pod_cfg.memory
    resources = {"limits": limits} | ({"requests": requests} if requests else {})
    shm = shm_gib(role_spec, lay)
    volumes: list[dict[str, Any]] = [{"name": "dshm",
                                      "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm}Gi"}}]
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if spec.spec.model.volume is not None:
        volumes.append({"name": "model", **spec.spec.model.volume.sources()})
        mounts.append({"name": "model", "mountPath": spec.spec.model.path, "readOnly": True})
    caps = ["IPC_LOCK"] if net.rdma is not None else []
    privileged = bool(pod_cfg and pod_cfg.privileged)
    security = None
    if caps or privileged:
        security = {}
        if caps:
            security["capabilities"] = {"add": caps}
        if privileged:
            security["privileged"] = True
    probes: dict[str, Any] = {}
    if serves_api:
        check = {"httpGet": {"path": "/health", "port": "http"}}
        timeout = launch.health_timeout_s
        probes = {
            "startupProbe": {**check, "periodSeconds": STARTUP_PERIOD_S,
                             "failureThreshold": STARTUP_FAILURES, "timeoutSeconds": timeout},
            "readinessProbe": {**check, "periodSeconds": READINESS_PERIOD_S,
                               "failureThreshold": READINESS_FAILURES, "timeoutSeconds": timeout},
            "livenessProbe": {**check, "periodSeconds": LIVENESS_PERIOD_S,
                              "failureThreshold": LIVENESS_FAILURES,
                              "timeoutSeconds": max(LIVENESS_TIMEOUT_S, timeout)},
        }
    return PodPlan(
        labels=labels,
        annotations=dict(pod_cfg.annotations) if pod_cfg else {},
        image=spec.spec.engine.image,
        launcher=launcher,
        env=env,
        env_configmap=configmap,
        ports=_ports(tuple(ports)),
        resources=resources,
        volumes=volumes,
        volume_mounts=mounts,
        security_context=security,
        termination_grace_s=TERMINATION_GRACE_S,
        host_network=net.hostNetwork,
        dns_policy="ClusterFirstWithHostNet" if net.hostNetwork else None,
        node_selector=dict(pool.nodeSelector),
        tolerations=[t.model_dump(exclude_none=True) for t in pool.tolerations],
        probes=probes,
    )
