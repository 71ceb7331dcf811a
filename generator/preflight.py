"""``gen preflight``: read-only checks of the cluster a checked spec will be applied to.

Reads the Kubernetes API with the official Python client (``kubernetes``; GET requests only):

* PRE001: the CustomResourceDefinitions the output needs are installed (LeaderWorkerSet; the
  prometheus-operator kinds with ``spec.monitoring``; Kueue or Volcano with
  ``spec.platform.scheduler``);
* PRE002: every pool's nodeSelector matches at least ``nodes`` nodes;
* PRE003: their GPUs are the pool's (GPU feature discovery labels ``nvidia.com/gpu.product`` and
  ``nvidia.com/gpu.memory`` in MiB, NVIDIA k8s-device-plugin gpu-feature-discovery; NVIDIA pools
  only: AMD nodes carry other labels);
* PRE004: each node's allocatable GPUs, RDMA devices, CPU and memory hold the pods moegen places
  on it (requests from ``gen size``);
* PRE005: the namespace exists; PRE006: the PersistentVolumeClaims exist, and a claim that pods
  on several nodes mount is ReadOnlyMany or ReadWriteMany (the weights) / ReadWriteMany (a
  shared cache); PRE007: the PriorityClass and ServiceAccount the pods name exist; PRE008: the
  Kueue LocalQueue exists; PRE009: with ``platform.topology`` (no Kueue) the API server is
  Kubernetes 1.31 or later (``/version``), whose podAffinity keeps ``matchLabelKeys``.

Findings are errors (the deployment would not run) except PRE003, a warning when the labels are
missing (no GPU feature discovery). Nothing is written to the cluster.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from .catalog import GPUS
from .engines.routers import rendered_router
from .errors import Finding, Location, Severity
from .manifests.pods import MATCH_LABEL_KEYS_SINCE, group_affinity
from .pods import effective_pod, quantity_cpu, quantity_gib

#: GPU feature discovery labels (NVIDIA/k8s-device-plugin, gpu-feature-discovery).
GPU_PRODUCT, GPU_MEMORY = "nvidia.com/gpu.product", "nvidia.com/gpu.memory"
#: A pool's GPU id matches a node when the product label names its family and the memory label
#: is within 2 % of the catalog's HBM (MiB): drivers report a few MiB less or more.
MEMORY_TOLERANCE = 0.02


@dataclass(frozen=True)
class Api:
    """The read calls preflight makes (a thin seam over the kubernetes client, for tests)."""

    #: GET ``path`` with query parameters -> the JSON body, or None on 404.
    get: Callable[..., dict[str, Any] | None]
    #: Release the connections.
    close: Callable[[], None] = lambda: None


def client_api(context: str | None = None, kubeconfig: str | None = None) -> Api:
    """An :class:`Api` over the kubeconfig's cluster (``kubernetes.config``; raises
    ``kubernetes.config.ConfigException`` when there is none)."""
    from kubernetes import client, config

    config.load_kube_config(config_file=kubeconfig, context=context)
    return api_for(client.ApiClient())


def api_for(api_client) -> Api:
    """An :class:`Api` over a ``kubernetes.client.ApiClient`` (GET with its auth and TLS)."""
    from kubernetes.client.exceptions import ApiException

    def get(path: str, query: dict[str, str] | None = None) -> dict[str, Any] | None:
        params = list((query or {}).items())
        try:
            if hasattr(api_client, "param_serialize"):   # kubernetes >= 35 (openapi-generator 7)
                request = api_client.param_serialize("GET", path, query_params=params,
                                                     auth_settings=["BearerToken"])
                response = api_client.call_api(*request)
                response.read()
                if response.status == 404:
                    return None
                if response.status >= 400:
                    raise ApiException(status=response.status, reason=response.reason)
                return json.loads(response.data or b"null")
            return api_client.call_api(path, "GET", query_params=params, response_type="object",
                                       auth_settings=["BearerToken"],
                                       _return_http_data_only=True)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    return Api(get, api_client.close)


def _finding(code: str, path: tuple, message: str, hint: str = "",
             severity: Severity = Severity.ERROR) -> Finding:
    jp = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return Finding(code, severity, jp, message, hint, Location("<cluster>", 0, 0))


def _selector(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _crds(checked) -> list[tuple[str, str]]:
    """(CRD name, what needs it) of the output."""
    spec = checked.spec.spec
    out = []
    if any(r.workload in ("lws", "pod-per-rank") for r in spec.roles):
        out.append(("leaderworkersets.leaderworkerset.x-k8s.io", "the LeaderWorkerSets"))
    lws = spec.platform.lws if spec.platform else None
    if lws is not None and lws.disaggregatedSet:
        out.append(("disaggregatedsets.disaggregatedset.x-k8s.io", "platform.lws.disaggregatedSet"))
    if spec.monitoring is not None and spec.monitoring.enabled:
        out += [("podmonitors.monitoring.coreos.com", "spec.monitoring"),
                ("servicemonitors.monitoring.coreos.com", "spec.monitoring"),
                ("prometheusrules.monitoring.coreos.com", "spec.monitoring")]
    if rendered_router(spec) == "gateway":
        out += [("inferencepools.inference.networking.k8s.io", "router kind inference-gateway"),
                ("httproutes.gateway.networking.k8s.io", "router kind inference-gateway")]
    sched = spec.platform.scheduler if spec.platform else None
    if sched is not None and sched.kind == "kueue":
        out.append(("localqueues.kueue.x-k8s.io", "platform.scheduler kueue"))
    if sched is not None and sched.kind == "volcano":
        out.append(("podgroups.scheduling.volcano.sh", "platform.scheduler volcano"))
    return out


def preflight(checked, api: Api) -> list[Finding]:
    """Every finding about the cluster ``api`` reads, for a spec that passed every check."""
    spec = checked.spec
    s = spec.spec
    ns = spec.metadata.namespace
    out: list[Finding] = []
    for name, why in _crds(checked):
        if api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}") is None:
            out.append(_finding("PRE001", ("spec",), f"CRD {name} is not installed ({why} "
                                "needs it)", "install its controller before applying"))
    if api.get(f"/api/v1/namespaces/{ns}") is None:
        out.append(_finding("PRE005", ("metadata", "namespace"), f"namespace {ns!r} does not exist",
                            f"kubectl create namespace {ns}"))
    out += _nodes(checked, api)
    out += _claims(checked, api)
    out += _references(checked, api)
    out += _server_version(checked, api)
    return out


def _server_version(checked, api: Api) -> list[Finding]:
    """PRE009: the group pod affinity's ``matchLabelKeys`` needs Kubernetes >= 1.31."""
    if not any(group_affinity(checked.spec, r.layout.multi_pod) for r in checked.roles):
        return []
    info = api.get("/version") or {}
    # gitVersion "v1.30.4-eks-..." (minor alone may read "30+" on managed clusters).
    m = re.match(r"v?(\d+)\.(\d+)", str(info.get("gitVersion", "")))
    version = (int(m[1]), int(m[2])) if m else None
    if version is None or version >= MATCH_LABEL_KEYS_SINCE:
        return []
    want = ".".join(map(str, MATCH_LABEL_KEYS_SINCE))
    return [_finding("PRE009", ("spec", "platform", "topology"),
                     f"the API server is Kubernetes {version[0]}.{version[1]}; podAffinity "
                     f"matchLabelKeys (the group affinity of platform.topology) needs {want} "
                     "(MatchLabelKeysInPodAffinity, KEP-3633): an older server drops it, and "
                     "every group of the namespace is then held in one topology domain",
                     f"upgrade the cluster to {want}+, or place groups with Kueue "
                     "(platform.scheduler kind kueue) or without platform.topology")]


def _pods_per_node(checked, role_index: int) -> int:
    """Engine pods of one role on one node (one per node; pod-per-rank packs them)."""
    role = checked.spec.spec.roles[role_index]
    lay = checked.roles[role_index].layout
    gpn = checked.spec.spec.nodePools[role.nodePool].gpusPerNode
    return max(1, gpn // lay.gpus_per_pod) if role.workload == "pod-per-rank" else 1


def _nodes(checked, api: Api) -> list[Finding]:
    s = checked.spec.spec
    out: list[Finding] = []
    for pool_name, pool in s.nodePools.items():
        path = ("spec", "nodePools", pool_name)
        nodes = (api.get("/api/v1/nodes", {"labelSelector": _selector(pool.nodeSelector)})
                 or {}).get("items", [])
        if len(nodes) < pool.nodes:
            out.append(_finding("PRE002", (*path, "nodes"),
                                f"pool {pool_name!r}: {len(nodes)} node(s) match nodeSelector "
                                f"{_selector(pool.nodeSelector) or '(none)'}, the spec counts on "
                                f"{pool.nodes}", "fix the nodeSelector or the pool's nodes"))
        gpu = GPUS[pool.gpu]
        family = pool.gpu.split("-")[0]
        users = [i for i, r in enumerate(s.roles) if r.nodePool == pool_name]
        for node in nodes:
            meta, status = node.get("metadata", {}), node.get("status", {})
            labels = meta.get("labels") or {}
            name = meta.get("name", "?")
            product, memory = labels.get(GPU_PRODUCT), labels.get(GPU_MEMORY)
            if gpu.vendor != "nvidia":
                pass  # NVIDIA GPU feature discovery labels only
            elif product is None or memory is None:
                out.append(_finding("PRE003", (*path, "gpu"),
                                    f"node {name}: no {GPU_PRODUCT}/{GPU_MEMORY} labels: its GPU "
                                    f"cannot be checked against {pool.gpu}",
                                    "deploy NVIDIA GPU feature discovery", Severity.WARNING))
            elif family not in product or not memory.isdigit() \
                    or abs(int(memory) - gpu.hbm_mib) > MEMORY_TOLERANCE * gpu.hbm_mib:
                out.append(_finding("PRE003", (*path, "gpu"),
                                    f"node {name}: {product} with {memory} MiB is not a "
                                    f"{pool.gpu} ({gpu.hbm_mib} MiB)",
                                    "fix the pool's gpu or its nodeSelector"))
            out += _allocatable(checked, api, path, name, status.get("allocatable") or {}, users)
    return out


def _allocatable(checked, api: Api, path: tuple, node: str, alloc: dict,
                 users: list[int]) -> list[Finding]:
    """One node against the largest pod set a role of the pool places on it."""
    s = checked.spec.spec
    out: list[Finding] = []
    for i in users:
        role = s.roles[i]
        lay = checked.roles[i].layout
        per_node = _pods_per_node(checked, i)
        host = checked.host[i]
        pod = effective_pod(s, role)
        gpu = GPUS[s.nodePools[role.nodePool].gpu]
        need: dict[str, float] = {gpu.resource: lay.gpus_per_pod * per_node}
        if s.network.rdma is not None:
            need[s.network.rdma.resourceName] = s.network.rdma.resourceCount * per_node
        if host is not None:
            big = max(host.pods, key=lambda p: p.memory_gib)
            need["cpu"] = (quantity_cpu(pod.cpu) if pod.cpu else big.cpu) * per_node
            need["memory"] = (quantity_gib(pod.memory) if pod.memory else big.memory_gib) \
                * per_node
        for res, want in need.items():
            have_raw = alloc.get(res)
            if have_raw is None:
                have = 0.0
            elif res == "cpu":
                have = quantity_cpu(str(have_raw))
            elif res == "memory":
                have = quantity_gib(str(have_raw))
            else:
                have = float(have_raw)
            if have < want:
                unit = " GiB" if res == "memory" else ""
                out.append(_finding("PRE004", (*path,), f"node {node}: allocatable {res} "
                                    f"{have:g}{unit} < {want:g}{unit} that role {role.name!r} "
                                    f"places on it", "give the pool nodes that hold the pods, or "
                                    "lower the pod's request"))
    return out


def _claims(checked, api: Api) -> list[Finding]:
    s = checked.spec.spec
    ns = checked.spec.metadata.namespace
    out: list[Finding] = []
    multi = sum(r.replicas * len(checked.roles[i].layout.pods)
                for i, r in enumerate(s.roles)) > 1
    claims = []
    if s.model.volume is not None and s.model.volume.persistentVolumeClaim is not None:
        claims.append((s.model.volume.persistentVolumeClaim.claimName, ("spec", "model", "volume"),
                       {"ReadOnlyMany", "ReadWriteMany"}, "the weights"))
    for i, role in enumerate(s.roles):
        cache = effective_pod(s, role).cache
        if cache.volume is not None and cache.volume.persistentVolumeClaim is not None:
            claims.append((cache.volume.persistentVolumeClaim.claimName,
                           ("spec", "roles", i, "pod", "cache"), {"ReadWriteMany"},
                           "the compile cache"))
    for name, path, shared, what in dict.fromkeys(
            (c[0], c[1], frozenset(c[2]), c[3]) for c in claims):
        pvc = api.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}")
        if pvc is None:
            out.append(_finding("PRE006", path, f"PersistentVolumeClaim {name!r} ({what}) does "
                                f"not exist in {ns!r}", "create it before applying"))
            continue
        modes = set((pvc.get("spec") or {}).get("accessModes") or [])
        if multi and not modes & shared:
            out.append(_finding("PRE006", path, f"PersistentVolumeClaim {name!r} ({what}) is "
                                f"{', '.join(sorted(modes)) or 'without access modes'}: pods on "
                                "several nodes mount it",
                                f"use a claim with {' or '.join(sorted(shared))}"))
    return out


def _references(checked, api: Api) -> list[Finding]:
    s = checked.spec.spec
    ns = checked.spec.metadata.namespace
    out: list[Finding] = []
    seen = set()
    for i, role in enumerate(s.roles):
        pod = effective_pod(s, role)
        for kind, name, url in (
                ("PriorityClass", pod.priority_class,
                 "/apis/scheduling.k8s.io/v1/priorityclasses/{}"),
                ("ServiceAccount", pod.service_account,
                 f"/api/v1/namespaces/{ns}/serviceaccounts/{{}}")):
            if name and (kind, name) not in seen:
                seen.add((kind, name))
                if api.get(url.format(name)) is None:
                    out.append(_finding("PRE007", ("spec", "roles", i, "pod"),
                                        f"{kind} {name!r} does not exist", f"create the {kind}"))
    sched = s.platform.scheduler if s.platform else None
    if sched is not None and sched.kind == "kueue" and sched.queue:
        if api.get(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/{sched.queue}") \
                is None and api.get(f"/apis/kueue.x-k8s.io/v1beta1/namespaces/{ns}/localqueues/"
                                    f"{sched.queue}") is None:
            out.append(_finding("PRE008", ("spec", "platform", "scheduler", "queue"),
                                f"Kueue LocalQueue {sched.queue!r} does not exist in {ns!r}",
                                "create the LocalQueue (and its ClusterQueue)"))
    return out
