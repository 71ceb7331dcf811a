"""The objects around the engines that say more about a deployment: its router or inference
gateway, monitoring, autoscaling, gang scheduling and placement, read back into the spec fields
that render them (the inverse of ``manifests/plan.py``, ``manifests/monitoring.py``,
``manifests/scaling.py``, ``manifests/workloads.py`` and ``manifests/pods.py``).

Objects belong to a deployment when they carry its ``app.kubernetes.io/instance`` label (moegen
labels every object it renders) or, for the router, when they select its engine pods.
"""

from __future__ import annotations

import re
from typing import Any

from .. import naming
from ..naming import SIZED_LOAD
from ..engines import router_releases as rr
from ..engines import routers as rt
from ..engines.router_releases import PickerRelease
from ..facts import lws as lwsv
from ..spec.load import Document
from ..spec.models import ENGINE_DEFAULT
from .build import MANAGED, Imported

_KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
_KUEUE_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
_VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"
_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"


def _m(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _mine(doc: Document, base: str) -> bool:
    labels = _m(_m(doc.data.get("metadata")).get("labels"))
    return labels.get("app.kubernetes.io/instance") == base


def _kind(doc: Document) -> str:
    return str(doc.data.get("kind", "")) if isinstance(doc.data, dict) else ""


def apply_objects(imported: Imported, docs: list[Document]) -> None:
    """Set the spec fields the objects beside the engines show (in place)."""
    spec = imported.data["spec"]
    base = imported.data["metadata"]["name"]
    mine = [d for d in docs if isinstance(d.data, dict) and _mine(d, base)]
    managed = any(r.workload.labels.get(MANAGED[0]) == MANAGED[1] for r in imported.roles)
    _sized_load(imported, spec)
    _router(imported, spec, mine, managed)
    _monitoring(imported, spec, mine)
    _autoscaling(imported, spec, mine)
    _platform(imported, spec)
    if managed:
        _hoist_pod(spec)


def _router(imported: Imported, spec: dict, docs: list[Document], managed: bool) -> None:
    prov = imported.provenance
    base = imported.data["metadata"]["name"]
    pool = next((d for d in docs if _kind(d) == "InferencePool"), None)
    if pool is not None:
        router: dict[str, Any] = {"kind": rt.GATEWAY_KIND}
        route = next((d for d in docs if _kind(d) == "HTTPRoute"), None)
        refs = _m(_m(route.data).get("spec")).get("parentRefs") if route else None
        if isinstance(refs, list) and refs and isinstance(refs[0], dict):
            ref = {k: refs[0][k] for k in ("name", "namespace") if k in refs[0]}
            router.setdefault("gateway", {})["parentRef"] = ref
            prov.locations[("spec", "router", "gateway")] = route.provenance.locate(
                ("spec", "parentRefs"))
        ports = _m(pool.data.get("spec")).get("targetPorts") or []
        supervised = any(r.launch.command is not None and r.launch.command.get(
            "--data-parallel-multi-port-external-lb") for r in imported.roles)
        local = [r.launch.command.value("--data-parallel-size-local") for r in imported.roles
                 if r.launch.command is not None]
        if len(ports) == 1 and not supervised and any(v and v.isdigit() and int(v) >= 2
                                                      for v in local):
            router.setdefault("gateway", {})["rankEndpoints"] = False
        epp = _by_role(docs, "endpoint-picker")
        if epp is not None:
            _release(router, _image(epp), lambda v: PickerRelease(v).image("epp"),
                     rr.known("llm-d-router"))
            _replicas(router, epp, 1)
            _service_account(router, epp, naming.epp_name(base))
        spec["router"] = router
        prov.locations[("spec", "router")] = pool.provenance.locate(())
        return
    dep = _by_role(docs, "router")
    modes = {r["mode"] for r in spec["roles"]}
    if dep is None:
        if managed and {"prefill", "decode"} <= modes:
            spec["router"] = {"enabled": False}
        return
    c = _container(dep)
    args = [str(a) for a in c.get("args") or []]
    command = [str(a) for a in c.get("command") or []]
    kind = "smg" if "smg" in command else "vllm-router"
    router = {}
    if kind != rt.DEFAULT_KIND.get(spec["engine"]["name"]):
        router["kind"] = kind
    repo = rt.ROUTER_IMAGE_REPOSITORY[kind]
    _release(router, _image(dep), lambda v: f"{repo}:v{v}", rr.known(rr.COMPONENT[kind]))
    _replicas(router, dep, rt.ROUTER_REPLICAS)
    for flag, key, conv in (("--port", "port", int), ("--policy", "policy", str)):
        if flag in args and args.index(flag) + 1 < len(args):
            value = conv(args[args.index(flag) + 1])
            if (key, value) not in (("port", 8080), ("policy", "round_robin")):
                router[key] = value
    if "--service-discovery" not in args:
        router["discovery"] = False
    _service_account(router, dep, naming.router_name(base))
    if router:
        spec["router"] = router
        imported.provenance.locations[("spec", "router")] = dep.provenance.locate(())


def _by_role(docs: list[Document], role: str) -> Document | None:
    return next((d for d in docs if _kind(d) == "Deployment" and _m(_m(
        d.data.get("metadata")).get("labels")).get("moegen.dev/role") == role), None)


def _container(dep: Document) -> dict:
    containers = _m(_m(_m(dep.data.get("spec")).get("template")).get("spec")).get("containers")
    return containers[0] if isinstance(containers, list) and containers \
        and isinstance(containers[0], dict) else {}


def _image(dep: Document) -> str:
    return str(_container(dep).get("image") or "")


def _release(router: dict, image: str, image_of, versions: list[str]) -> None:
    """``router.version`` (a known release's image, not the newest) or ``router.image``."""
    if not image or image == image_of(versions[-1]):
        return
    v = next((v for v in versions if image_of(v) == image), None)
    if v is not None:
        router["version"] = v
    else:
        router["image"] = image


def _replicas(router: dict, dep: Document, default: int) -> None:
    n = _m(dep.data.get("spec")).get("replicas")
    if isinstance(n, int) and n != default:
        router["replicas"] = n


def _service_account(router: dict, dep: Document, own: str) -> None:
    """``router.serviceAccountName`` when the pods run as another account than their own."""
    sa = _m(_m(_m(dep.data.get("spec")).get("template")).get("spec")).get("serviceAccountName")
    if isinstance(sa, str) and sa and sa != own:
        router["serviceAccountName"] = sa


def _monitoring(imported: Imported, spec: dict, docs: list[Document]) -> None:
    pm = next((d for d in docs if _kind(d) == "PodMonitor"), None)
    if pm is None:
        return
    mon: dict[str, Any] = {"enabled": True}
    eps = _m(pm.data.get("spec")).get("podMetricsEndpoints") or [{}]
    interval = _m(eps[0]).get("interval")
    if isinstance(interval, str) and interval != "15s":
        mon["interval"] = interval
    labels = _m(_m(pm.data.get("metadata")).get("labels"))
    common = imported.data["metadata"].get("labels", {})
    own = {k: v for k, v in labels.items() if not k.startswith("app.kubernetes.io/")
           and common.get(k) != v}
    if own:
        mon["labels"] = own
    dash = next((d for d in docs if _kind(d) == "ConfigMap" and "grafana_dashboard" in _m(
        _m(d.data.get("metadata")).get("labels"))), None)
    if dash is not None:
        mon["dashboard"] = True
    spec["monitoring"] = mon
    imported.provenance.locations[("spec", "monitoring")] = pm.provenance.locate(())


_LOAD = re.compile(r"(concurrency|traffic|acceptance)=([0-9./]+|engine-default)")


def _sized_load(imported: Imported, spec: dict) -> None:
    """``sizing.concurrency`` and ``spec.traffic`` from the annotation moegen puts on each
    role's workload (manifests/workloads.py ``SIZED_LOAD``): what the rendered admission
    limits, CUDA graphs and durations follow from. The platform targets carry it on the
    workload's annotations (KServe's WorkloadSpec) or on its leader's pod template (RBG,
    Dynamo, AIBrix: their roles or components have no annotations of their own)."""
    for role, r in zip(spec["roles"], imported.roles):
        text = str(r.workload.annotations.get(SIZED_LOAD)
                   or r.workload.leader.annotations.get(SIZED_LOAD, ""))
        found = dict(_LOAD.findall(text))
        if "concurrency" in found and found["concurrency"].isdigit():
            role.setdefault("sizing", {})["concurrency"] = int(found["concurrency"])
        elif found.get("concurrency") == ENGINE_DEFAULT:
            role.setdefault("sizing", {})["concurrency"] = ENGINE_DEFAULT
        elif "concurrency" in role.get("sizing", {}) and (
                text or r.workload.labels.get("app.kubernetes.io/managed-by") == "moegen"):
            # moegen states a sized concurrency in the annotation; without it the admission
            # flag it rendered came from serving.maxNumSeqs (vLLM --max-num-seqs per DP rank,
            # SGLang --max-running-requests), which it goes back to
            n = role["sizing"].pop("concurrency")
            if not role["sizing"]:
                del role["sizing"]
            data = role.get("parallel", {}).get("data", 1) \
                if spec["engine"]["name"] == "vllm" else 1
            if isinstance(n, int):
                role.setdefault("serving", {})["maxNumSeqs"] = n // max(1, data)
        tin, _, tout = found.get("traffic", "").partition("/")
        if tin.isdigit() and tout.isdigit():
            spec["traffic"] = {"inputTokens": int(tin), "outputTokens": int(tout)}
            acc = found.get("acceptance")
            if acc and float(acc) != 0.7:
                spec["traffic"]["acceptance"] = float(acc)


def _autoscaling(imported: Imported, spec: dict, docs: list[Document]) -> None:
    base = imported.data["metadata"]["name"]
    for d in docs:
        if _kind(d) != "ScaledObject":
            continue
        s = _m(d.data.get("spec"))
        target = str(_m(s.get("scaleTargetRef")).get("name", ""))
        role = next((r for r in spec["roles"] if f"{base}-{r['name']}" == target), None)
        trig = _m((s.get("triggers") or [{}])[0])
        meta = _m(trig.get("metadata"))
        if role is None:
            continue
        query = str(meta.get("query", ""))
        a: dict[str, Any] = {"metric": "kvUsage" if "kv_cache" in query or "token_usage" in query
                             else "waiting"}
        try:
            a["target"] = float(meta.get("threshold"))
        except (TypeError, ValueError):
            continue
        if a["target"].is_integer() and a["metric"] == "waiting":
            a["target"] = int(a["target"])
        if isinstance(s.get("minReplicaCount"), int) and s["minReplicaCount"] != role["replicas"]:
            a["minReplicas"] = s["minReplicaCount"]
        if isinstance(s.get("maxReplicaCount"), int):
            a["maxReplicas"] = s["maxReplicaCount"]
            pool = spec["nodePools"][role["nodePool"]]
            pods = pool["nodes"] // max(role["replicas"], 1)
            pool["nodes"] = max(pool["nodes"], pods * s["maxReplicaCount"])
        role["autoscaling"] = a
        if a["metric"] == "waiting" and a.get("maxReplicas") is not None:
            del a["maxReplicas"]   # the pool's free nodes give it (the default)
        url = meta.get("serverAddress")
        if isinstance(url, str):
            spec.setdefault("monitoring", {"enabled": True})["prometheusUrl"] = url


def _lws(platform: dict, feature: str) -> dict:
    """``platform.lws``, its version raised to the first release with ``feature``
    (facts/lws.py) when it is older."""
    cfg = platform.setdefault("lws", {})
    first = lwsv.since(feature).lstrip("v")
    if "version" not in cfg or lwsv.parse(cfg["version"]) < lwsv.parse(first):
        cfg["version"] = first
    return cfg


def _restart_policy(platform: dict, policies: list[tuple[bool, str]]) -> None:
    """``platform.lws.restartPolicy`` only where the LeaderWorkerSets run another policy than
    moegen chooses by release and group shape (facts/lws.py restart_policy); the policy of the
    groups of several pods when their shapes disagree."""
    cfg = platform.get("lws")
    version = cfg["version"] if cfg is not None else None

    def default(multi: bool) -> str:
        policy, annotations = lwsv.restart_policy(version, None, multi)
        return lwsv.AFTER_START if annotations else policy
    if all(default(multi) == policy for multi, policy in policies):
        return
    chosen = next((p for multi, p in policies if multi), policies[0][1])
    if chosen == lwsv.AFTER_START or cfg is not None:
        platform.setdefault("lws", {"version": lwsv.since("recreateGroupAfterStart")[1:]})
        platform["lws"]["restartPolicy"] = chosen


def _platform(imported: Imported, spec: dict) -> None:
    platform: dict[str, Any] = {}
    surge: dict[str, int] = {}   # pool -> the largest surge instance of its roles, nodes
    policies: list[tuple[bool, str]] = []   # (several pods per group, restart policy)
    for i, r in enumerate(imported.roles):
        w = r.workload
        labels, ann = w.labels, _m(_m(w.doc.data.get("metadata")).get("annotations"))
        pod_ann = w.leader.annotations
        if labels.get(_KUEUE_QUEUE):
            platform["scheduler"] = {"kind": "kueue", "queue": labels[_KUEUE_QUEUE]}
        if ann.get(_VOLCANO_QUEUE):
            platform["scheduler"] = {"kind": "volcano", "queue": ann[_VOLCANO_QUEUE]}
        if pod_ann.get(_KUEUE_TOPOLOGY):
            platform["topology"] = {"key": pod_ann[_KUEUE_TOPOLOGY]}
        key = _group_affinity(w.leader.spec)
        if key:
            platform["topology"] = {"key": key}
        if ann.get(_EXCLUSIVE):
            spec["roles"][i]["placement"] = {"topologyKey": ann[_EXCLUSIVE]}
        lwt = _m(_m(w.doc.data.get("spec")).get("leaderWorkerTemplate")) \
            if w.kind == "LeaderWorkerSet" and not w.group else {}
        if w.platform == "lws":
            lwt = _m(_m(_m(w.doc.data.get("spec")).get("roles", [{}])[0]).get("spec")).get(
                "leaderWorkerTemplate", {})
        policy = lwt.get("restartPolicy") if isinstance(lwt, dict) else None
        if policy == lwsv.AFTER_START:
            _lws(platform, "recreateGroupAfterStart")
        elif ann.get(lwsv.RECREATE_AFTER_START_ANNOTATION):
            _lws(platform, "recreateGroupAfterStartAnnotation")
            policy = lwsv.AFTER_START
        if w.kind == "LeaderWorkerSet" or w.platform == "lws":
            policies.append((w.size > 1, policy or lwsv.ON_POD_RESTART))
        if w.kind == "DisaggregatedSet" or w.platform == "lws":
            _lws(platform, "disaggregatedSet")["disaggregatedSet"] = True
        rolling = _m(_m(_m(w.doc.data.get("spec")).get("rolloutStrategy")).get(
            "rollingUpdateConfiguration")) if w.kind == "LeaderWorkerSet" else {}
        if rolling.get("maxUnavailable") == 0 and rolling.get("maxSurge") not in (None, 0):
            # A surge with no instance down: the leader StatefulSet refuses maxUnavailable 0
            # before LWS 0.9.0 (lifecycle.py rollout), so the cluster runs 0.9.0 or later.
            _lws(platform, "surgeWithoutUnavailable")
            pool = spec["roles"][i]["nodePool"]
            surge[pool] = max(surge.get(pool, 0), w.size)
    _restart_policy(platform, policies)
    if platform:
        spec["platform"] = {**spec.get("platform", {}), **platform}
    for pool, nodes in surge.items():
        # moegen surges only where the pool holds one more instance beside every role's peak
        # (lifecycle.py rollout): the pool had those nodes.
        spec["nodePools"][pool]["nodes"] = min(4096, spec["nodePools"][pool]["nodes"] + nodes)
    for r in spec["roles"]:
        pod = r.get("pod", {})
        if pod.get("schedulerName") == "volcano" and platform.get("scheduler", {}).get(
                "kind") == "volcano":
            del pod["schedulerName"]
        if "affinity" in pod and platform.get("topology"):
            del pod["affinity"]
        if not pod:
            r.pop("pod", None)


def _group_affinity(pod: dict) -> str | None:
    """The topology key of the pod affinity on the LWS group key (platform.topology)."""
    terms = _m(_m(pod.get("affinity")).get("podAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or []
    for t in terms:
        if isinstance(t, dict) and "leaderworkerset.sigs.k8s.io/group-key" in (
                t.get("matchLabelKeys") or []):
            return t.get("topologyKey")
    return None


def _hoist_pod(spec: dict) -> None:
    """Pod settings every role shares move to ``spec.pod`` (the router and the endpoint picker
    take their pull secrets, service account, priority class, scheduler and labels from it)."""
    pods = [r.get("pod", {}) for r in spec["roles"]]
    keys = ("imagePullSecrets", "serviceAccountName", "priorityClassName", "schedulerName",
            "labels", "annotations", "cache", "securityContext")
    shared = {k: pods[0][k] for k in keys if k in pods[0] and all(p.get(k) == pods[0][k]
                                                                  for p in pods[1:])}
    if not shared or len(pods) < 1:
        return
    spec["pod"] = shared
    for r in spec["roles"]:
        for k in shared:
            r.get("pod", {}).pop(k, None)
        if "pod" in r and not r["pod"]:
            del r["pod"]
