"""The ``rbg`` target: one SGLang ``RoleBasedGroup`` (workloads.x-k8s.io/v1alpha2) holding every
engine role and the router, and a ``CoordinatedPolicy`` that keeps prefill and decode in step
during rollouts and scaling.

What the RBG controller does and moegen therefore does not (facts: generator/facts/
controllers.py, read from sgl-project/rbg@v0.7.0 and @v0.8.0-alpha.5 by
tools/extract_controllers.py; both serve workloads.x-k8s.io/v1alpha2 and inject the same
RBG_LWP_* env):

* a multi-pod role is a ``leaderWorkerPattern`` of ``size`` pods on a RoleInstanceSet (RBG's
  default workload); the controller injects ``RBG_LWP_LEADER_ADDRESS`` (the leader's DNS name
  on the role's headless Service ``s-<group>-<role>``), ``RBG_LWP_WORKER_INDEX`` and
  ``RBG_LWP_GROUP_SIZE`` into every container, before the user's env. moegen's launcher reads
  those two instead of defining its own from LeaderWorkerSet labels; every engine flag (rank
  flags included: RBG passes the command through) stays moegen's;
* the headless Services: moegen renders none;
* the router is a role whose ``dependencies`` are the engine roles (it starts after them);
* the CoordinatedPolicy binds to the RoleBasedGroup of the same name.

moegen keeps rendering the client Services, PodDisruptionBudgets, the router's Service and
RBAC, the inference gateway and monitoring as plain objects (they select pods by moegen's
labels, which RBG keeps on its pods); the env files become container env.
"""

from __future__ import annotations

from typing import Any

from ..deployment import Deployment
from ..errors import Finding
from ..facts import controllers
from ..manifests.plan import DeploymentPlan
from ..manifests.pods import INDEX_ENV, LEADER_HOST_ENV, PodPlan
from .common import (
    E,
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
    sized_load,
    template,
    with_launcher,
    without_env,
)

NAME = "rbg"
ROUTER_ROLE = "router"
#: Rolling updates re-create pods (an engine group does not survive one pod's in-place
#: restart; LeaderWorkerSet re-creates groups likewise), one instance at a time, no surge
#: (a surge instance needs a whole extra set of GPU nodes).
ROLLOUT = {"type": "RollingUpdate",
           "rollingUpdate": {"type": "RecreatePod", "maxUnavailable": 1, "maxSurge": 0}}
#: The CoordinatedPolicy's skew: the smallest percentage, which the controller rounds up to
#: one instance (rolebasedgroup_controller.go calculateNextRollingTarget:
#: ParseIntStrAsNonZero), so prefill and decode never drift more than one instance apart.
MAX_SKEW = "1%"


def _v(rel: str, *path: str):
    return controllers.value(NAME, rel, *path)


def _src(rel: str, *path: str) -> str:
    return controllers.source(NAME, rel, *path)


class RbgTarget:
    """SGLang RoleBasedGroup."""

    name = NAME

    def findings(self, deployment: Deployment) -> list[Finding]:
        """TGT001-003, TGT020 (what a RoleBasedGroup cannot express), TGT021 (what RBG
        ignores)."""
        found = Findings(deployment)
        rel = common_findings(deployment, found, ("engines",))
        if rel is None:
            return found.out
        group_findings(deployment, found, "TGT020", "TGT021", "RBG",
                       _src(rel, "defaultWorkload"))
        for i, rs in enumerate(deployment.spec.spec.roles):
            if rs.name == ROUTER_ROLE and deployment.spec.spec.router.enabled:
                found.add("TGT020", E, ("spec", "roles", i, "name"),
                          f"the router is the RoleBasedGroup's role {ROUTER_ROLE!r}; an engine "
                          "role cannot have that name", "rename the role")
        return found.out

    def address_form(self, deployment: Deployment):
        """How this target renders addresses (generator/manifests/addresses.py): moegen's pod
        templates and plain objects; the launcher reads the leader's name from the variable
        RBG's controller injects."""
        from ..manifests.addresses import AddressForm
        rel = release(deployment)
        leader = _v(rel, "env", "leaderAddress") if rel is not None else "RBG_LWP_LEADER_ADDRESS"
        return AddressForm(NAME, leader_vars=frozenset({leader}), leader_address=f"$({leader})")

    def render(self, plan: DeploymentPlan, deployment: Deployment) -> dict[str, str]:
        """``rolebasedgroup.yaml``, ``coordinatedpolicy.yaml`` (prefill and decode roles), the
        plain objects and a kustomization."""
        rel = release(deployment)
        plain = plain_objects(plan, drop=["router-deployment.yaml"]
                              + [so.file for so in plan.scaled_objects])
        files = {path: document(plan, obj) for path, obj in plain.items()}
        files["rolebasedgroup.yaml"] = document(plan, group(plan, deployment, rel))
        policy = coordinated_policy(plan, deployment, rel)
        if policy is not None:
            files["coordinatedpolicy.yaml"] = document(plan, policy)
        files["kustomization.yaml"] = kustomization(plan, files)
        return dict(sorted(files.items()))


def _engine_template(plan: DeploymentPlan, pod: PodPlan, role: str, multi_pod: bool,
                     rel: str) -> dict[str, Any]:
    """A pod template of an engine role: the kubernetes target's pod, its launcher reading
    RBG's leader/worker env, moegen's own index and leader env dropped, the env file inline."""
    spec = without_env(pod.spec, INDEX_ENV, LEADER_HOST_ENV)
    if multi_pod:
        spec = with_launcher(spec, index_env=_v(rel, "env", "workerIndex"),
                             leader_env=_v(rel, "env", "leaderAddress"))
    return template(pod, inline_env(pod_spec_dict(spec), env_items(plan, role)))


def _restart_policy(rel: str) -> dict[str, Any]:
    """Re-create the whole instance when one of its pods restarts: ``restartPolicyConfig``
    from v0.8.0 (its ``restartPolicy`` string deprecated), the ``restartPolicy`` string in
    v0.7.0 (whose CRD has no restartPolicyConfig: the extracted property list)."""
    kind = _v(rel, "restartPolicy")
    if "restartPolicyConfig" in _v(rel, "crd")["properties"]["leaderWorkerPattern"]:
        return {"restartPolicyConfig": {"type": kind}}
    return {"restartPolicy": kind}


def group(plan: DeploymentPlan, d: Deployment, rel: str) -> dict[str, Any]:
    """The RoleBasedGroup: a role per engine role (leaderWorkerPattern for multi-pod
    instances, standalonePattern otherwise) and the router role."""
    crd = _v(rel, "crd")
    roles = []
    for i, role in d.role_items():
        rs = d.spec.spec.roles[i]
        work = next(w for w in plan.workloads if w.role == role.name)
        lay = role.layout
        leader = annotate(_engine_template(plan, work.leader, role.name, lay.multi_pod, rel),
                          sized_load(work))
        if lay.multi_pod:
            pattern = {"leaderWorkerPattern": {
                "size": len(lay.pods),
                "template": annotate(_engine_template(plan, work.worker, role.name, True, rel),
                                     sized_load(work)),
                "leaderTemplatePatch": leader,
                **_restart_policy(rel)}}
        else:
            pattern = {"standalonePattern": {"template": leader}}
        roles.append({"name": role.name, "replicas": rs.replicas, "rolloutStrategy": ROLLOUT,
                      **pattern})
    if plan.router is not None:
        from .kubernetes import render_files
        import yaml
        router = yaml.safe_load(render_files(plan)["router-deployment.yaml"])
        roles.append({"name": ROUTER_ROLE, "replicas": plan.router.replicas,
                      "dependencies": [r["name"] for r in roles],
                      "rolloutStrategy": {"type": "RollingUpdate",
                                          "rollingUpdate": {"maxUnavailable": 1}},
                      "standalonePattern": {"template": router["spec"]["template"]}})
    return {"apiVersion": f"{crd['group']}/{crd['storage']}", "kind": crd["kind"],
            "metadata": {"name": plan.name, "namespace": plan.namespace,
                         "labels": dict(plan.labels)},
            "spec": {"roles": roles}}


def coordinated_policy(plan: DeploymentPlan, d: Deployment, rel: str) -> dict[str, Any] | None:
    """The CoordinatedPolicy (same name as the group: the controller looks it up so) keeping
    the prefill and decode roles within one instance of each other in rollouts and scaling;
    None without both."""
    modes = {r.mode for _, r in d.role_items()}
    if not {"prefill", "decode"} <= modes:
        return None
    crd = _v(rel, "policyCrd")
    names = [r.name for _, r in d.role_items() if r.mode in ("prefill", "decode")]
    return {"apiVersion": f"{crd['group']}/{crd['storage']}", "kind": crd["kind"],
            "metadata": {"name": plan.name, "namespace": plan.namespace,
                         "labels": dict(plan.labels)},
            "spec": {"policies": [{
                "name": "prefill-decode", "roles": names,
                "strategy": {"rollingUpdate": {"maxSkew": MAX_SKEW, "maxUnavailable": 1},
                             "scaling": {"maxSkew": MAX_SKEW, "progression": "OrderReady"}}}]}}


TARGET = RbgTarget()
