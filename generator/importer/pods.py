"""A pod template -> the GPU, node pool, network, volumes, environment and pod settings of its
role (the inverse of ``manifests/pods.py``'s ``pod_spec``).

The GPU comes from, in order: the command line's ``--gpu``; the GPU product a node selector or
required node affinity names (NVIDIA GPU feature discovery's ``nvidia.com/gpu.product``,
NVIDIA/k8s-device-plugin docs/gpu-feature-discovery; GKE's ``cloud.google.com/gke-accelerator``,
https://cloud.google.com/kubernetes-engine/docs/how-to/gpus; cloud instance types); the cache
directory moegen itself renders (``engines/caches.py`` ``cache_root`` names the GPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..catalog import GPUS
from ..engines import gateway as gw
from ..engines.caches import CACHE_ENV_KEYS, CACHE_MOUNT
from ..errors import Location
from ..spec.provenance import json_path
from ..manifests.pods import IMEX_CLAIM
from .hygiene import pod_issues
from .launch import Issue, Launch
from .metadata import one_line, shared_metadata
from .shell import is_runtime, runtime, show
from .workloads import Pods, Workload

#: GPU product label values and accelerator names -> catalog id (lower-cased, longest first).
GPU_NAMES = {
    "gb300": "GB300-288GB", "gb200": "GB200-186GB", "b300": "B300-288GB", "b200": "B200-180GB",
    "h200": "H200-141GB", "h20-141": "H20-141GB", "h20-96": "H20-96GB", "h20": "H20-96GB",
    "h800": "H800-80GB", "h100": "H100-80GB", "a100-80": "A100-80GB", "a100": "A100-80GB",
    "l40s": "L40S-48GB", "l20": "L20-48GB", "mi355": "MI355X-288GB", "mi325": "MI325X-256GB",
    "mi300": "MI300X-192GB",
    # cloud instance types (AWS p5/p5e/p5en/p6, GCP a3/a4, OCI BM.GPU.*, Azure ND*)
    "p5.48xlarge": "H100-80GB", "p5e.48xlarge": "H200-141GB", "p5en.48xlarge": "H200-141GB",
    "p6-b200": "B200-180GB", "a3-highgpu": "H100-80GB", "a3-megagpu": "H100-80GB",
    "a3-ultragpu": "H200-141GB", "a4-highgpu": "B200-180GB", "bm.gpu.gb200": "GB200-186GB",
    "bm.gpu.h100": "H100-80GB", "bm.gpu.h200": "H200-141GB", "nd96isr_h100": "H100-80GB",
    "nd96isr_h200": "H200-141GB",
}
GPU_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator",
              "node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type",
              "amd.com/gpu.product-name")
_CACHE_GPU = re.compile(re.escape(CACHE_MOUNT) + r"/[^/]+/([A-Za-z0-9-]+)/")
#: RDMA device-plugin resources (names of the common plugins: rdma/*, the NVIDIA network
#: operator's rdma/rdma_shared_device_*, SR-IOV nvidia.com/*rdma*, *roce*, and AWS's EFA
#: device plugin, vpc.amazonaws.com/efa: engines/network.py NICS).
_RDMA = re.compile(r"(^rdma/|rdma|roce|hca|^vpc\.amazonaws\.com/efa$)", re.I)
#: The largest /dev/shm the spec holds (spec/operations.py Pod.shmSizeGiB), GiB.
_SHM_MAX_GIB = 1024
#: Volumes moegen renders itself (manifests/pods.py): not carried as extraVolumes.
_OWN_VOLUMES = ("dshm", "model", "compile-cache", "hf-cache", "tmp")


def gpu_from_name(text: str) -> str | None:
    """The catalog GPU a product label / accelerator / instance type names, or None."""
    low = str(text).lower().replace("_", "-") if text else ""
    low = low.replace("nvidia-", "").replace("nvidia ", "")
    for key in sorted(GPU_NAMES, key=len, reverse=True):
        if key.replace("_", "-") in low:
            gpu = GPU_NAMES[key]
            if key == "h20" and ("141" in low or "144" in low):
                return "H20-141GB"
            return gpu
    return None


def _required_labels(spec: dict) -> dict[str, str]:
    """Node labels a required node affinity pins to one value (the only term, ``In`` one
    value): the same nodes as a nodeSelector with them (Kubernetes "Assign Pods to Nodes")."""
    na = ((spec.get("affinity") or {}).get("nodeAffinity") or {}) \
        .get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = na.get("nodeSelectorTerms") or []
    if len(terms) != 1 or not isinstance(terms[0], dict):
        return {}
    out = {}
    for e in terms[0].get("matchExpressions") or []:
        if isinstance(e, dict) and e.get("operator") == "In" and len(e.get("values") or []) == 1:
            out[str(e.get("key"))] = str(e["values"][0])
    return out


def _selectors(spec: dict) -> list[tuple[str, str, tuple]]:
    """(label, value, path) the pod requires: nodeSelector and required node affinity terms."""
    out = [(k, str(v), ("nodeSelector", k)) for k, v in (spec.get("nodeSelector") or {}).items()]
    na = ((spec.get("affinity") or {}).get("nodeAffinity") or {}) \
        .get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for i, term in enumerate(na.get("nodeSelectorTerms") or []):
        for j, e in enumerate((term or {}).get("matchExpressions") or []):
            if isinstance(e, dict) and e.get("operator") == "In":
                for v in e.get("values") or []:
                    out.append((str(e.get("key")), str(v),
                                ("affinity", "nodeAffinity", "requiredDuringScheduling"
                                 "IgnoredDuringExecution", "nodeSelectorTerms", i,
                                 "matchExpressions", j)))
    return out


@dataclass
class PodFields:
    """What a pod template says.

    Attributes:
        gpus: GPUs per pod; gpu: catalog id (None: not stated); gpu_loc: where it was read.
        pool: nodeSelector / tolerations of the role's pool.
        network: ``spec.network`` fields; network_locs: path under it -> location.
        env: the role's environment (what moegen does not derive), in order.
        token: ``model.tokenSecret``; volume: ``model.volume`` (a VolumeSource mapping).
        pod: ``roles[].pod`` fields; locs: spec path under the role -> location.
    """

    gpus: int | None = None
    #: The GPU resource as written when it is not a positive whole number (``nvidia.com/gpu:
    #: 0``, ``"eight"``): (resource name, value, where); IMP009 says it.
    bad_gpus: tuple[str, Any, Location, str] | None = None
    sidecar_port: int | None = None
    gpu: str | None = None
    gpu_loc: Location | None = None
    pool: dict = field(default_factory=dict)
    network: dict = field(default_factory=dict)
    network_locs: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    env_locs: dict = field(default_factory=dict)
    token: dict | None = None
    volume: dict | None = None
    #: ``model.hub`` when the engine downloads its model from the Hub: the cache volume and
    #: where it is mounted (``{}``: no volume holds the cache).
    hub: dict | None = None
    pod: dict = field(default_factory=dict)
    locs: dict = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)


def _quantity_gpus(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def read_pod(w: Workload, pods: Pods, launch: Launch, gpu_option: str | None,
             model_path: str | None, channels: frozenset[str] = frozenset()) -> PodFields:
    """The role fields of ``pods`` (``launch``: its engine container; ``channels``: the
    ResourceClaimTemplates of the input that are ComputeDomain IMEX channels)."""
    prov = w.doc.provenance
    spec, c = pods.spec, launch.container
    out = PodFields()
    res = c.get("resources") if isinstance(c.get("resources"), dict) else {}
    limits = dict(res.get("limits")) if isinstance(res.get("limits"), dict) else {}
    # Dynamo v1alpha1: the component's resources.limits.custom are extra resources of the main
    # container (ai-dynamo/dynamo deploy/operator api v1alpha1 Resources.Custom).
    custom = (w.extra.get("resources") or {}).get("limits", {}).get("custom") \
        if w.platform == "dynamo" else None
    if isinstance(custom, dict):
        limits.update({str(k): v for k, v in custom.items()})
    requests = res.get("requests") if isinstance(res.get("requests"), dict) else {}
    for key in ("nvidia.com/gpu", "amd.com/gpu"):
        if key in limits or key in requests:
            raw = limits.get(key, requests.get(key))
            out.gpus = _quantity_gpus(raw)
            if not out.gpus or out.gpus < 0:
                side = "limits" if key in limits and not isinstance(custom, dict) else "requests"
                rpath = (*launch.cpath, "resources", side, key)
                out.bad_gpus = (key, raw, prov.locate(rpath), json_path(rpath))
                out.gpus = None
    if out.gpus is None and w.gpus:
        out.gpus = w.gpus
    _gpu(w, pods, launch, gpu_option, out)
    sel = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()} \
        if isinstance(spec.get("nodeSelector"), dict) else {}
    sel.update(_required_labels(spec))
    if sel:
        out.pool["nodeSelector"] = sel
    tol = spec.get("tolerations")
    if isinstance(tol, list) and tol:
        out.pool["tolerations"] = [t for t in tol if isinstance(t, dict)]
    _resources(launch, limits, requests, out)
    _network(pods, launch, limits, out)
    if "hostNetwork" in out.network:
        at = prov.locate((*pods.path, "hostNetwork"))
        out.network_locs.update({("hostNetwork",): at, ("bindAddress",): at})
    host = launch.command.get("--host") if launch.command is not None else None
    if host is not None and str(host.value) == runtime("status.podIP"):
        # --host $(status.podIP) (moegen's "${MOEGEN_POD_IP}"): the API listens on the pod's
        # IP only (spec network.bindAddress podIP).
        out.network["bindAddress"] = "podIP"
        out.network_locs[("bindAddress",)] = launch.loc(host.index)
    iface = next((k for k in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME") if k in launch.env), None)
    if "socketInterface" in out.network and iface:
        out.network_locs[("socketInterface",)] = launch.env_locations.get(iface)
    _compute_domain(w, pods, launch, res, channels, out)
    _volumes(w, pods, launch, model_path, out)
    _probes(w, pods, launch, out)
    out.issues += pod_issues(w, pods, launch, w.platform in _NO_INJECTED_PROBES)
    _pod_settings(w, pods, launch, out)
    out.sidecar_port = _sidecar(spec, launch)
    del prov
    return out


def _sidecar(spec: dict, launch: Launch) -> int | None:
    """The port of the routing sidecar in front of the engine (llm-d's disaggregation sidecar
    forwards ``--port`` to ``--vllm-port``: generator/engines/gateway.py), or None."""
    port = launch.command.get("--port") if launch.command else None
    for c in spec.get("initContainers") or []:
        if not isinstance(c, dict):
            continue
        args = [str(a) for a in (c.get("args") or []) + (c.get("command") or [])]
        opts = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
        if "sidecar" not in str(c.get("image", "")) and "vllm-port" not in opts:
            continue
        if port is None or opts.get("vllm-port", str(gw.SIDECAR_ENGINE_PORT)) == str(port.value):
            try:
                return int(opts.get("port", "8000"))
            except ValueError:
                return None
    return None


def _gpu(w: Workload, pods: Pods, launch: Launch, gpu_option: str | None,
         out: PodFields) -> None:
    prov = w.doc.provenance
    if gpu_option:
        out.gpu = gpu_option
        return
    for label, value, path in _selectors(pods.spec):
        if label in GPU_LABELS or "gpu" in label.lower() or "accelerator" in label.lower():
            gpu = gpu_from_name(value)
            if gpu is not None:
                out.gpu, out.gpu_loc = gpu, prov.locate((*pods.path, *path))
                return
    for key in CACHE_ENV_KEYS:
        m = _CACHE_GPU.match(str(launch.env.get(key) or ""))
        if m and m.group(1) in GPUS:
            out.gpu, out.gpu_loc = m.group(1), launch.env_locations.get(key)
            return


def _resources(launch: Launch, limits: dict, requests: dict, out: PodFields) -> None:
    for key, spec_key in (("cpu", "cpu"), ("memory", "memory"),
                          ("ephemeral-storage", "ephemeralStorage")):
        req = requests.get(key, limits.get(key))
        if req is None:
            continue
        out.pod[spec_key] = str(req)
        lim = limits.get(key)
        if lim is not None and str(lim) != str(req):
            out.pod.setdefault("limits", {})[spec_key] = str(lim)


def _network(pods: Pods, launch: Launch, limits: dict, out: PodFields) -> None:
    spec, env = pods.spec, launch.env
    if spec.get("hostNetwork") is True:
        out.network["hostNetwork"] = True
    iface = env.get("GLOO_SOCKET_IFNAME") or env.get("NCCL_SOCKET_IFNAME")
    if isinstance(iface, str) and re.fullmatch(r"[A-Za-z0-9_.-]+", iface):
        out.network["socketInterface"] = iface
    # A resource of count 0 requests nothing (GKE's zero-valued networking.gke.io.networks/*
    # requests beside its multi-network annotation).
    rdma = [(k, v) for k, v in limits.items() if _RDMA.search(str(k)) and str(k) != "cpu"
            and _quantity_gpus(v) != 0]
    how = _rdma_without_resource(pods, launch) if not rdma else None
    if not rdma and how is None:
        return
    r: dict[str, Any] = {}
    if rdma:
        name, count = rdma[0]
        how = f"requests {name}"
        if _RESOURCE.fullmatch(str(name)):
            r["resourceName"] = str(name)
            if _quantity_gpus(count) and _quantity_gpus(count) > 1:
                r["resourceCount"] = _quantity_gpus(count)
    devices = _devices(env)
    if devices:
        r["devices"] = devices
    gid = env.get("NCCL_IB_GID_INDEX") or env.get("NVSHMEM_IB_GID_INDEX")
    if isinstance(gid, str) and gid.isdigit():
        r["gidIndex"] = int(gid)
    pkey = env.get("NCCL_IB_PKEY") or env.get("NVSHMEM_IB_PKEY_INDEX")
    if isinstance(pkey, str) and pkey.isdigit():
        r["pkeyIndex"] = int(pkey)
    out.network["rdma"] = r
    out.network_locs[("rdma",)] = launch.loc(-1)
    if not devices:
        out.issues.append(Issue(
            "IMP004", f"the pod {how} but names no RDMA device (NCCL_IB_HCA, NVSHMEM_HCA_LIST, "
            "UCX_NET_DEVICES): imported as network.rdma without devices (NCCL, NVSHMEM and UCX "
            "use every HCA the pod sees); the NIC family is read from the resource name, else "
            "taken as mlx5 (NET030, NET031 and the NIXL backend assume it)", launch.loc(-1),
            "set NCCL_IB_HCA to the HCAs, or give network.rdma.devices in an overlay (-f)",
            notice=True))


#: An extended resource name as the spec holds it (spec/models.py Rdma.resourceName).
_RESOURCE = re.compile(r"[a-z0-9.-]+/[a-zA-Z0-9_.-]+")
#: Pod annotations that attach secondary networks: Multus's
#: (k8snetworkplumbingwg/multus-cni@v3.9.3:docs/how-to-use.md, k8s.v1.cni.cncf.io/networks) and
#: GKE multi-networking's (networking.gke.io/interfaces: the RDMA networks rdma-0 .. rdma-7 in
#: llm-d/llm-d@cc4fbfd:guides/wide-ep-lws/modelserver/gpu/vllm/gke). A network whose name says
#: RDMA (:data:`_RDMA`) gives the pod RDMA NICs without a device-plugin resource.
_NETWORK_ANNOTATIONS = ("k8s.v1.cni.cncf.io/networks", "networking.gke.io/interfaces")


def _rdma_without_resource(pods: Pods, launch: Launch) -> str | None:
    """How the pod reaches RDMA NICs without a device-plugin resource, or None: an RDMA
    network in a multi-network annotation, or the host's network with ``/dev/infiniband``
    mounted from the host (the verbs character devices, https://docs.kernel.org/infiniband/user_verbs.html)."""
    for key in _NETWORK_ANNOTATIONS:
        value = pods.annotations.get(key)
        if value is not None and _RDMA.search(str(value)):
            return f"attaches RDMA networks ({key})"
    if pods.spec.get("hostNetwork") is not True:
        return None
    host_dev = {v.get("name") for v in pods.spec.get("volumes") or [] if isinstance(v, dict)
                and str((v.get("hostPath") or {}).get("path", "")).startswith("/dev/infiniband")}
    mounts = launch.container.get("volumeMounts") or []
    if any(isinstance(m, dict) and m.get("name") in host_dev for m in mounts):
        return "runs on the host network with /dev/infiniband mounted"
    return None


def _compute_domain(w: Workload, pods: Pods, launch: Launch, res: dict,
                    channels: frozenset[str], out: PodFields) -> None:
    """``network.computeDomain`` from the pod's DRA claims (the inverse of manifests/pods.py's
    ``resource_claims``): a pod-level claim of a ComputeDomain's channel template that the
    engine container lists in ``resources.claims`` (Kubernetes PodSpec resourceClaims; Dynamo
    v1alpha1 gives the container's claims on the component's ``resources``). A claim of a
    template the input does not show to be a channel is not modelled (IMP003)."""
    listed = [res.get("claims")]
    if w.platform == "dynamo":
        listed.append((w.extra.get("resources") or {}).get("claims"))
    names = {c.get("name") for cl in listed if isinstance(cl, list) for c in cl
             if isinstance(c, dict)}
    claims = pods.spec.get("resourceClaims")
    for claim in claims if isinstance(claims, list) else []:
        if not isinstance(claim, dict) or claim.get("name") not in names:
            continue
        tpl = claim.get("resourceClaimTemplateName")
        if isinstance(tpl, str) and (tpl in channels or claim.get("name") == IMEX_CLAIM):
            out.network["computeDomain"] = {"resourceClaimTemplate": tpl}
            return
        out.issues.append(Issue(
            "IMP003", f"the engine container claims {claim.get('name')!r} (template {tpl!r}), "
            "which the input does not show to be a ComputeDomain IMEX channel: the claim is not "
            "imported", launch.loc(-1), "give the ComputeDomain in the input, or set "
            "network.computeDomain in an overlay (-f)"))


#: Variables that name the pod's HCAs: NCCL's, NVSHMEM's and UCX's device lists
#: (``name[:port]``), and DeepEP's GPU -> HCA map (``gpu:name[:port]``, deepseek-ai/DeepEP#466,
#: which llm-d's images apply: its GKE wide-EP guides set it).
_DEVICE_ENV = ("NCCL_IB_HCA", "NVSHMEM_HCA_LIST", "UCX_NET_DEVICES", "DEEP_EP_DEVICE_TO_HCA_MAPPING")


def _devices(env: dict) -> list[str]:
    for key in _DEVICE_ENV:
        v = env.get(key)
        if not isinstance(v, str) or not v or is_runtime(v) or v.startswith("^"):
            continue
        items = [d for d in v.lstrip("=").split(",") if d and d != "lo"]
        if key == "DEEP_EP_DEVICE_TO_HCA_MAPPING":
            items = [d.split(":", 1)[1] for d in items if ":" in d]
        names = list(dict.fromkeys(d.split(":")[0] for d in items))
        names = [n for n in names if re.fullmatch(r"[A-Za-z0-9_.-]+", n)]
        if names:
            return names
    return []


def _unsized_shm(container: dict, at) -> Issue:
    """IMP016 for a memory emptyDir at /dev/shm without sizeLimit: a warning when the engine
    container has no memory limit (the volume may grow to the node's memory), a notice when it
    has one: what the container writes there counts against its limit
    (https://kubernetes.io/docs/concepts/storage/volumes/#emptydir), which bounds it already."""
    res = container.get("resources") if isinstance(container.get("resources"), dict) else {}
    limits = res.get("limits") if isinstance(res.get("limits"), dict) else {}
    limit = limits.get("memory")
    if limit is None:
        return Issue("IMP016", "/dev/shm is a memory emptyDir without sizeLimit and the engine "
                     "container has no memory limit: it may grow to the node's memory",
                     at, "give the emptyDir a sizeLimit (moegen renders pod.shmSizeGiB, "
                     "default 8), or the container a memory limit")
    return Issue("IMP016", f"/dev/shm is a memory emptyDir without sizeLimit; what the engine "
                 f"writes there counts against its memory limit {limit}, which bounds it: moegen "
                 "would render pod.shmSizeGiB (default 8); not a defect", at, notice=True)


def _volumes(w: Workload, pods: Pods, launch: Launch, model_path: str | None,
             out: PodFields) -> None:
    spec, c = pods.spec, launch.container
    volumes = {v.get("name"): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
    mounts = [m for m in c.get("volumeMounts") or [] if isinstance(m, dict)]
    extra_v, extra_m = [], []
    cache_dir = hub_cache_dir(launch.env) if model_path and not model_path.startswith("/") \
        else None
    if cache_dir is not None:
        out.hub = {}
    for m in mounts:
        v = volumes.get(m.get("name"))
        mp = str(m.get("mountPath", ""))
        if v is None:
            continue
        if cache_dir is not None and _under(cache_dir, mp) and not out.hub \
                and len({k for k in v if k != "name"}) == 1:
            out.hub = {"cache": {k: val for k, val in v.items() if k != "name"},
                       "mountPath": mp.rstrip("/") or "/"}
            continue
        if mp == "/dev/shm":
            ed = v.get("emptyDir") if isinstance(v.get("emptyDir"), dict) else {}
            size = str(ed.get("sizeLimit") or "")
            if ed.get("medium") == "Memory" and not size:
                out.issues.append(_unsized_shm(c, prov_loc(w, pods, v)))
            if size.endswith("Gi") and size[:-2].isdigit():
                gib = int(size[:-2])
                if gib > _SHM_MAX_GIB:
                    out.issues.append(Issue("IMP003", f"/dev/shm sizeLimit {size} is above the "
                                            f"{_SHM_MAX_GIB} GiB pod.shmSizeGiB holds: imported "
                                            f"as {_SHM_MAX_GIB} GiB", launch.loc(-1)))
                out.pod["shmSizeGiB"] = min(gib, _SHM_MAX_GIB)
            continue
        source = {k: val for k, val in v.items() if k != "name"}
        if model_path and (model_path == mp or model_path.startswith(mp.rstrip("/") + "/")) \
                and out.volume is None and len(source) == 1:
            out.volume = source
            continue
        if mp == CACHE_MOUNT:
            cache: dict[str, Any] = {}
            ed = source.get("emptyDir")
            if isinstance(ed, dict) and str(ed.get("sizeLimit", "")).endswith("Gi"):
                cache["sizeGiB"] = int(str(ed["sizeLimit"])[:-2])
            elif len(source) == 1 and "emptyDir" not in source:
                cache["volume"] = source
            if cache and cache != {"sizeGiB": 32}:
                out.pod["cache"] = cache
            continue
        if str(m.get("name")) in _OWN_VOLUMES and w.labels.get(
                "app.kubernetes.io/managed-by") == "moegen":
            continue
        extra_v.append(v)
        extra_m.append(m)
    if extra_v:
        out.pod["extraVolumes"] = extra_v
        out.pod["extraVolumeMounts"] = extra_m
    if out.volume is None and w.platform == "dynamo" and model_path:
        out.volume = _dynamo_volume(w, model_path)
    if cache_dir is not None and not out.hub and w.platform == "dynamo":
        mount = _dynamo_mount(w, cache_dir)
        if mount is not None:
            out.hub = {"cache": {"persistentVolumeClaim": {"claimName": mount[0]}},
                       "mountPath": mount[1]}


#: The kinds whose controllers add no probe to the engine container (Deployment, StatefulSet,
#: LeaderWorkerSet, DisaggregatedSet: workloads.py ``platform`` kubernetes / lws).
_NO_INJECTED_PROBES = ("kubernetes", "lws")


def _probes(w: Workload, pods: Pods, launch: Launch, out: PodFields) -> None:
    """IMP017: the engine container of the pod that serves the API has no probe at all."""
    c = launch.container
    if w.platform not in _NO_INJECTED_PROBES or pods.index != 0 or any(
            isinstance(c.get(k), dict) for k in ("startupProbe", "readinessProbe",
                                                 "livenessProbe")):
        return
    out.issues.append(Issue(
        "IMP017", f"{w.kind} {w.name}: the engine container has no startup, readiness or "
        "liveness probe: the pod is Ready (and receives traffic) as soon as the container "
        "starts, minutes before the weights are loaded, and a hung engine is never restarted",
        w.doc.provenance.locate(launch.cpath),
        "add a startupProbe and readinessProbe on the engine's /health (moegen renders them "
        "from the startup budget)"))


#: huggingface_hub's cache when nothing places it: $HOME/.cache/huggingface, HOME=/root in the
#: engines' images (huggingface_hub 1.0 src/huggingface_hub/constants.py: HF_HOME default
#: ~/.cache/huggingface, HF_HUB_CACHE default $HF_HOME/hub).
DEFAULT_HF_HOME = "/root/.cache/huggingface"


def hub_cache_dir(env: dict) -> str:
    """Where huggingface_hub keeps downloads for a container with ``env``: HF_HUB_CACHE, else
    $HF_HOME/hub, else the default under /root (constants.py, as above)."""
    cache = env.get("HF_HUB_CACHE")
    if isinstance(cache, str) and cache.startswith("/"):
        return cache.rstrip("/")
    home = env.get("HF_HOME")
    home = home if isinstance(home, str) and home.startswith("/") else DEFAULT_HF_HOME
    return home.rstrip("/") + "/hub"


def _under(path: str, mount: str) -> bool:
    mount = mount.rstrip("/")
    return path == mount or path.startswith(mount + "/")


def _dynamo_mount(w: Workload, path: str) -> tuple[str, str] | None:
    """The PVC (name, mount point) a Dynamo component mounts over ``path``."""
    pvcs = {p.get("name") for p in w.extra.get("pvcs") or [] if isinstance(p, dict)}
    for m in w.extra.get("volumeMounts") or []:
        if not isinstance(m, dict):
            continue
        mp = str(m.get("mountPoint") or m.get("mountPath") or "").rstrip("/")
        if m.get("name") in pvcs and mp and _under(path, mp):
            return str(m["name"]), mp
    return None


def prov_loc(w: Workload, pods: Pods, volume: dict) -> Location:
    """Where volume ``volume`` of ``pods`` is declared."""
    vols = pods.spec.get("volumes") or []
    i = next((j for j, v in enumerate(vols) if v is volume), None)
    return w.doc.provenance.locate((*pods.path, "volumes", i) if i is not None else pods.path)


def _dynamo_volume(w: Workload, model_path: str) -> dict | None:
    """The PVC a Dynamo component mounts over the weights (``spec.pvcs`` + the component's
    ``volumeMounts[].mountPoint``: ai-dynamo/dynamo deploy/operator api v1alpha1)."""
    pvcs = {p.get("name") for p in w.extra.get("pvcs") or [] if isinstance(p, dict)}
    for m in w.extra.get("volumeMounts") or []:
        if not isinstance(m, dict):
            continue
        mp = str(m.get("mountPoint") or m.get("mountPath") or "").rstrip("/")
        if m.get("name") in pvcs and mp and (model_path == mp or model_path.startswith(mp + "/")):
            return {"persistentVolumeClaim": {"claimName": m["name"]}}
    return None


#: Labels and annotations controllers and moegen set on pods (not pod settings of the spec).
_OWN_LABEL = re.compile(r"^(app\.kubernetes\.io/|moegen\.dev/|leaderworkerset\.sigs\.k8s\.io/|"
                        r"kueue\.x-k8s\.io/|apps\.kubernetes\.io/|statefulset\.kubernetes\.io/|"
                        r"sglang\.ai/bootstrap-port$|"
                        # the endpoint picker's engine label, which moegen renders behind the
                        # inference gateway (engines/gateway.py engine_labels)
                        r"(llm-d\.ai|inference\.networking\.k8s\.io)/engine-type$)")

#: The policy-check exceptions moegen writes on its own pods (generator/security.py
#: skip_annotations, derived from the spec again on render).
_CHECKOV_SKIP = re.compile(r"^checkov\.io/skip\d+$")


def _pod_settings(w: Workload, pods: Pods, launch: Launch, out: PodFields) -> None:
    spec, c = pods.spec, launch.container
    for key in ("serviceAccountName", "priorityClassName", "schedulerName"):
        if isinstance(spec.get(key), str) and spec[key]:
            if key == "schedulerName" and spec[key] == "volcano" and w.labels.get(
                    "app.kubernetes.io/managed-by") == "moegen":
                pass   # moegen renders it for Volcano gangs; kept as the pod's own setting
            out.pod[key] = spec[key]
    secrets = [s.get("name") for s in spec.get("imagePullSecrets") or [] if isinstance(s, dict)]
    if secrets:
        out.pod["imagePullSecrets"] = [s for s in secrets if isinstance(s, str)]
    sc = c.get("securityContext") if isinstance(c.get("securityContext"), dict) else {}
    if sc.get("privileged") is True:
        out.pod["privileged"] = True
    psc = spec.get("securityContext") if isinstance(spec.get("securityContext"), dict) else {}
    psc = {k: v for k, v in psc.items() if not (k == "seccompProfile"
                                               and v == {"type": "RuntimeDefault"})}
    if psc:
        out.pod["securityContext"] = psc
    labels = {k: str(v) for k, v in pods.labels.items() if not _OWN_LABEL.match(str(k))}
    labels = {k: v for k, v in labels.items() if w.labels.get(k) != v}
    managed = w.labels.get("app.kubernetes.io/managed-by") == "moegen"
    ann = {k: one_line(str(v)) for k, v in pods.annotations.items()
           if not _OWN_LABEL.match(str(k)) and not (managed and _CHECKOV_SKIP.match(str(k)))}
    labels, ann = shared_metadata(w, pods, labels, ann, out)
    if labels:
        out.pod["labels"] = labels
    if ann:
        out.pod["annotations"] = ann


def token_secret(launch: Launch) -> tuple[dict | None, str | None]:
    """``model.tokenSecret`` from an HF token variable read from a Secret, and its name."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        src = launch.env_sources.get(name, "")
        if src.startswith("secret:"):
            _, secret, key = src.split(":", 2)
            return {"name": secret, "key": key}, name
    return None, None


def shown(value: Any) -> str:
    """A value for a message."""
    return show(str(value))
