"""The ``kserve`` target: one KServe ``LLMInferenceService`` (serving.kserve.io/v1alpha2) on
KServe's own vLLM presets (the well-known LLMInferenceServiceConfigs,
kserve/kserve@v0.20.0:config/llmisvcconfig).

What the controller does and moegen therefore does not (facts: generator/facts/controllers.py,
read from the tagged source by tools/extract_controllers.py):

* it merges the preset matching each workload's shape (single node, or a data-parallel leader
  and workers on a LeaderWorkerSet; prefill and decode variants) under the object, and the
  preset's ``vllm serve /mnt/models`` command adds ``--served-model-name``, ``--port``, the
  tensor-parallel size, and for data parallelism ``--enable-expert-parallel``,
  ``--data-parallel-size``, ``-size-local``, ``-address``, ``-rpc-port``, ``-start-rank``,
  ``--headless`` and ``--api-server-count`` from the typed ``parallelism``; the access-log and
  ``--shutdown-timeout`` arguments from the vLLM version and the grace period;
* it mounts the model PVC (``model.uri: pvc://...``) at ``/mnt/models``;
* it runs the router: ``router.scheduler`` (an endpoint picker and InferencePool), ``route``
  and ``gateway``; decode pods get the llm-d routing sidecar (NIXL only) in front of vLLM.

moegen puts every other flag it derives (memory plan, batch sizes, the KV transfer, EPLB, MTP)
into ``VLLM_ADDITIONAL_ARGS``, which the presets append, its environment (NCCL, NVSHMEM, UCX,
the compile caches) into the container, and its sized resources, ``/dev/shm``, startup budget
and grace period into the pod templates. ``scaling.wva.keda`` carries the autoscaling bounds.
"""

from __future__ import annotations

import shlex
from typing import Any

from .. import security
from ..deployment import Deployment
from ..engines.base import LEADER_IP, POD_IP
from ..engines.routers import ROUTER_REPLICAS, rendered_router
from ..errors import Finding
from ..facts import controllers
from ..layout import Spread
from ..manifests.plan import DeploymentPlan
from ..manifests.pods import INDEX_ENV, LEADER_HOST_ENV, PodSpecPlan, group_args
from ..naming import L_API, L_METRICS
from ..pods import STARTUP_PERIOD_S, effective_pod
from .common import NIXL_PORT_ENV, E, W, Findings, bound_ports, common_findings, document, \
    env_items, kustomization, merged_env, pod_base, release, roles_by_mode, sized_load

NAME = "kserve"
#: The variables of the presets' ``vllm serve`` line that hold whole arguments
#: (config-llm-template.yaml: ACCESS_LOG_ARGS, SHUTDOWN_TIMEOUT_ARGS, KV_TRANSFER_ARGS), the
#: flags they set, and the env var moegen's arguments go into.
PRESET_VARIABLE_FLAGS = frozenset({"--disable-access-log-for-endpoints",
                                   "--disable-uvicorn-access-log", "--shutdown-timeout"})
ADDITIONAL_ARGS = "VLLM_ADDITIONAL_ARGS"
#: The env var the data-parallel presets read ``--api-server-count`` from
#: (config-llm-worker-data-parallel.yaml: ``${VLLM_API_SERVER_COUNT:-8}``).
API_SERVER_COUNT = "VLLM_API_SERVER_COUNT"
API_SERVER_FLAGS = frozenset({"--api-server-count", "-asc"})
#: vLLM releases read at the source where a ``--data-parallel-start-rank`` that ``is not None``
#: on a node that is not headless infers hybrid load balancing, and the leader's handshake then
#: refuses the headless workers ("Remote engine N must not use --headless in external or hybrid
#: dp lb mode"; gpustack/gpustack#6236). KServe's data-parallel leader passes
#: ``--data-parallel-start-rank 0`` (config-llm-worker-data-parallel.yaml:199) and its workers
#: ``--headless`` (:481); older releases tested the start rank's truthiness, where 0 infers
#: nothing (unverified here: a warning).
HYBRID_FROM_START_RANK = {
    "0.32.0": "vLLM 0.32.0 vllm/engine/arg_utils.py:2448, vllm/v1/engine/utils.py:1377,1464",
    "0.33.0": "vLLM 0.33.0 vllm/engine/arg_utils.py:2489-2491, "
              "vllm/v1/engine/utils.py:1419-1422,1503-1507",
}
#: KServe's default engine image, which runs as a non-root user
#: (kserve/kserve@v0.20.0:config/llmisvcconfig/config-llm-template.yaml:10).
NON_ROOT_IMAGE = "ghcr.io/llm-d/llm-d-cuda"


def _facts(rel: str, *path: str):
    return controllers.value(NAME, rel, *path)


def _src(rel: str, *path: str) -> str:
    return controllers.source(NAME, rel, *path)


def preset(mode: str, spread: Spread, pd: bool) -> str:
    """The well-known preset KServe merges under a workload (config_merge.go
    combineBaseRefsConfig): single-node or data-parallel, prefill / decode / plain."""
    kind = "" if not pd else ("prefill-" if mode == "prefill" else "decode-")
    shape = "template" if spread is Spread.SINGLE else "worker-data-parallel"
    return f"kserve-config-llm-{kind}{shape}"


def injected_flags(rel: str, name: str) -> frozenset[str]:
    """Every flag the preset ``name``'s command sets (leader and workers), plus those its
    argument variables set (and ``-asc``, the short form of ``--api-server-count``, where the
    preset sets that: moegen passes it through the preset's env var instead)."""
    flags: set[str] = set()
    for c in _facts(rel, "presets", name).values():
        flags |= set(c["flags"])
    if "--api-server-count" in flags:
        flags |= API_SERVER_FLAGS
    return frozenset(flags | PRESET_VARIABLE_FLAGS)


def drop_flags(args: tuple[str, ...] | list[str], flags: frozenset[str]) -> list[str]:
    """``args`` without the options in ``flags`` and their values."""
    out: list[str] = []
    for group in group_args(tuple(args)):
        if group[0].partition("=")[0] not in flags:
            out += group
    return out


def option(args: list[str], flags: frozenset[str]) -> str | None:
    """The value of the last of ``flags`` in ``args`` (``--x v`` or ``--x=v``), or None."""
    value = None
    for group in group_args(tuple(args)):
        name, eq, inline = group[0].partition("=")
        if name in flags:
            value = inline if eq else (group[1] if len(group) > 1 else None)
    return value


class KServeTarget:
    """KServe LLMInferenceService on the vLLM presets."""

    name = NAME

    def findings(self, deployment: Deployment) -> list[Finding]:
        """TGT001-003, TGT010 (what an LLMInferenceService cannot express) and TGT011 (what
        KServe replaces or ignores)."""
        found = Findings(deployment)
        rel = common_findings(deployment, found, ("engines",))
        if rel is None or deployment.spec.spec.engine.name != "vllm":
            return found.out
        _cannot(deployment, rel, found)
        _start_rank(deployment, rel, found)
        _non_root(deployment, rel, found)
        _replaced(deployment, rel, found)
        return found.out

    def render(self, plan: DeploymentPlan, deployment: Deployment) -> dict[str, str]:
        """``llminferenceservice.yaml`` and a kustomization over it."""
        rel = release(deployment)
        obj = service(plan, deployment, rel)
        files = {"llminferenceservice.yaml": document(plan, obj)}
        files["kustomization.yaml"] = kustomization(plan, files)
        return dict(sorted(files.items()))


def _cannot(d: Deployment, rel: str, found: Findings) -> None:
    """TGT010: what an LLMInferenceService on the presets cannot express."""
    spec = d.spec.spec
    by = roles_by_mode(d)
    types = _src(rel, "crd")
    if not (len(by["unified"]) == 1 and not by["prefill"] and not by["decode"]) \
            and not (len(by["decode"]) == 1 and len(by["prefill"]) == 1 and not by["unified"]):
        found.add("TGT010", E, ("spec", "roles"),
                  "an LLMInferenceService holds one workload, or one decode workload and its "
                  f"prefill (spec.prefill; {types}); the spec has "
                  f"{len(by['prefill'])} prefill, {len(by['decode'])} decode and "
                  f"{len(by['unified'])} unified roles",
                  "one unified role, or one prefill and one decode role")
    pd = bool(by["prefill"])
    for i, role in d.role_items():
        lay, rs = role.layout, spec.roles[i]
        shape = Spread.DATA if lay.spread is Spread.DATA else Spread.SINGLE
        containers = _facts(rel, "presets", preset(role.mode, shape, pd))
        if lay.spread is Spread.PER_RANK:
            workers = _src(rel, "presets", preset(role.mode, Spread.DATA, pd), "worker")
            found.add("TGT010", E, ("spec", "roles", i, "workload"),
                      f"role {role.name!r}: the data-parallel presets run one API leader and "
                      f"headless workers ({workers}); pod-per-rank (one API server per rank) "
                      "has no preset", "use workload: lws")
        elif lay.spread is Spread.MODEL or (lay.multi_pod and lay.pipeline > 1):
            found.add("TGT010", E, ("spec", "roles", i, "parallel"),
                      f"role {role.name!r} spans {len(lay.pods)} pods without data "
                      "parallelism; KServe's multi-node presets are data-parallel only (the "
                      "pipeline-parallel ones are not shipped: "
                      f"{_src(rel, 'pipelinePresetsUnshipped')}; webhook: "
                      f"{_src(rel, 'workerNeedsDataOrPipeline')})",
                      "fit the instance in one node, or spread it by data parallelism")
        # The port the role's Service reaches: the routing sidecar's in front of a PD decode,
        # else the engine's.
        front = containers["template"].get("sidecar") or containers["template"]
        api_port = front["port"]
        if role.serving.port != api_port:
            path = ("spec", "roles", i, "serving", "port") if rs.serving is not None \
                and rs.serving.port is not None else ("spec", "serving", "port")
            found.add("TGT010", E, path,
                      f"role {role.name!r} serves on {role.serving.port}; KServe's preset "
                      f"serves on {api_port} ({front['source']})",
                      f"use serving.port {api_port}")
        if role.kv_transfer is not None and role.mode == "decode" \
                and role.kv_transfer.connector != "nixl":
            sidecar = _facts(rel, "presets", "kserve-config-llm-decode-template", "template")
            found.add("TGT010", E, ("spec", "roles", i, "kvTransfer", "connector"),
                      f"role {role.name!r}: KServe's decode presets put the llm-d routing "
                      f"sidecar in front of vLLM with --kv-connector="
                      f"{sidecar['sidecar']['kvConnector']} ({sidecar['sidecar']['source']}); "
                      f"{role.kv_transfer.connector} is not it", "use kvTransfer.connector nixl")
        if rs.placement is not None and rs.placement.topologyKey is not None:
            found.add("TGT010", E, ("spec", "roles", i, "placement", "topologyKey"),
                      "the LeaderWorkerSets KServe creates carry no exclusive-topology "
                      f"annotation of moegen's ({types} has no field for it)",
                      "remove placement.topologyKey (platform.topology keeps a group in one "
                      "domain through pod affinity)")
    volume = spec.model.volume
    if volume is None or volume.persistentVolumeClaim is None:
        found.add("TGT010", E, ("spec", "model", "volume"),
                  "KServe mounts the model from model.uri at /mnt/models; moegen renders a "
                  f"PersistentVolumeClaim as pvc://<claim> ({_src(rel, 'pvcMount')}), other "
                  "volume sources have no URI", "set model.volume.persistentVolumeClaim")
    platform = spec.platform
    if platform is not None and platform.scheduler is not None \
            and platform.scheduler.kind != "default":
        found.add("TGT010", E, ("spec", "platform", "scheduler", "kind"),
                  f"an LLMInferenceService has no gang-scheduling field ({types}); "
                  f"platform.scheduler.kind {platform.scheduler.kind} is not expressed",
                  "remove platform.scheduler, or use target kubernetes")
    if platform is not None and platform.lws is not None and platform.lws.disaggregatedSet:
        found.add("TGT010", E, ("spec", "platform", "lws", "disaggregatedSet"),
                  "KServe creates its own workloads; a DisaggregatedSet is the kubernetes "
                  "target's", "remove platform.lws.disaggregatedSet")


def _replaced(d: Deployment, rel: str, found: Findings) -> None:
    """TGT011: what KServe replaces or ignores (warnings)."""
    spec = d.spec.spec
    kind = rendered_router(spec)
    if kind == "deployment":
        found.add("TGT011", W, ("spec", "router"),
                  f"KServe routes through its own scheduler (router.scheduler: an endpoint "
                  f"picker and InferencePool, {_src(rel, 'crd')}); moegen's "
                  f"{spec.router.kind or 'default'} router, its policy and replicas are not "
                  "rendered", "set router.kind inference-gateway to say so")
    if spec.monitoring is not None and spec.monitoring.enabled:
        found.add("TGT011", W, ("spec", "monitoring", "enabled"),
                  "moegen's PodMonitor, ServiceMonitor, PrometheusRule and dashboard are not "
                  "rendered for KServe: its controller names and labels the pods",
                  "scrape KServe's pods with the cluster's own monitors")
    for i, rs in enumerate(spec.roles):
        if rs.autoscaling is not None:
            found.add("TGT011", W, ("spec", "roles", i, "autoscaling", "metric"),
                      f"KServe scales through its Workload Variant Autoscaler "
                      f"(scaling.wva.keda, {_src(rel, 'kedaScaling')}): moegen renders the "
                      "bounds and the KEDA behaviour; the metric and target are WVA's",
                      "configure WVA's saturation thresholds")
    platform = spec.platform
    if platform is not None and platform.lws is not None and not platform.lws.disaggregatedSet:
        found.add("TGT011", W, ("spec", "platform", "lws"),
                  "KServe creates the LeaderWorkerSets; platform.lws is not applied",
                  "remove platform.lws")


def _start_rank(d: Deployment, rel: str, found: Findings) -> None:
    """TGT010 (TGT011 where unverified): KServe's data-parallel leader passes
    ``--data-parallel-start-rank 0`` and its workers ``--headless``; the vLLM releases of
    :data:`HYBRID_FROM_START_RANK` then infer hybrid load balancing on the leader, which refuses
    its headless workers. The preset's command is one shell script that sets the start rank
    itself (``START_RANK=0``), so no env or argument of moegen's removes it."""
    version = getattr(d.dialect, "version", None)
    for i, role in d.role_items():
        if role.layout.spread is not Spread.DATA or not role.layout.multi_pod:
            continue
        name = preset(role.mode, Spread.DATA, any(r.mode == "prefill" for r in d.spec.spec.roles))
        leader = _src(rel, "presets", name, "template")
        worker = _src(rel, "presets", name, "worker")
        where = HYBRID_FROM_START_RANK.get(version)
        if where is not None:
            found.add("TGT010", E, ("spec", "roles", i, "parallel"),
                      f"role {role.name!r}: KServe's data-parallel leader passes "
                      f"--data-parallel-start-rank 0 ({leader}) and its workers --headless "
                      f"({worker}); vLLM {version} infers hybrid load balancing from a start "
                      f"rank that is not None on a node that is not headless, and the leader "
                      f"then refuses the headless workers ({where}; gpustack/gpustack#6236)",
                      "fit the instance in one node (one pod runs every DP rank), or use "
                      "target kubernetes (its leader passes no start rank)")
        else:
            found.add("TGT011", W, ("spec", "roles", i, "parallel"),
                      f"role {role.name!r}: KServe's data-parallel leader passes "
                      f"--data-parallel-start-rank 0 ({leader}) and its workers --headless "
                      f"({worker}); vLLM 0.32.0 and 0.33.0 infer hybrid load balancing from it "
                      f"and refuse the workers; vLLM {version} was not read for it",
                      "check vllm/engine/arg_utils.py of the release: `start_rank is not None "
                      "and not headless` refuses, a truthiness test does not")


def _non_root(d: Deployment, rel: str, found: Findings) -> None:
    """TGT010: KServe's presets run the engine container with ``runAsNonRoot: true``; the
    kubelet refuses to start an image that runs as root (as vllm/vllm-openai does) unless the
    pod names a non-root ``runAsUser`` (``privileged`` does not lift the check). KServe's own
    image (:data:`NON_ROOT_IMAGE`) runs as a non-root user."""
    spec = d.spec.spec
    c = _facts(rel, "presets", "kserve-config-llm-template", "template")
    if not c["runAsNonRoot"]["value"] \
            or spec.engine.image.partition("@")[0].rpartition(":")[0] == NON_ROOT_IMAGE:
        return
    rooted = [i for i, rs in enumerate(spec.roles)
              if not (effective_pod(spec, rs).security_context or {}).get("runAsUser")]
    if not rooted:
        return
    i = rooted[0]
    path = ("spec", "roles", i, "pod") if spec.roles[i].pod is not None else ("spec", "pod")
    found.add("TGT010", E, path,
              f"KServe's presets run the engine container with runAsNonRoot "
              f"({c['runAsNonRoot']['source']}); the kubelet refuses to start an image that "
              f"runs as root (as vllm/vllm-openai does; engine.image is {spec.engine.image}) "
              f"unless the pod names a non-root runAsUser (roles "
              f"{', '.join(spec.roles[j].name for j in rooted)})",
              "set a non-root user of the image: spec.pod.securityContext.runAsUser: 1000 "
              f"(an overlay), or use KServe's default image {NON_ROOT_IMAGE} "
              f"({_src(rel, 'presets', 'kserve-config-llm-template', 'template')})")


# --- the object -------------------------------------------------------------------------------

def service(plan: DeploymentPlan, d: Deployment, rel: str) -> dict[str, Any]:
    """The LLMInferenceService of a checked deployment (TGT010 found nothing)."""
    crd = _facts(rel, "crd")
    spec = d.spec.spec
    pd = any(r.mode == "prefill" for r in spec.roles)
    body: dict[str, Any] = {
        "model": {"uri": f"pvc://{spec.model.volume.persistentVolumeClaim.claimName}",
                  "name": spec.model.name},
    }
    for i, role in d.role_items():
        work = _workload(plan, d, rel, i, pd)
        if role.mode == "prefill":
            body["prefill"] = work
        else:
            body.update(work)
    if spec.router.enabled:
        gateway: dict[str, Any] = {}
        ref = spec.router.gateway.parentRef if spec.router.gateway is not None else None
        if ref is not None:
            gateway = {"refs": [{"name": ref.name,
                                 **({"namespace": ref.namespace} if ref.namespace else {})}]}
        # KServe adds --ha-enable-leader-election itself above one replica
        # (kserve/kserve@v0.20.0:pkg/controller/v1alpha2/llmisvc/scheduler.go:406-412).
        replicas = spec.router.replicas or ROUTER_REPLICAS
        body["router"] = {"scheduler": {"replicas": replicas}, "route": {},
                          "gateway": gateway}
    return {"apiVersion": f"{crd['group']}/{crd['storage']}", "kind": crd["kind"],
            "metadata": {"name": plan.name, "namespace": plan.namespace,
                         "labels": dict(plan.labels)},
            "spec": body}


def _workload(plan: DeploymentPlan, d: Deployment, rel: str, i: int, pd: bool) -> dict[str, Any]:
    """One WorkloadSpec: replicas or scaling, typed parallelism, labels, pod templates."""
    role = d.roles[i]
    rs = d.spec.spec.roles[i]
    lay = role.layout
    rp = next(r for r in plan.roles if r.name == role.name)
    name = preset(role.mode, lay.spread, pd)
    flags = injected_flags(rel, name)
    launch = rp.launch
    additional = drop_flags(launch.common, flags)
    api = option(list(rs.engineArgs), API_SERVER_FLAGS)   # the user's, else the engine default
    par: dict[str, Any] = {"tensor": lay.tensor}
    if lay.pipeline > 1:
        par["pipeline"] = lay.pipeline
    if lay.data > 1:
        par.update(data=lay.data, dataLocal=lay.dp_local)
    if lay.expert_parallel:
        par["expert"] = True
    if lay.spread is Spread.DATA and launch.rendezvous_port:
        par["dataRPCPort"] = launch.rendezvous_port
    if lay.spread is Spread.SINGLE:
        additional += drop_flags(launch.per_pod[0], flags)
    work = next(w for w in plan.workloads if w.role == role.name)
    # Not the keys the controller labels and selects its pods by (spec.labels would override
    # them: PropagateMap), nor moegen's per-pod ones.
    owned = set(_facts(rel, "podLabels")) | {L_API, L_METRICS}
    labels = {k: v for k, v in work.leader.labels.items() if k not in owned}
    out: dict[str, Any] = {}
    scaled = next((so for so in plan.scaled_objects if so.role == role.name), None)
    if scaled is None:
        out["replicas"] = rs.replicas
    else:
        out["scaling"] = _scaling(scaled.spec)
    out["parallelism"] = par
    out["labels"] = labels
    # The engine pod's waivers, and those of the checks that read fields KServe's preset
    # container fills in the merge (generator/security.py "kserve-preset"), renumbered.
    skips = security.skip_annotations(
        [*security.engine_waivers_of(work.leader.annotations),
         *(w for w in security.WAIVERS.values() if w.key.startswith("kserve-preset"))])
    own = {k: v for k, v in work.leader.annotations.items()
           if not k.startswith(security.SKIP_PREFIX)}
    out["annotations"] = {**own, **sized_load(work), **skips}
    items = env_items(plan, role.name)
    extra_env = [{"name": ADDITIONAL_ARGS, "value": " ".join(_quote(a) for a in additional)}]
    if lay.spread is Spread.DATA:
        dp_default = lay.data if _v(d.dialect.version) >= (0, 16, 0) else 1
        extra_env.append({"name": API_SERVER_COUNT, "value": api or str(dp_default)})
    startup = d.host[i].startup_s if d.host and d.host[i] is not None else None
    containers = _facts(rel, "presets", name)
    out["template"] = _pod(work.leader.spec, items, extra_env, startup, additional,
                           containers["template"]["capabilities"])
    if lay.multi_pod:
        # The workers share one template: it runs with the first worker's NIXL base (the
        # kubernetes target's per-pod env) and declares what every worker then binds.
        default = dict(items).get(NIXL_PORT_ENV)
        base = pod_base(launch, 1, default)
        worker_env = [e for e in extra_env if e["name"] == ADDITIONAL_ARGS]
        if base is not None and base != default:
            worker_env.append({"name": NIXL_PORT_ENV, "value": base})
        ports = bound_ports(launch, range(1, len(launch.per_pod)), base, default)
        out["worker"] = _pod(work.worker.spec, items, worker_env, None, additional,
                             containers["worker"]["capabilities"], ports)
    return out


def _v(version: str) -> tuple[int, int, int]:
    major, minor, patch = (int(x) for x in version.split(".")[:3])
    return major, minor, patch


def _quote(arg: str) -> str:
    """One argument as the presets' ``eval`` re-reads it (placeholders stay expandable)."""
    if POD_IP in arg or LEADER_IP in arg:
        return f'"{arg}"'
    return shlex.quote(arg)


def _scaling(so: dict[str, Any]) -> dict[str, Any]:
    """scaling: the ScaledObject's bounds and KEDA behaviour as WVA's KEDA actuator."""
    keda = {k: so[k] for k in ("pollingInterval", "cooldownPeriod", "initialCooldownPeriod",
                               "advanced") if k in so}
    return {"minReplicas": so["minReplicaCount"], "maxReplicas": so["maxReplicaCount"],
            "wva": {"keda": keda}}


#: Volumes and mounts the controller provides: the model (pvc://, at /mnt/models); the presets'
#: /dev/shm volume is named dshm too, so moegen's sized one replaces it.
_PROVIDED = ("model",)
_PRESET_MOUNTED = ("dshm", "model")


def _pod(spec: PodSpecPlan, items: list[tuple[str, str]], extra_env: list[dict[str, Any]],
         startup_s: int | None, additional: list[str], preset_caps: list[str],
         ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A pod template merged over the preset's (strategic merge on the container ``main``):
    image, environment, resources, moegen's extra ports and volumes, the startup budget, and
    the capabilities moegen needs that the preset does not add (IPC_LOCK for RDMA: the
    single-node presets add none; a strategic merge replaces the ``add`` list, so the
    preset's own stay in it)."""
    args = " ".join(additional)
    keep = set() if POD_IP in args else {"MOEGEN_POD_IP"}
    if LEADER_IP not in args:
        keep |= {INDEX_ENV, LEADER_HOST_ENV}
    env = merged_env([*(e for e in spec.env if e["name"] not in keep), *extra_env], items)
    main: dict[str, Any] = {"name": "main", "image": spec.image, "env": env,
                            "resources": spec.resources}
    ports = [p for p in (spec.ports if ports is None else ports) if p["name"] != "http"]
    if ports:
        main["ports"] = ports
    if spec.security_context.get("privileged"):
        main["securityContext"] = {"privileged": True}
    else:
        need = set(spec.security_context.get("capabilities", {}).get("add", []))
        if need - set(preset_caps):
            main["securityContext"] = {"capabilities": {"add": sorted(need | set(preset_caps)),
                                                        "drop": ["ALL"]}}
    if startup_s is not None:
        # The kubernetes target's probe timing merged over the preset's probes (whose httpGet,
        # port and scheme stay): its readiness and liveness answer within 1 s
        # (config-llm-worker-data-parallel.yaml livenessProbe, readinessProbe), which an engine
        # busy with a long prefill misses.
        for kind, probe in spec.probes.items():
            main[kind] = {k: v for k, v in probe.items() if k != "httpGet"}
        main["startupProbe"] = {**main.get("startupProbe", {}), "periodSeconds": STARTUP_PERIOD_S,
                                "failureThreshold": startup_s // STARTUP_PERIOD_S}
    main["volumeMounts"] = [m for m in spec.volume_mounts if m["name"] not in _PRESET_MOUNTED]
    pod: dict[str, Any] = {"containers": [main],
                           "securityContext": dict(spec.pod_security_context),
                           "terminationGracePeriodSeconds": spec.termination_grace_s,
                           "volumes": [v for v in spec.volumes if v["name"] not in _PROVIDED]}
    for key, value in (("serviceAccountName", spec.service_account),
                       ("priorityClassName", spec.priority_class),
                       ("schedulerName", spec.scheduler_name),
                       ("nodeSelector", spec.node_selector or None),
                       ("tolerations", spec.tolerations or None),
                       ("affinity", spec.affinity),
                       ("imagePullSecrets", spec.image_pull_secrets or None)):
        if value:
            pod[key] = value
    if spec.host_network:
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = spec.dns_policy
    return pod


TARGET = KServeTarget()
