"""The ``aibrix`` target: one AIBrix ``StormService`` (orchestration.aibrix.ai/v1alpha1) whose
RoleSet holds every engine role; a multi-pod instance is a role with ``podGroupSize``.

What the AIBrix controllers do and moegen therefore does not (facts: generator/facts/
controllers.py, read from vllm-project/aibrix@v0.7.0 by tools/extract_controllers.py):

* a pod group's pods share one template; the PodSet controller names them
  ``<podset>-<index>``, gives each the StormService's headless Service as subdomain, and puts
  ``PODSET_NAME``, ``POD_GROUP_INDEX`` and ``POD_GROUP_SIZE`` first in every container's env,
  dropping user env of those names; the RoleSet controller adds ``STORM_SERVICE_NAME`` and
  the role's names before the user's env too. moegen's launcher reads ``POD_GROUP_INDEX`` as
  the pod's index and the leader's name is ``$(PODSET_NAME)-0.$(STORM_SERVICE_NAME)``;
  every engine flag (rank flags included) stays moegen's;
* the headless Service: moegen renders none.

One template serves the leader and the workers: it declares the union of their ports and the
larger of their resources; where only the leader serves HTTP (vLLM's headless workers) the
probes skip the workers (``POD_GROUP_INDEX`` != 0) and the objects that select the API pods
(client Services, the router's discovery, the PodMonitor) also select pod-group index 0.
The router, the Services, PodDisruptionBudgets, the gateway and monitoring stay plain objects.
"""

from __future__ import annotations

import copy
from typing import Any

from ..deployment import Deployment
from ..engines.routers import rendered_router
from ..errors import Finding
from ..facts import controllers
from ..manifests.plan import DeploymentPlan, RolePlan
from ..manifests.pods import INDEX_ENV, LEADER_HOST_ENV, PodPlan
from ..naming import L_INSTANCE, L_ROLE
from .common import (
    E,
    W,
    Findings,
    annotate,
    common_findings,
    document,
    env_items,
    group_findings,
    inline_env,
    kustomization,
    plain_objects,
    pod_spec_dict,
    release,
    resource_size,
    sized_load,
    template,
    with_launcher,
    without_env,
)

NAME = "aibrix"
#: Characters the API server's generateName adds to ``<service>-roleset-`` (Kubernetes
#: apiserver names.SimpleNameGenerator: 5 random characters).
GENERATED_SUFFIX = 5
#: One instance replaced at a time, no surge (a surge instance needs extra GPU nodes).
UPDATE = {"type": "RollingUpdate", "maxSurge": 0, "maxUnavailable": 1}
#: A PodSet acts on its pods only when fewer than podGroupSize are active (ReplaceUnhealthy then
#: deletes the restarted ones); the role has no field for a PodSet's recoveryPolicy.
RECOVERY = "vllm-project/aibrix@v0.7.0:pkg/controller/podset/podset_controller.go:229-262"
RECOVERY_FIELD = "vllm-project/aibrix@v0.7.0:api/orchestration/v1alpha1/podset_types.go:43"


def _v(rel: str, *path: str):
    return controllers.value(NAME, rel, *path)


def _src(rel: str, *path: str) -> str:
    return controllers.source(NAME, rel, *path)


def _uniform(rp: RolePlan) -> bool:
    """Every pod of the role's instance binds the HTTP port (SGLang's nodes do: the followers
    answer ``/health`` and serve their schedulers' ``/metrics``; vLLM's headless workers do
    not): the probes and the PodMonitor may then cover every pod."""
    return all(rp.launch.binds_http(i) for i in range(len(rp.launch.per_pod)))


def _all_serve_api(rp: RolePlan) -> bool:
    """Every pod of the role's instance serves the API (neither SGLang's followers nor vLLM's
    headless workers do): the client Services and the router may then select every pod. The
    pods share one template, API label included (podset_controller.go:362-386)."""
    return all(rp.launch.serves_api)


class AibrixTarget:
    """AIBrix StormService."""

    name = NAME

    def findings(self, deployment: Deployment) -> list[Finding]:
        """TGT001-003, TGT040 (what a StormService cannot express), TGT041 (what AIBrix
        ignores), TGT042 (a multi-pod group outlives a restarted rank)."""
        found = Findings(deployment)
        rel = common_findings(deployment, found, ("engines",))
        if rel is None:
            return found.out
        group_findings(deployment, found, "TGT040", "TGT041", "AIBrix", _src(rel, "podName"))
        spec = deployment.spec.spec
        limit = _v(rel, "nameLimit")
        for i, role in deployment.role_items():
            lay = role.layout
            if not lay.multi_pod:
                continue
            rs = spec.roles[i]
            # <service>-roleset-<5> - <role> - <template hash> - <replica> - <pod index>
            longest = (len(spec_name(deployment)) + len(_v(rel, "roleSetName").replace("%s", ""))
                       + GENERATED_SUFFIX + 1 + len(role.name) + 1
                       + _v(rel, "templateHashLength") + 1 + len(str(rs.replicas - 1))
                       + 1 + len(str(len(lay.pods) - 1)))
            if longest >= limit:
                found.add("TGT040", E, ("metadata", "name"),
                          f"role {role.name!r}: its pods are named up to {longest} characters "
                          f"({_src(rel, 'podSetName')} + {_src(rel, 'podName')}); AIBrix "
                          f"shortens names of {limit}+ ({_src(rel, 'nameLimit')}), and the "
                          "leader's name $(PODSET_NAME)-0 then no longer resolves",
                          "shorten metadata.name or the role name")
        for i, role in deployment.role_items():
            if role.layout.multi_pod:
                found.add("TGT042", W, ("spec", "roles", i, "parallel"),
                          f"role {role.name!r}: a PodSet replaces pods only when one is "
                          f"missing ({RECOVERY}) and a role sets no recovery policy (only a "
                          f"PodSet has one, {RECOVERY_FIELD}); an engine container that "
                          "restarts in one pod leaves the others of its group waiting on a "
                          "peer that lost its state (a "
                          "LeaderWorkerSet or an RBG role re-creates the whole group)",
                          "watch for engine restarts (moegen's EngineGroupRestarts alert) and "
                          "delete the group's pods, or use target kubernetes or rbg")
        if rendered_router(spec) == "gateway" and any(
                r.layout.multi_pod for _, r in deployment.role_items()):
            found.add("TGT040", E, ("spec", "router", "kind"),
                      "the InferencePool selects the pods that serve the API by label; a pod "
                      f"group's pods share one template ({_src(rel, 'podName')}), so its "
                      "workers would join the pool", "use router.kind vllm-router or smg")
        return found.out

    def address_form(self, deployment: Deployment):
        """How this target renders addresses (generator/manifests/addresses.py): moegen's
        launcher with the leader's name built from the variables AIBrix's controllers inject
        (:func:`leader_host`)."""
        from ..manifests.addresses import AddressForm
        rel = release(deployment)
        if rel is None:
            return AddressForm(NAME)
        return AddressForm(NAME, leader_vars=frozenset({_v(rel, "env", "podSetName"),
                                                        _v(rel, "env", "serviceName")}),
                           leader_address=leader_host(rel))

    def render(self, plan: DeploymentPlan, deployment: Deployment) -> dict[str, str]:
        """``stormservice.yaml``, the plain objects (selectors narrowed to pod-group index 0
        where workers do not serve HTTP) and a kustomization."""
        rel = release(deployment)
        api = {rp.name: rp for rp in plan.roles
               if len(rp.launch.per_pod) > 1 and not _all_serve_api(rp)}
        http = {rp.name: rp for rp in plan.roles
                if len(rp.launch.per_pod) > 1 and not _uniform(rp)}
        plain = plain_objects(plan, drop=[so.file for so in plan.scaled_objects])
        label = _v(rel, "groupIndexLabel")
        for obj in plain.values():
            _narrow(obj, api, http, label, max((len(rp.launch.per_pod) for rp in plan.roles),
                                               default=1))
        files = {path: document(plan, obj) for path, obj in plain.items()}
        files["stormservice.yaml"] = document(plan, storm_service(plan, deployment, rel))
        files["kustomization.yaml"] = kustomization(plan, files)
        return dict(sorted(files.items()))


def spec_name(d: Deployment) -> str:
    """The StormService's name (the deployment's)."""
    return d.spec.metadata.name


def _narrow(obj: dict[str, Any], leaders: dict[str, RolePlan], http: dict[str, RolePlan],
            label: str, size: int) -> None:
    """Select only pod-group index 0 of the roles in ``leaders`` (the API's: client Services,
    the router's discovery) and of those in ``http`` (the PodMonitor: pods that serve
    ``/metrics``); their workers share the leader's template, labels included."""
    kind = obj.get("kind")
    if kind == "Service":
        sel = obj["spec"]["selector"]
        if sel.get(L_ROLE) in leaders:
            sel[label] = "0"
    elif kind == "PodMonitor" and http and size > 1:
        match = obj["spec"]["selector"]
        match["matchExpressions"] = [*match.get("matchExpressions", []),
                                     {"key": label, "operator": "NotIn",
                                      "values": [str(i) for i in range(1, size)]}]
    elif kind == "Deployment" and obj["spec"]["template"]["spec"]["containers"][0].get("args"):
        args = obj["spec"]["template"]["spec"]["containers"][0]["args"]
        modes = {rp.mode for rp in leaders.values()}
        out: list[str] = []
        current = None
        for a in args:
            if a.startswith("--"):
                if current in modes:
                    out.append(f"{label}=0")
                current = a[2:-len("-selector")] if a.endswith("-selector") else None
            out.append(a)
        if current in modes:
            out.append(f"{label}=0")
        obj["spec"]["template"]["spec"]["containers"][0]["args"] = out


def _shared_template(plan: DeploymentPlan, rp: RolePlan, leader: PodPlan,
                     worker: PodPlan | None, rel: str) -> dict[str, Any]:
    """The one pod template of a role: the leader's pod, with the workers' ports and the
    larger resources; the launcher reads AIBrix's pod-group index; probes that only the
    leader answers skip the workers."""
    spec = without_env(leader.spec, INDEX_ENV, LEADER_HOST_ENV)
    if worker is not None:
        spec = with_launcher(spec, index_env=_v(rel, "env", "groupIndex"))
        host = leader_host(rel)
        spec = _with_env(spec, {"name": LEADER_HOST_ENV, "value": host})
    pod = inline_env(pod_spec_dict(spec), env_items(plan, rp.name))
    if worker is not None:
        other = pod_spec_dict(worker.spec)["containers"][0]
        main = pod["containers"][0]
        ports = main.get("ports", [])
        main["ports"] = ports + [p for p in other.get("ports", []) if p not in ports]
        main["resources"] = max(main["resources"], other["resources"], key=resource_size)
        if not _uniform(rp):
            for name in ("startupProbe", "readinessProbe", "livenessProbe"):
                if name in main:
                    main[name] = _leader_only(main[name], _v(rel, "env", "groupIndex"),
                                              main["ports"])
    return template(leader, pod)


def leader_host(rel: str) -> str:
    """The leader's DNS name in a pod group: the PodSet's pod 0 on the StormService's headless
    Service, from the variables the controllers inject (facts/controllers.py)."""
    return f"$({_v(rel, 'env', 'podSetName')})-0.$({_v(rel, 'env', 'serviceName')})"


def _with_env(spec, entry: dict[str, Any]):
    import dataclasses
    return dataclasses.replace(spec, env=[*spec.env, entry])


def _leader_only(probe: dict[str, Any], index_env: str, ports: list[dict[str, Any]]
                 ) -> dict[str, Any]:
    """An HTTP probe as an exec probe that passes on pods other than the group's leader
    (index 0): a vLLM headless worker serves no HTTP."""
    out = copy.deepcopy(probe)
    get = out.pop("httpGet")
    port = get["port"]
    if isinstance(port, str):
        port = next(p["containerPort"] for p in ports if p["name"] == port)
    timeout = out.get("timeoutSeconds", 1)
    check = ("import sys, urllib.request; "
             "urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2]))")
    out["exec"] = {"command": [
        "/bin/sh", "-c",
        f'[ "${{{index_env}}}" != 0 ] || exec python3 -c \'{check}\' '
        f'http://127.0.0.1:{port}{get["path"]} {timeout}']}
    return out


def storm_service(plan: DeploymentPlan, d: Deployment, rel: str) -> dict[str, Any]:
    """The StormService: one RoleSet, a role per engine role."""
    crd = _v(rel, "crd")
    roles = []
    for i, role in d.role_items():
        rs = d.spec.spec.roles[i]
        rp = next(r for r in plan.roles if r.name == role.name)
        work = next(w for w in plan.workloads if w.role == role.name)
        multi = role.layout.multi_pod
        entry: dict[str, Any] = {
            "name": role.name, "replicas": rs.replicas, "stateful": True,
            "updateStrategy": {"maxSurge": 0, "maxUnavailable": 1},
            "template": annotate(_shared_template(plan, rp, work.leader,
                                                  work.worker if multi else None, rel),
                                 sized_load(work))}
        if multi:
            entry["podGroupSize"] = len(role.layout.pods)
        roles.append(entry)
    selector = {L_INSTANCE: plan.name}
    return {"apiVersion": f"{crd['group']}/{crd['storage']}", "kind": crd["kind"],
            "metadata": {"name": plan.name, "namespace": plan.namespace,
                         "labels": dict(plan.labels)},
            "spec": {"replicas": 1, "stateful": True, "selector": {"matchLabels": selector},
                     "updateStrategy": UPDATE,
                     "template": {"metadata": {"labels": dict(selector)},
                                  "spec": {"roles": roles}}}}


TARGET = AibrixTarget()
