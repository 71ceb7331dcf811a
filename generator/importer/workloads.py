"""The pod templates of every workload kind that runs engines, as one shape (:class:`Workload`).

Kinds and what their controllers add to the pods (read so the engine command is seen as it
runs; every source at the release cited):

* ``apps/v1`` Deployment and StatefulSet: ``replicas`` pods of ``template``; StatefulSet pods
  carry the label ``apps.kubernetes.io/pod-index`` (Kubernetes >= 1.28, KEP-4017).
* ``leaderworkerset.x-k8s.io/v1`` LeaderWorkerSet: ``replicas`` groups of
  ``leaderWorkerTemplate.size`` pods (leader from ``leaderTemplate``, else the worker
  template); LWS adds ``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE`` and ``LWS_WORKER_INDEX`` to
  every container (kubernetes-sigs/lws@v0.7.0 api/leaderworkerset/v1/leaderworkerset_types.go,
  pkg/utils/pod/pod_utils.go).
* ``disaggregatedset.x-k8s.io/v1`` DisaggregatedSet: ``spec.roles[]``, each a LeaderWorkerSet
  spec under ``spec`` (kubernetes-sigs/lws config/crd/bases, LWS >= 0.9).
* ``serving.kserve.io`` LLMInferenceService (v1alpha1/v1alpha2): ``template`` (+ ``worker``)
  and ``prefill.template`` (+ ``prefill.worker``); the controller merges them over its
  LLMInferenceServiceConfig presets, whose main container runs ``vllm serve`` with flags from
  ``spec.parallelism`` and ``$VLLM_ADDITIONAL_ARGS`` (:mod:`.platforms`).
* ``workloads.x-k8s.io/v1alpha2`` RoleBasedGroup: ``roles[]`` with ``standalonePattern`` or
  ``leaderWorkerPattern`` (``size``, ``template``, leader/worker patches) (sgl-project/rbg
  config/crd/bases); v1alpha1's ``roles[].template`` + ``leaderWorkerSet``. The controller adds
  RBG_GROUP_NAME, RBG_ROLE_NAME, RBG_ROLE_INDEX and, for leader/worker roles,
  RBG_LWP_LEADER_ADDRESS, RBG_LWP_WORKER_INDEX, RBG_LWP_GROUP_SIZE (sgl-project/rbg@v0.8.0-alpha.5
  api/workloads/constants/env.go, pkg/discovery/env_builder.go).
* ``nvidia.com`` DynamoGraphDeployment: v1alpha1 ``services.<name>`` (``extraPodSpec``,
  ``resources.limits.gpu``, ``multinode.nodeCount``) and v1beta1 ``components[]``
  (``podTemplate``); the operator adds the multi-node rank flags (ai-dynamo/dynamo@2a6da14
  deploy/operator/internal/dynamo/backend_vllm.go, backend_sglang.go).
* ``orchestration.aibrix.ai/v1alpha1`` StormService: ``template.spec.roles[]`` with
  ``replicas``, ``podGroupSize`` and ``template`` (vllm-project/aibrix@v0.7.0
  config/crd/orchestration); the controller adds STORM_SERVICE_NAME, ROLESET_NAME,
  ROLESET_INDEX, ROLE_NAME, ROLE_REPLICA_INDEX, POD_GROUP_INDEX and POD_GROUP_SIZE
  (pkg/controller/constants/stormservice.go).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..spec.load import Document

#: Container env LeaderWorkerSet adds (kubernetes-sigs/lws@v0.7.0
#: api/leaderworkerset/v1/leaderworkerset_types.go).
LWS_ENV = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX")


@dataclass
class Pods:
    """One pod template of a workload.

    Attributes:
        spec: the pod spec (a mapping; ``{}`` when absent).
        path: its path in ``doc`` (for provenance).
        labels, annotations: the template's metadata.
        index: the pod's index in its instance (0 = leader; 1 = a worker template).
        main: the container that runs the engine, when the kind names it (Dynamo's
            ``mainContainer``, KServe's ``main``), else None (found by its command).
    """

    spec: dict
    path: tuple
    labels: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    index: int = 0
    main: str | None = None


@dataclass
class Workload:
    """A group of identical engine instances, as its kind declares it.

    Attributes:
        kind, api, name, namespace, labels: the object's (the CR's for platform kinds).
        doc: the document it is in; path: the object's root in it.
        replicas: instances; size: pods per instance.
        leader: the first pod's template; worker: the other pods' (None: same as leader).
        role: the role name the platform gives it (a DisaggregatedSet role, a Dynamo
            component, a KServe prefill section), else None.
        mode: prefill/decode/unified when the platform says so, else None.
        platform: ``kubernetes``, ``kserve``, ``rbg``, ``dynamo``, ``aibrix``, ``lws``.
        group: the object that groups roles into one deployment (a CR's name), or None.
        gpus: GPUs per pod the platform requests outside the pod spec (Dynamo ``gpu``).
        extra: platform facts the engine reader needs (KServe's parallelism and model).
        indexed: the pods of an instance know their index (StatefulSet pod-index, LWS).
    """

    kind: str
    api: str
    name: str
    namespace: str | None
    labels: dict
    doc: Document
    path: tuple
    replicas: int
    size: int
    leader: Pods
    worker: Pods | None = None
    role: str | None = None
    mode: str | None = None
    platform: str = "kubernetes"
    group: str | None = None
    gpus: int | None = None
    extra: dict = field(default_factory=dict)
    indexed: bool = False
    annotations: dict = field(default_factory=dict)


def _m(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{1,6}", value.strip()):
        return int(value)
    return default


def _template(tpl: Any, path: tuple, index: int = 0, main: str | None = None) -> Pods:
    tpl = _m(tpl)
    meta = _m(tpl.get("metadata"))
    return Pods(_m(tpl.get("spec")), (*path, "spec"), _m(meta.get("labels")),
                _m(meta.get("annotations")), index, main)


#: Merge keys of the pod template's lists (Kubernetes core/v1 types.go patchMergeKey tags);
#: other lists are replaced.
_MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name",
               "volumes": "name", "volumeMounts": "mountPath", "ports": "containerPort",
               "imagePullSecrets": "name", "resourceClaims": "name"}


def strategic_merge(base: Any, patch: Any, key: str | None = None) -> Any:
    """``patch`` applied to ``base`` as a Kubernetes strategic merge patch of a pod template
    (mappings merge, ``null`` deletes, the lists of :data:`_MERGE_KEYS` merge by their key,
    other lists and values are replaced; ``$patch`` directives are not read)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = strategic_merge(base.get(k), v, k)
        return out
    merge_key = _MERGE_KEYS.get(key or "")
    if merge_key and isinstance(base, list) and isinstance(patch, list):
        out = list(base)
        for item in patch:
            at = next((i for i, b in enumerate(out) if isinstance(b, dict) and isinstance(item, dict)
                       and b.get(merge_key) == item.get(merge_key)), None)
            if at is None:
                out.append(item)
            else:
                out[at] = strategic_merge(out[at], item)
        return out
    return patch


def _annotations(doc: Document, path: tuple = ()) -> dict:
    """The object's metadata annotations (``path``: where its metadata is, a DisaggregatedSet
    role's)."""
    node = doc.data
    for key in path:
        node = node[key] if isinstance(node, (dict, list)) else {}
    return _m(_m(_m(node).get("metadata")).get("annotations"))


def _meta(doc: Document) -> tuple[str, str | None, dict]:
    meta = _m(doc.data.get("metadata"))
    name = meta.get("name") if isinstance(meta.get("name"), str) else ""
    ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
    return name, ns, _m(meta.get("labels"))


def _lws(doc: Document, spec: dict, path: tuple, name: str, ns: str | None, labels: dict,
         **kw: Any) -> Workload:
    lwt = _m(spec.get("leaderWorkerTemplate"))
    base = (*path, "leaderWorkerTemplate")
    worker = _template(lwt.get("workerTemplate"), (*base, "workerTemplate"), 1)
    leader = _template(lwt.get("leaderTemplate"), (*base, "leaderTemplate"), 0) \
        if isinstance(lwt.get("leaderTemplate"), dict) else None
    size = _int(lwt.get("size"), 1)
    if leader is None:
        leader = Pods(worker.spec, worker.path, worker.labels, worker.annotations, 0)
    return Workload("LeaderWorkerSet", kw.pop("api", "leaderworkerset.x-k8s.io/v1"), name, ns,
                    labels, doc, path, _int(spec.get("replicas"), 1), size, leader,
                    worker if size > 1 else None, indexed=True, **kw)


def workloads_of(doc: Document) -> list[Workload]:
    """The workloads one document declares (none for other kinds)."""
    data = doc.data
    if not isinstance(data, dict):
        return []
    kind, api = data.get("kind"), str(data.get("apiVersion", ""))
    spec = _m(data.get("spec"))
    name, ns, labels = _meta(doc)
    group = api.split("/", 1)[0]
    if kind in ("Deployment", "StatefulSet") and group == "apps":
        pods = _template(spec.get("template"), ("spec", "template"))
        return [Workload(kind, api, name, ns, labels, doc, (), _int(spec.get("replicas"), 1),
                         1, pods, indexed=kind == "StatefulSet", annotations=_annotations(doc))]
    if kind == "LeaderWorkerSet" and group == "leaderworkerset.x-k8s.io":
        return [_lws(doc, spec, ("spec",), name, ns, labels, api=api,
                     annotations=_annotations(doc))]
    if kind == "DisaggregatedSet" and group == "disaggregatedset.x-k8s.io":
        out = []
        for i, role in enumerate(spec.get("roles") or []):
            role = _m(role)
            rname = role.get("name") if isinstance(role.get("name"), str) else f"role{i}"
            rlabels = {**labels, **_m(_m(role.get("metadata")).get("labels"))}
            out.append(_lws(doc, _m(role.get("spec")), ("spec", "roles", i, "spec"),
                            f"{name}-{rname}", ns, rlabels, api=api, role=rname,
                            group=name, platform="lws",
                            annotations=_annotations(doc, ("spec", "roles", i))))
        return out
    if kind == "LLMInferenceService" and group == "serving.kserve.io":
        return _kserve(doc, spec, name, ns, labels, api)
    if kind == "RoleBasedGroup" and group == "workloads.x-k8s.io":
        return _rbg(doc, spec, name, ns, labels, api)
    if kind == "DynamoGraphDeployment" and group == "nvidia.com":
        return _dynamo(doc, spec, name, ns, labels, api)
    if kind == "StormService" and group == "orchestration.aibrix.ai":
        return _storm(doc, spec, name, ns, labels, api)
    return []


def _kserve(doc: Document, spec: dict, name: str, ns: str | None, labels: dict,
            api: str) -> list[Workload]:
    out = []
    sections = [((), spec, "decode" if isinstance(spec.get("prefill"), dict) else "unified")]
    if isinstance(spec.get("prefill"), dict):
        sections.append((("prefill",), spec["prefill"], "prefill"))
    model = _m(spec.get("model"))
    # The controller copies the CR's annotations with these prefixes onto the pod templates
    # (kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/workload_multi_node.go
    # approvedAnnotationPrefixes: Multus networks, Kueue, Prometheus).
    cr_ann = {k: v for k, v in _m(_m(doc.data.get("metadata")).get("annotations")).items()
              if str(k).startswith(("k8s.v1.cni.cncf.io", "kueue.x-k8s.io", "prometheus.io"))}
    for sub, sec, mode in sections:
        path = ("spec", *sub)
        par = _m(sec.get("parallelism"))
        worker = sec.get("worker") if isinstance(sec.get("worker"), dict) else None
        data, local = _int(par.get("data"), 1), _int(par.get("dataLocal"), 1)
        size = max(1, data // max(local, 1)) if worker is not None else 1
        leader = Pods(_m(sec.get("template")), (*path, "template"), annotations=dict(cr_ann),
                      main="main")
        wpods = Pods(_m(worker), (*path, "worker"), annotations=dict(cr_ann), index=1,
                     main="main") if worker else None
        out.append(Workload("LLMInferenceService", api, name if mode != "prefill"
                            else f"{name}-prefill", ns, labels, doc, path,
                            _int(sec.get("replicas"), 1), size, leader, wpods,
                            role=mode if mode != "unified" else None, mode=mode,
                            platform="kserve", group=name, indexed=True,
                            annotations=_m(sec.get("annotations")),
                            extra={"parallelism": par, "model": model}))
    return out


def _rbg(doc: Document, spec: dict, name: str, ns: str | None, labels: dict,
         api: str) -> list[Workload]:
    out = []
    for i, role in enumerate(spec.get("roles") or []):
        role = _m(role)
        rname = role.get("name") if isinstance(role.get("name"), str) else f"role{i}"
        path = ("spec", "roles", i)
        lw = _m(role.get("leaderWorkerPattern")) or _m(role.get("leaderWorkerSet"))
        tpl_owner = _m(role.get("standalonePattern")) or lw or role
        key = "standalonePattern" if role.get("standalonePattern") else (
            "leaderWorkerPattern" if role.get("leaderWorkerPattern") else "")
        tpath = (*path, key, "template") if key and tpl_owner.get("template") else \
            (*path, "template")
        tpl = tpl_owner.get("template") if tpl_owner.get("template") else role.get("template")
        size = _int(lw.get("size"), 1) if lw else 1
        # The leader's and the workers' templates: the role's template with each patch applied
        # as a strategic merge patch (v1alpha2 leader/workerTemplatePatch, v1alpha1
        # leaderWorkerSet.patchLeader/WorkerTemplate; rbg@v0.8.0-alpha.5
        # pkg/reconciler/lws_reconciler.go applyStrategicMergePatch).
        lw_key = "leaderWorkerPattern" if role.get("leaderWorkerPattern") else "leaderWorkerSet"
        patched = []
        for index, names in ((0, ("leaderTemplatePatch", "patchLeaderTemplate")),
                             (1, ("workerTemplatePatch", "patchWorkerTemplate"))):
            key = next((k for k in names if isinstance(lw.get(k), dict)), None)
            if key is None:
                patched.append(_template(tpl, tpath, index))
                continue
            ppath = (*path, lw_key, key)
            merged = strategic_merge(_m(tpl), lw[key])
            # Located at the patch when it gives the containers (the engine command), else at
            # the template.
            at = ppath if _m(lw[key].get("spec")).get("containers") else tpath
            patched.append(_template(merged, at, index))
        pods, worker = patched[0], (patched[1] if size > 1 else None)
        out.append(Workload("RoleBasedGroup", api, f"{name}-{rname}", ns, labels, doc, path,
                            _int(role.get("replicas"), 1), size, pods, worker, role=rname,
                            platform="rbg", group=name, indexed=size > 1))
    return out


def _dynamo(doc: Document, spec: dict, name: str, ns: str | None, labels: dict,
            api: str) -> list[Workload]:
    items: list[tuple[str, dict, tuple]] = []
    if isinstance(spec.get("components"), list):   # v1beta1
        for i, c in enumerate(spec["components"]):
            c = _m(c)
            items.append((str(c.get("name", f"c{i}")), c, ("spec", "components", i)))
    for key, c in _m(spec.get("services")).items():   # v1alpha1
        items.append((str(key), _m(c), ("spec", "services", key)))
    out = []
    for cname, c, path in items:
        ctype = str(c.get("componentType") or c.get("type") or "")
        sub = str(c.get("subComponentType") or "")
        if ctype in ("frontend", "planner", "epp") or "frontend" in cname.lower():
            continue
        mode = next((m for m in ("prefill", "decode") if m in (sub, ctype)), None)
        if "podTemplate" in c:
            pods = _template(c.get("podTemplate"), (*path, "podTemplate"), main="main")
        else:
            extra = _m(c.get("extraPodSpec"))
            pods = Pods(extra, (*path, "extraPodSpec"), main="mainContainer")
        nodes = _int(_m(c.get("multinode")).get("nodeCount"), 1)
        gpu = _m(_m(c.get("resources")).get("limits")).get("gpu")
        worker = Pods(pods.spec, pods.path, pods.labels, pods.annotations, 1, pods.main) \
            if nodes > 1 else None
        out.append(Workload("DynamoGraphDeployment", api, f"{name}-{cname}", ns, labels, doc,
                            path, _int(c.get("replicas"), 1), nodes, pods, worker,
                            role=cname, mode=mode or "unified", platform="dynamo", group=name,
                            gpus=_int(gpu, 0) or None, indexed=nodes > 1,
                            extra={"env": spec.get("envs") or spec.get("env") or [],
                                   "component_env": c.get("envs") or [],
                                   "shm": c.get("sharedMemory") or c.get("sharedMemorySize"),
                                   "pvcs": spec.get("pvcs") or [],
                                   "resources": _m(c.get("resources")),
                                   "volumeMounts": c.get("volumeMounts") or []}))
    return out


def _storm(doc: Document, spec: dict, name: str, ns: str | None, labels: dict,
           api: str) -> list[Workload]:
    out = []
    tspec = _m(_m(spec.get("template")).get("spec"))
    for i, role in enumerate(tspec.get("roles") or []):
        role = _m(role)
        rname = role.get("name") if isinstance(role.get("name"), str) else f"role{i}"
        path = ("spec", "template", "spec", "roles", i)
        pods = _template(role.get("template"), (*path, "template"))
        size = _int(role.get("podGroupSize"), 1)
        worker = Pods(pods.spec, pods.path, pods.labels, pods.annotations, 1) if size > 1 else None
        out.append(Workload("StormService", api, f"{name}-{rname}", ns, labels, doc, path,
                            _int(role.get("replicas"), 1) * _int(spec.get("replicas"), 1),
                            size, pods, worker, role=rname, platform="aibrix", group=name,
                            indexed=size > 1))
    return out
