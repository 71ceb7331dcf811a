"""The ``dynamo`` target: one NVIDIA ``DynamoGraphDeployment`` (nvidia.com/v1beta1): a Dynamo
frontend component and a worker component per engine role, each worker running Dynamo's
engine wrapper (``python3 -m dynamo.vllm`` / ``dynamo.sglang``) in the Dynamo runtime image.

What the Dynamo operator and runtime do and moegen therefore does not (facts: generator/facts/
controllers.py, read from ai-dynamo/dynamo's release/1.4.0 branch point e147cee by
tools/extract_controllers.py):

* ``multinode.nodeCount`` > 1: the operator injects the rank flags. vLLM: with data
  parallelism over nodes ``--data-parallel-hybrid-lb``, ``--data-parallel-size-local``,
  ``-start-rank``, ``-address`` (the leader's name) and ``-rpc-port``; with a model spanning
  nodes ``--distributed-executor-backend mp --nnodes --master-addr --master-port --node-rank``
  (``--headless`` on workers). On both paths ``VLLM_NIXL_SIDE_CHANNEL_HOST`` (the pod IP):
  backend_vllm.go:66-75 sets it on every multi-node vLLM component whose executor is mp
  (``shouldUseMpBackend``: the origin-version gate of DGDs created by an operator >= 1.0.0,
  or the executor annotation), not on the data-parallel path alone. SGLang:
  ``--dist-init-addr --nnodes --node-rank``. moegen's per-pod rank arguments are left out;
* every worker gets Dynamo's system port (9090, named ``system``) and NIXL port (19090,
  ``nixl``) with probes on the named port ``system``, and ``DYN_*`` environment; the
  operator merges moegen's container over its own with mergo's WithOverride
  (graph.go:1735-1745), where a non-empty ``ports`` list replaces the operator's, so moegen
  renders the operator's two first and names its own NIXL side channels ``vllm-nixl-<k>``;
  the frontend (``python3 -m dynamo.frontend``) serves HTTP and routes: it replaces moegen's
  router;
* ``sharedMemorySize`` sizes ``/dev/shm``; ``compilationCache`` (a PVC) is mounted and, for
  vLLM, ``VLLM_CACHE_ROOT`` set to it; ``topologyConstraint.packDomain`` packs a group in a
  Grove ClusterTopology domain;
* ``dynamo.vllm`` parses vLLM's engine arguments only (AsyncEngineArgs: no API-server flags),
  plus ``--disaggregation-mode``; ``dynamo.sglang`` parses SGLang's ServerArgs.

The runtime image bundles one engine release (ai-dynamo/dynamo pyproject.toml); engine.version
must be it (TGT032) unless spec.target.image names another image.
"""

from __future__ import annotations

from typing import Any

from .. import security
from ..security import engine_waivers_of
from ..deployment import Deployment
from ..engines.caches import CACHE_MOUNT
from ..engines.routers import ROUTER_REPLICAS, rendered_router
from ..errors import Finding
from ..facts import controllers
from ..layout import Spread
from ..manifests.plan import DeploymentPlan, RolePlan
from ..manifests.pods import INDEX_ENV, LEADER_HOST_ENV
from ..naming import L_API, L_METRICS
from ..pods import effective_pod
from .common import NIXL_PORT_ENV, E, W, Findings, bound_ports, common_findings, document, \
    env_items, kustomization, merged_env, release, resource_size, sized_load
from .kserve import drop_flags

NAME = "dynamo"
FRONTEND = "frontend"
#: The frontend container: no capability, no escalation (it serves HTTP on an unprivileged
#: port); its root filesystem stays writable (generator/security.py "dynamo-writes").
FRONTEND_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
#: What a worker fails beyond the engine pod's waivers, and the frontend's
#: (generator/security.py: the Dynamo runtime registers through the API server and writes
#: below /root; the operator adds the probes; moegen does not size the frontend).
DYNAMO_WORKER_WAIVERS = ("dynamo-api-token", "dynamo-writes", "dynamo-probes-liveness",
                         "dynamo-probes-readiness")
DYNAMO_FRONTEND_WAIVERS = ("dynamo-api-token", "dynamo-writes", "dynamo-frontend-root",
                           "dynamo-frontend-uid", "dynamo-frontend-cpu-request",
                           "dynamo-frontend-cpu-limit", "dynamo-frontend-memory-request",
                           "dynamo-frontend-memory-limit", "dynamo-probes-liveness",
                           "dynamo-probes-readiness", "controller-network-policy")



#: Options of ``vllm serve`` that moegen renders and that are no engine arguments (vLLM 0.33.0
#: vllm/entrypoints/openai/cli_args.py FrontendArgs ``--host``/``--port``;
#: vllm/entrypoints/cli/serve.py ``--headless``, ``--api-server-count``,
#: ``--shutdown-timeout``): ``dynamo.vllm`` refuses them (it parses AsyncEngineArgs only).
VLLM_SERVER_ONLY = frozenset({"--host", "--port", "--headless", "--api-server-count", "-asc",
                              "--shutdown-timeout", "--disable-uvicorn-access-log",
                              "--disable-access-log-for-endpoints"})
#: The vLLM rank flags the operator injects into a multi-node component (backend_vllm.go:
#: injectDataParallelLaunchFlags, injectMpDistributedLaunchFlags).
VLLM_RANK_FLAGS = frozenset({"--data-parallel-size-local", "--data-parallel-start-rank",
                             "--data-parallel-address", "--data-parallel-rpc-port",
                             "--data-parallel-hybrid-lb", "--nnodes", "--node-rank",
                             "--master-addr", "--master-port", "--distributed-executor-backend",
                             "--headless"})
#: The SGLang rank flags it injects (backend_sglang.go getMultinodeFlags).
SGLANG_RANK_FLAGS = frozenset({"--dist-init-addr", "--nnodes", "--node-rank"})
#: dynamo.vllm's worker kind (components/src/dynamo/vllm/backend_args.py --disaggregation-mode).
DISAGGREGATION_MODE = {"prefill": "prefill", "decode": "decode"}
#: The worker ports of the operator's base container (ai-dynamo/dynamo@e147cee:deploy/operator/
#: internal/dynamo/component_worker.go:30-41; names and numbers: deploy/operator/internal/
#: consts/consts.go:20-21,27-28). Its probes (component_worker.go:43-80) and the worker
#: Service's target port (graph.go:924-928) name ``system``.
OPERATOR_PORTS = ({"name": "system", "containerPort": 9090, "protocol": "TCP"},
                  {"name": "nixl", "containerPort": 19090, "protocol": "TCP"})
#: What moegen names its vLLM NIXL side-channel ports on Dynamo (``nixl`` is the operator's).
NIXL_PORT_NAME = "vllm-nixl"


def _v(rel: str, *path: str):
    return controllers.value(NAME, rel, *path)


def _src(rel: str, *path: str) -> str:
    return controllers.source(NAME, rel, *path)


def image(d: Deployment, rel: str) -> str:
    """The workers' and frontend's image: spec.target.image, else the release's runtime image
    of the engine (``nvcr.io/nvidia/ai-dynamo/<engine>-runtime:<release>``)."""
    t = d.spec.spec.target
    return t.image or f"{_v(rel, 'runtimeImage', d.spec.spec.engine.name)}:{rel}"


class DynamoTarget:
    """NVIDIA Dynamo DynamoGraphDeployment."""

    name = NAME

    def findings(self, deployment: Deployment) -> list[Finding]:
        """TGT001-002, TGT030 (what a DynamoGraphDeployment cannot express), TGT031 (what
        Dynamo replaces or ignores), TGT032 (the runtime image's engine release)."""
        found = Findings(deployment)
        rel = common_findings(deployment, found, ("engines",), dynamo=True)
        if rel is None:
            return found.out
        spec = deployment.spec.spec
        engine = spec.engine.name
        bundled = _v(rel, "bundled", engine) if engine in ("vllm", "sglang") else None
        if bundled is not None and spec.target.image is None \
                and deployment.dialect is not None and deployment.dialect.version != bundled:
            found.add("TGT032", E, ("spec", "engine", "version"),
                      f"Dynamo {rel}'s {engine} runtime image bundles {engine} {bundled} "
                      f"({_src(rel, 'bundled', engine)}); the flags are rendered for "
                      f"{spec.engine.version}", f"set engine.version \"{bundled}\", or name "
                      "an image of that release in spec.target.image")
        _cannot(deployment, rel, found)
        _replaced(deployment, rel, found)
        return found.out

    def render(self, plan: DeploymentPlan, deployment: Deployment) -> dict[str, str]:
        """``dynamographdeployment.yaml`` and a kustomization."""
        rel = release(deployment)
        files = {"dynamographdeployment.yaml": document(plan, graph(plan, deployment, rel))}
        files["kustomization.yaml"] = kustomization(plan, files)
        return dict(sorted(files.items()))


def _cannot(d: Deployment, rel: str, found: Findings) -> None:
    """TGT030: what a DynamoGraphDeployment cannot express."""
    spec = d.spec.spec
    crd = _src(rel, "crd")
    for i, role in d.role_items():
        rs = spec.roles[i]
        server = sorted({a.partition("=")[0] for a in rs.engineArgs} & VLLM_SERVER_ONLY) \
            if engine_name(d) == "vllm" else []
        if server:
            found.add("TGT030", E, ("spec", "roles", i, "engineArgs"),
                      f"role {role.name!r}: dynamo.vllm parses vLLM's engine arguments only "
                      f"({_src(rel, 'vllmEngineParser')}); {', '.join(server)} is an API-server "
                      "option (Dynamo's frontend serves HTTP)", "remove it from engineArgs")
        if role.layout.spread is Spread.PER_RANK:
            found.add("TGT030", E, ("spec", "roles", i, "workload"),
                      f"role {role.name!r}: Dynamo runs one worker per node of a multi-node "
                      f"component and injects its own data-parallel flags "
                      f"({_src(rel, 'vllm', 'dataParallelFlags')}); pod-per-rank has no form",
                      "use workload: lws")
        if rs.placement is not None and rs.placement.topologyKey is not None:
            found.add("TGT030", E, ("spec", "roles", i, "placement", "topologyKey"),
                      f"Dynamo packs a group by a Grove ClusterTopology domain "
                      f"(topologyConstraint, {crd}), not by a node label",
                      "use platform.topology with spec.target.clusterTopology and packDomain")
        if role.kv_transfer is not None and engine_name(d) == "vllm" \
                and role.kv_transfer.connector != "nixl":
            found.add("TGT030", E, ("spec", "roles", i, "kvTransfer", "connector"),
                      f"role {role.name!r}: dynamo.vllm's disaggregation runs over NIXL "
                      f"(components/src/dynamo/vllm/args.py at {_src(rel, 'vllmEngineParser')}"
                      "); moegen renders no other connector for it", "use connector nixl")
    if rendered_router(spec) == "gateway":
        found.add("TGT030", E, ("spec", "router", "kind"),
                  f"Dynamo's frontend (or its epp component, {crd}) routes; moegen's inference "
                  "gateway objects select pods Dynamo labels itself", "use the default router "
                  "(Dynamo's frontend replaces it)")
    platform = spec.platform
    target = spec.target
    if platform is not None and platform.topology is not None \
            and (target.clusterTopology is None or target.packDomain is None):
        found.add("TGT030", E, ("spec", "target"),
                  f"platform.topology on Dynamo is a topologyConstraint: a Grove "
                  f"ClusterTopology and one of its domains ({crd})",
                  "set spec.target.clusterTopology and spec.target.packDomain")
    if (target.clusterTopology is None) != (target.packDomain is None):
        found.add("TGT030", E, ("spec", "target", "packDomain"),
                  "spec.target.clusterTopology and packDomain go together (the domain is one "
                  "of the ClusterTopology's)", "set both, or neither")
    if platform is not None and platform.lws is not None and platform.lws.disaggregatedSet:
        found.add("TGT030", E, ("spec", "platform", "lws", "disaggregatedSet"),
                  "a DisaggregatedSet is the kubernetes target's; Dynamo groups the components",
                  "remove platform.lws.disaggregatedSet")
    for i, rs in enumerate(spec.roles):
        if rs.name.lower() == FRONTEND and spec.router.enabled:
            found.add("TGT030", E, ("spec", "roles", i, "name"),
                      f"the frontend is the component {FRONTEND!r} (component names are unique "
                      f"case-insensitively: {crd})", "rename the role")


def engine_name(d: Deployment) -> str:
    return d.spec.spec.engine.name


def _replaced(d: Deployment, rel: str, found: Findings) -> None:
    """TGT031: what Dynamo replaces or ignores."""
    spec = d.spec.spec
    if rendered_router(spec) == "deployment":
        found.add("TGT031", W, ("spec", "router"),
                  "Dynamo's frontend component (python3 -m dynamo.frontend) serves HTTP and "
                  "routes to the workers; moegen's router, its policy and discovery are not "
                  "rendered", "size the frontend with router.replicas")
    if spec.monitoring is not None and spec.monitoring.enabled:
        found.add("TGT031", W, ("spec", "monitoring", "enabled"),
                  f"Dynamo's workers serve their metrics on its system port "
                  f"{_v(rel, 'systemPort')} ({_src(rel, 'systemPort')}); moegen's monitoring "
                  "objects are not rendered", "scrape Dynamo's components")
    for i, rs in enumerate(spec.roles):
        if rs.autoscaling is not None:
            found.add("TGT031", W, ("spec", "roles", i, "autoscaling"),
                      "Dynamo scales components through its scaling adapter "
                      "(scalingAdapter) and planner; moegen's ScaledObject is not rendered",
                      "scale the component with Dynamo's planner or its DGDSA")
    platform = spec.platform
    if platform is not None and platform.scheduler is not None \
            and platform.scheduler.kind != "default":
        found.add("TGT031", W, ("spec", "platform", "scheduler", "kind"),
                  "Dynamo gang-schedules a multi-node component itself (Grove PodCliques); "
                  "platform.scheduler is not applied", "remove platform.scheduler")
    if platform is not None and platform.lws is not None and not platform.lws.disaggregatedSet:
        found.add("TGT031", W, ("spec", "platform", "lws"),
                  "Dynamo picks its own multi-node workload (Grove, or LWS); platform.lws is "
                  "not applied", "remove platform.lws")


# --- the object -------------------------------------------------------------------------------

def worker_args(rp: RolePlan, engine: str, multi_pod: bool) -> tuple[list[str], list[str]]:
    """(command, args) of a worker: Dynamo's wrapper of the engine, moegen's arguments without
    what the operator injects (multi-node rank flags) and, for vLLM, without the API-server
    options ``dynamo.vllm`` refuses."""
    launch = rp.launch
    if engine == "vllm":
        rank = VLLM_RANK_FLAGS if multi_pod else frozenset()
        args = ["--model", launch.program[-1]]
        args += drop_flags(launch.common, VLLM_SERVER_ONLY | rank)
        if not multi_pod:
            args += drop_flags(launch.per_pod[0], VLLM_SERVER_ONLY)
        if rp.mode in DISAGGREGATION_MODE:
            args += ["--disaggregation-mode", DISAGGREGATION_MODE[rp.mode]]
        return ["python3", "-m", "dynamo.vllm"], args
    args = list(launch.common)
    if not multi_pod:
        args += list(launch.per_pod[0])
    else:
        args = drop_flags(args, SGLANG_RANK_FLAGS)
    return ["python3", "-m", "dynamo.sglang"], args


def worker_ports(rp: RolePlan, base: str | None) -> list[dict[str, Any]]:
    """The container's complete port list (mergo replaces the operator's with a non-empty
    one): the operator's :data:`OPERATOR_PORTS`, then moegen's extra ports (NIXL side
    channels, bootstrap) without the HTTP port (the frontend serves HTTP) and the rendezvous
    port (the operator's ranks use its own). Every pod runs with the env file's NIXL base
    ``base`` (one template), so the side channels are declared as every pod binds them."""
    launch = rp.launch
    ours = bound_ports(launch, range(len(launch.per_pod)), base, base, NIXL_PORT_NAME)
    taken = {p["name"] for p in OPERATOR_PORTS} | {p["containerPort"] for p in OPERATOR_PORTS}
    out = [dict(p) for p in OPERATOR_PORTS]
    for p in ours:
        if p["name"] == "http" or p["containerPort"] == launch.rendezvous_port:
            continue
        if p["containerPort"] in taken:
            continue
        if p["name"] in taken:
            p = {**p, "name": f"moegen-{p['name']}"[:15]}
        out.append(p)
    return out


def _component(plan: DeploymentPlan, d: Deployment, rel: str, i: int) -> dict[str, Any]:
    """The worker component of role ``i``."""
    role, rs = d.roles[i], d.spec.spec.roles[i]
    rp = next(r for r in plan.roles if r.name == role.name)
    work = next(w for w in plan.workloads if w.role == role.name)
    lay = role.layout
    engine = engine_name(d)
    multi = lay.multi_pod
    command, args = worker_args(rp, engine, multi)
    leader = work.leader.spec
    specs = [leader] + ([work.worker.spec] if multi and work.worker is not None else [])
    pod = effective_pod(d.spec.spec, rs)
    cache = pod.cache.volume.persistentVolumeClaim if pod.cache.volume is not None else None
    drop_env = {"MOEGEN_POD_IP", INDEX_ENV, LEADER_HOST_ENV}
    if multi and engine == "vllm":
        # The operator sets it on every multi-node vLLM component, DP and mp paths alike
        # (backend_vllm.go:66-75).
        drop_env.add("VLLM_NIXL_SIDE_CHANNEL_HOST")
    items = env_items(plan, role.name)
    if cache is not None and engine == "vllm":
        items = [(k, v) for k, v in items if k != _v(rel, "vllm", "cacheRoot")]
    env = merged_env([e for e in leader.env if e["name"] not in drop_env], items)
    resources = max((s.resources for s in specs), key=resource_size)
    main: dict[str, Any] = {"name": _v(rel, "mainContainer"), "image": image(d, rel),
                            "command": command, "args": args, "env": env,
                            "resources": resources,
                            "ports": worker_ports(rp, dict(items).get(NIXL_PORT_ENV))}
    # Dynamo's runtime writes below /root (security.py "dynamo-writes"): a writable root.
    main["securityContext"] = {k: v for k, v in leader.security_context.items()
                               if k != "readOnlyRootFilesystem"}
    drop_vol = {"dshm"} | ({"compile-cache"} if cache is not None else set())
    main["volumeMounts"] = [m for m in leader.volume_mounts if m["name"] not in drop_vol]
    spec: dict[str, Any] = {"containers": [main],
                            "securityContext": dict(leader.pod_security_context),
                            "terminationGracePeriodSeconds": leader.termination_grace_s,
                            "volumes": [v for v in leader.volumes if v["name"] not in drop_vol]}
    for key, value in (("serviceAccountName", leader.service_account),
                       ("priorityClassName", leader.priority_class),
                       ("nodeSelector", leader.node_selector or None),
                       ("tolerations", leader.tolerations or None),
                       ("affinity", leader.affinity),
                       ("imagePullSecrets", leader.image_pull_secrets or None)):
        if value:
            spec[key] = value
    if leader.host_network:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = leader.dns_policy
    labels = {k: v for k, v in work.leader.labels.items() if k not in (L_API, L_METRICS)}
    meta: dict[str, Any] = {"labels": labels}
    # The engine pod's waivers and Dynamo's own (generator/security.py), renumbered.
    skips = security.skip_annotations(
        [*engine_waivers_of(work.leader.annotations),
         *(security.WAIVERS[k] for k in DYNAMO_WORKER_WAIVERS)])
    own = {k: v for k, v in work.leader.annotations.items()
           if not k.startswith(security.SKIP_PREFIX)}
    meta["annotations"] = {**own, **sized_load(work), **skips}
    out: dict[str, Any] = {"name": role.name,
                           "type": role.mode if role.mode in DISAGGREGATION_MODE else "worker",
                           "replicas": rs.replicas,
                           "sharedMemorySize": f"{pod.shm_gib}Gi",
                           "podTemplate": {"metadata": meta, "spec": spec}}
    if multi:
        out["multinode"] = {"nodeCount": len(lay.pods)}
    if cache is not None:
        out["compilationCache"] = {"pvcName": cache.claimName, "mountPath": CACHE_MOUNT}
    target = d.spec.spec.target
    if target.packDomain is not None and multi:
        out["topologyConstraint"] = {"packDomain": target.packDomain}
    if target.image is not None:
        out["runtimeVersionOverride"] = rel
    return out


def graph(plan: DeploymentPlan, d: Deployment, rel: str) -> dict[str, Any]:
    """The DynamoGraphDeployment: the frontend and one worker component per role."""
    crd = _v(rel, "crd")
    spec = d.spec.spec
    components = []
    if spec.router.enabled:
        main: dict[str, Any] = {"name": _v(rel, "mainContainer"), "image": image(d, rel),
                                "securityContext": dict(FRONTEND_SECURITY)}
        pod: dict[str, Any] = {"containers": [main], "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}
        if spec.model.volume is not None and spec.model.path:
            # The frontend tokenizes: it reads the model's tokenizer files from the path the
            # workers register (the recipes mount the model volume on the frontend too).
            main["volumeMounts"] = [{"name": "model", "mountPath": spec.model.path,
                                     "readOnly": True}]
            pod["volumes"] = [{"name": "model", **spec.model.volume.sources()}]
        skips = security.skip_annotations(
            [security.WAIVERS[k] for k in DYNAMO_FRONTEND_WAIVERS]
            + [security.WAIVERS[k] for k in ("image-digest", "image-pull")
               if not security.has_digest(main["image"])])
        front: dict[str, Any] = {"name": FRONTEND, "type": "frontend",
                                 "replicas": spec.router.replicas or ROUTER_REPLICAS,
                                 "podTemplate": {"metadata": {"annotations": skips},
                                                 "spec": pod}}
        if spec.target.image is not None:
            front["runtimeVersionOverride"] = rel
        components.append(front)
    for i, _ in d.role_items():
        components.append(_component(plan, d, rel, i))
    body: dict[str, Any] = {"backendFramework": engine_name(d), "components": components}
    if spec.target.clusterTopology is not None:
        body["topologyConstraint"] = {"clusterTopologyName": spec.target.clusterTopology}
    return {"apiVersion": f"{crd['group']}/{crd['storage']}", "kind": crd["kind"],
            "metadata": {"name": plan.name, "namespace": plan.namespace,
                         "labels": dict(plan.labels)},
            "spec": body}


TARGET = DynamoTarget()
