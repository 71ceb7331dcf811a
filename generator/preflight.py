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
  Kubernetes 1.31 or later (``/version``), whose podAffinity keeps ``matchLabelKeys``;
* PRE011, asked first: the endpoint is a Kubernetes API server at all (``/version`` answers a
  version). A kubeconfig pointing at another HTTP server (404 on ``/version``, or an answer
  that is not JSON) is that one finding, not a missing CRD, namespace and nodes.

With ``dry_run`` (``gen preflight --dry-run``) it also submits every object of the render
(:func:`generator.pipeline.render`) as ``kubectl apply --server-side --dry-run=server`` would
(:data:`APPLY_QUERY`): PRE010 when the API server rejects one (validation, admission webhooks,
policies, quotas, field-manager conflicts). The kustomization's ``resources`` are sent as rendered;
its configMapGenerator ConfigMaps are built from their env files as kustomize builds them, under
their unhashed names (the LeaderWorkerSets name them so before kustomize's nameReference rewrite).

Findings are errors (the deployment would not run) except PRE003, a warning when the labels are
missing (no GPU feature discovery). Nothing is written to the cluster: every request but GETs is a
server-side apply with ``dryRun=All``, which the API server runs through validation and
admission and never persists.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

import yaml

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
    #: Server-side apply of an object to its ``path`` with ``dryRun=All`` (never persisted) ->
    #: (HTTP status, JSON body: the object as it would be stored, or a Status).
    dry_run_apply: Callable[[str, dict], tuple[int, Any]] | None = None
    #: The server's address, for messages.
    host: str = ""


#: What ``kubectl apply --server-side --dry-run=server`` sends for every object, new or existing:
#: one PATCH of type ``application/apply-patch+yaml`` to the object's own path (kubernetes
#: staging/src/k8s.io/kubectl/pkg/cmd/apply/apply.go, ``applyOneObject``: ``helper.Patch(...,
#: types.ApplyPatchType, data, &metav1.PatchOptions{Force: &o.ForceConflicts})``, field manager
#: ``kubectl`` (``fieldManagerServerSideApply``), ``--force-conflicts`` off; cli-runtime
#: pkg/resource/helper.go ``Patch`` adds ``dryRun=All`` and the field manager; ``--validate``
#: defaults to ``strict``: ``fieldValidation=Strict``, kubectl pkg/cmd/util/helpers.go
#: ``GetValidationDirective``). Server-side apply creates an object that does not exist and
#: merges into one that does, so no GET or POST is needed first
#: (https://kubernetes.io/docs/reference/using-api/server-side-apply/).
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
APPLY_QUERY = {"dryRun": "All", "fieldManager": "kubectl", "fieldValidation": "Strict",
               "force": "false"}


def _json_body(data) -> Any:
    """A response body as JSON (a Status, usually), or its text as a Status message."""
    if not data:
        return None
    try:
        return json.loads(data)
    except (ValueError, TypeError):
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
        return {"kind": "Status", "message": text[:500]}


def cluster_error(exc: BaseException, kubeconfig: str | None = None) -> str:
    """A cluster-access failure for people: a missing kubeconfig says where it was looked for
    (``--kubeconfig``, else ``$KUBECONFIG``, else ``~/.kube/config``: kubernetes.config's
    order); a refused TCP connection says so with the address (urllib3 NewConnectionError)."""
    import os
    text = str(exc)
    if "Invalid kube-config file" in text or "No configuration found" in text \
            or type(exc).__name__ == "ConfigException":
        path = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        where = ("--kubeconfig" if kubeconfig else "$KUBECONFIG" if os.environ.get("KUBECONFIG")
                 else "the default")
        found = os.path.exists(os.path.expanduser(path.split(os.pathsep)[0]))
        return (f"no usable kubeconfig at {path} ({where}; "
                f"{'no cluster or context in it' if found else 'the file does not exist'}): "
                "pass --kubeconfig or --context, or set KUBECONFIG")
    chain, seen = [], exc
    while seen is not None and len(chain) < 8:
        chain.append(seen)
        seen = getattr(seen, "reason", None) or seen.__cause__ or seen.__context__
    for e in chain:
        if isinstance(e, ConnectionRefusedError) or "Connection refused" in str(e):
            host = getattr(getattr(exc, "pool", None), "host", None) or getattr(exc, "url", "")
            return (f"connection refused{f' by {host}' if host else ''}: is the API server "
                    "running and the kubeconfig's server address right?")
    return text


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

    def dry_run_apply(path: str, obj: dict) -> tuple[int, Any]:
        # dryRun=All is part of every request this function makes: it cannot persist anything.
        params = list(APPLY_QUERY.items())
        headers = {"Content-Type": APPLY_CONTENT_TYPE, "Accept": "application/json"}
        body = json.dumps(obj)   # JSON is YAML: the apply patch as text, sent as is
        try:
            if hasattr(api_client, "param_serialize"):   # kubernetes >= 35
                request = api_client.param_serialize("PATCH", path, query_params=params,
                                                     header_params=headers, body=body,
                                                     auth_settings=["BearerToken"])
                response = api_client.call_api(*request)
                response.read()
                status, data = response.status, _json_body(response.data)
            else:
                data = api_client.call_api(path, "PATCH", query_params=params,
                                           header_params=headers, body=body,
                                           response_type="object",
                                           auth_settings=["BearerToken"],
                                           _return_http_data_only=True)
                status = 200
        except ApiException as exc:
            status, data = exc.status, _json_body(exc.body)
        if status == 401:   # credentials, not the object: a usage error like a refused read
            raise ApiException(status=401, reason="Unauthorized")
        return status, data

    return Api(get, api_client.close, dry_run_apply,
               str(getattr(api_client.configuration, "host", "") or ""))


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
    target = spec.target.name
    if target != "kubernetes":
        # The platform's custom resources (generator/facts/controllers.py); KServe and Dynamo
        # render no monitoring or gateway objects of moegen's, RBG and AIBrix do.
        from .facts import controllers
        rel = controllers.normalise(target, spec.target.version)
        for key in ("crd", "policyCrd"):
            crd = controllers.facts(target, rel).get(key)
            if crd is not None and (key == "crd" or {"prefill", "decode"}
                                    <= {r.mode for r in spec.roles}):
                out.append((crd["name"], f"target {target}"))
        if target in ("kserve", "dynamo"):
            return out
    elif any(r.workload in ("lws", "pod-per-rank") for r in spec.roles):
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


def preflight(checked, api: Api, dry_run: bool = False,
              files: dict[str, str] | None = None,
              objects: list[tuple[Location, dict]] | None = None) -> list[Finding]:
    """Every finding about the cluster ``api`` reads, for a spec that passed every check; with
    ``dry_run``, also the API server's answer to a server-side dry run of every rendered object
    (PRE010; ``files``: the render of ``checked``, rendered here when not given), or of
    ``objects`` when given: what is actually applied (a ``kustomize build`` of the render with
    the team's overlays), each with where it was read."""
    spec = checked.spec
    ns = spec.metadata.namespace
    not_kubernetes = _api_server(api)
    if not_kubernetes is not None:
        return [not_kubernetes]
    out: list[Finding] = []
    for name, why in _crds(checked):
        if api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}") is None:
            out.append(_finding("PRE001", ("spec",), f"CRD {name} is not installed ({why} "
                                "needs it)", "install its controller before applying"))
    namespace_exists = api.get(f"/api/v1/namespaces/{ns}") is not None
    if not namespace_exists:
        out.append(_finding("PRE005", ("metadata", "namespace"), f"namespace {ns!r} does not exist",
                            f"kubectl create namespace {ns}"))
    out += _nodes(checked, api)
    out += _claims(checked, api)
    out += _references(checked, api)
    out += _server_version(checked, api)
    if dry_run:
        if objects is None:
            if files is None:
                from .pipeline import render
                _, files = render(checked)
            objects = [(Location(f, 0, 0), o) for f, o in rendered_objects(files, ns)]
        out += dry_run_findings(objects, api, namespace_exists)
    return out


def _api_server(api: Api) -> Finding | None:
    """PRE011 when ``api`` is not a Kubernetes API server: ``GET /version`` (served by every
    API server, kubernetes-client/python@v37.0.2:kubernetes/client/api/version_api.py) answers
    404, a body that is not JSON, or JSON without ``gitVersion``; else None."""
    try:
        info = api.get("/version")
    except ValueError:   # the client's json.loads of an HTML page or plain text
        info = ""
    if isinstance(info, dict) and info.get("gitVersion"):
        return None
    what = "404 Not Found" if info is None else "JSON without gitVersion" \
        if isinstance(info, dict) else "a body that is not JSON"
    where = api.host or "the kubeconfig's server"
    return _finding("PRE011", (), f"{where} is not a Kubernetes API server: GET /version "
                    f"answers {what}, so nothing in the cluster was checked",
                    "point the kubeconfig (--kubeconfig, --context) at the API server: "
                    "kubectl config view --minify shows the server address in use")


def rendered_objects(files: dict[str, str], namespace: str) -> list[tuple[str, dict]]:
    """(file, object) of everything ``kubectl apply -k`` would send for the rendered files:
    the kustomization's ``resources`` (every YAML document), then its configMapGenerator
    ConfigMaps built as kustomize builds them (env files: kubernetes-sigs/kustomize api/kv/kv.go
    ``keyValuesFromLine``: leading whitespace trimmed, blank and ``#`` lines skipped, split at the
    first ``=``, no ``=`` means an empty value; ``options`` labels and annotations), named without
    kustomize's content hash (a dry run stores nothing; the rendered LeaderWorkerSets name the
    unhashed ConfigMap until kustomize rewrites both). The file of a generated ConfigMap is its
    env file. An object without ``metadata.namespace`` gets the kustomization's ``namespace``
    (else ``namespace``); the rendered ones carry it already."""
    kust = yaml.safe_load(files.get("kustomization.yaml") or "{}") or {}
    ns = kust.get("namespace") or namespace
    resources = kust.get("resources") or sorted(
        f for f in files if f.endswith(".yaml") and not f.startswith("kustomiz"))
    out: list[tuple[str, dict]] = []
    for file in resources:
        for doc in yaml.safe_load_all(files.get(file, "")):
            if isinstance(doc, dict) and doc.get("kind"):
                out.append((file, doc))
    for gen in kust.get("configMapGenerator") or []:
        data: dict[str, str] = {}
        for env in gen.get("envs") or []:
            for i, raw in enumerate(files.get(env, "").splitlines()):
                line = (raw.removeprefix("\ufeff") if i == 0 else raw).lstrip()
                if not line or line.startswith("#"):
                    continue
                key, _, value = line.partition("=")
                data[key] = value
        options = gen.get("options") or {}
        meta = {"name": gen["name"], "namespace": ns}
        for field in ("labels", "annotations"):
            if options.get(field):
                meta[field] = dict(options[field])
        file = (gen.get("envs") or ["kustomization.yaml"])[0]
        out.append((file, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                           "data": data}))
    for _, obj in out:
        obj.setdefault("metadata", {}).setdefault("namespace", ns)
    return out


def applied_objects(documents) -> tuple[list[tuple[Location, dict]], list[str]]:
    """The Kubernetes objects of ``documents`` (:class:`generator.spec.load.Document`, e.g.
    ``kustomize build`` on standard input), each located at its document's first line, and the
    sorted namespaces they name (``metadata.namespace``; objects without one go where kubectl
    would send them, the namespace preflight checks). Documents that are not objects (no
    ``kind``/``apiVersion``) and the ``List`` wrappers' items are handled as kubectl does: a
    ``*List`` kind contributes its ``items``."""
    out: list[tuple[Location, dict]] = []
    for doc in documents:
        data = doc.data
        if not isinstance(data, dict) or not data.get("kind") or not data.get("apiVersion"):
            continue
        at = doc.provenance.locate(())
        items = data.get("items") if str(data["kind"]).endswith("List") else [data]
        out += [(at, o) for o in items or [] if isinstance(o, dict) and o.get("kind")]
    namespaces = sorted({str(o["metadata"]["namespace"]) for _, o in out
                         if isinstance(o.get("metadata"), dict) and o["metadata"].get("namespace")})
    return out, namespaces


def _served(api: Api, api_version: str, cache: dict) -> dict[str, tuple[str, bool]] | None:
    """kind -> (resource, namespaced) the API server serves for ``api_version``, from discovery
    (``/api/v1``, ``/apis/<group>/<version>``: APIResourceList, subresources left out), or None
    when it does not serve the group version."""
    if api_version not in cache:
        doc = api.get("/api/v1" if api_version == "v1" else f"/apis/{api_version}")
        cache[api_version] = None if doc is None else {
            r["kind"]: (r["name"], bool(r.get("namespaced")))
            for r in doc.get("resources") or [] if "/" not in r.get("name", "/")}
    return cache[api_version]


#: What to do about a rejection, by HTTP status of the API server's Status.
_DRY_RUN_HINTS = {
    403: "the kubeconfig's user may not apply it: ask for RBAC to create and patch it",
    404: "create what it lives in first (namespace, CRD: PRE001, PRE005)",
    409: "other field managers own these fields: kubectl apply --server-side stops here; "
         "apply with --force-conflicts to take them over, or drop them from the object",
}


def dry_run_findings(objects: list[tuple[Location, dict]], api: Api,
                     namespace_exists: bool = True) -> list[Finding]:
    """PRE010: every object (where it was read, the object with its ``metadata.namespace``;
    :func:`rendered_objects` for a render) the API server refuses in a server-side dry run.
    Namespaced objects are not sent while their namespace is missing (PRE005 says so; the
    server would answer NotFound for each)."""
    if api.dry_run_apply is None:
        raise RuntimeError("this Api cannot send dry runs")
    out: list[Finding] = []
    cache: dict = {}
    for at, obj in objects:
        kind, version = obj.get("kind"), obj.get("apiVersion", "")
        meta = obj.get("metadata") or {}
        name, ns = meta.get("name", "?"), meta.get("namespace")
        served = _served(api, version, cache)
        if served is None or kind not in served:
            out.append(Finding(
                "PRE010", Severity.ERROR, "$.kind",
                f"{kind} {name}: the API server serves no {kind} in {version} (no matches for "
                "kind)", "install the CRD that defines it (PRE001)", at))
            continue
        resource, namespaced = served[kind]
        if namespaced and not namespace_exists:
            continue
        base = "/api/v1" if version == "v1" else f"/apis/{version}"
        where = f"/namespaces/{ns}" if namespaced else ""
        if not namespaced:
            obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "namespace"}}
        status, body = api.dry_run_apply(f"{base}{where}/{resource}/{name}", obj)
        if 200 <= status < 300:
            continue
        body = body if isinstance(body, dict) else {}
        reason = body.get("reason") or ""
        causes = (body.get("details") or {}).get("causes") or []
        fields = [c["field"] for c in causes if isinstance(c, dict) and c.get("field")]
        path = f"$.{fields[0]}" if len(fields) == 1 else "$"
        out.append(Finding(
            "PRE010", Severity.ERROR, path,
            f"{kind} {name}: the API server rejects it (HTTP {status}"
            f"{' ' + reason if reason else ''}): {body.get('message') or 'no message'}",
            _DRY_RUN_HINTS.get(status, "fix the spec, or the cluster's admission webhooks, "
                               "policies or quotas, before applying"),
            at))
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
    """Engine pods of one role on one node: the layout's pods a node (per-rank pods and
    instances smaller than a node pack: generator/layout.py), at most the role's pods."""
    lay = checked.roles[role_index].layout
    return max(1, min(lay.pods_per_node, lay.replicas * len(lay.pods)))


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
        if s.network.rdma is not None and s.network.rdma.resourceName is not None:
            need[s.network.rdma.resourceName] = s.network.rdma.resourceCount * per_node
        if host is not None:
            big = max(host.pods, key=lambda p: p.memory_gib)
            need["cpu"] = (quantity_cpu(pod.cpu) if pod.cpu else big.cpu) * per_node
            need["memory"] = (quantity_gib(pod.memory) if pod.memory else big.memory_gib) \
                * per_node
            # 52 GiB a pod by default (the compile cache and /tmp): packed pods multiply it.
            need["ephemeral-storage"] = (quantity_gib(pod.ephemeral_storage)
                                         if pod.ephemeral_storage else big.ephemeral_gib) \
                * per_node
        for res, want in need.items():
            have_raw = alloc.get(res)
            if have_raw is None and res == "ephemeral-storage":
                continue   # not reported without LocalStorageCapacityIsolation: not enforced
            if have_raw is None:
                have = 0.0
            elif res == "cpu":
                have = quantity_cpu(str(have_raw))
            elif res in ("memory", "ephemeral-storage"):
                have = quantity_gib(str(have_raw))
            else:
                have = float(have_raw)
            if have < want:
                unit = " GiB" if res in ("memory", "ephemeral-storage") else ""
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
