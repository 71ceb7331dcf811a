"""Rules about generated names and labels (Kubernetes limits, moegen's own label keys)."""

from __future__ import annotations

from ..engines.routers import rendered_router
from ..naming import MAX_CONTROLLER, MAX_LABEL, OWN_LABELS, OWN_PREFIX, object_names
from ..roles import RoleInput
from .registry import Context, E, Hit, W, role_path, rule
from .scaling import free_nodes


def highest_group(ctx: Context, i: int, r: RoleInput) -> int:
    """The highest group (LeaderWorkerSet) or instance (StatefulSet) index role ``i`` reaches:
    ``replicas - 1``, or with ``roles[].autoscaling`` ``maxReplicas - 1`` when larger (its
    default: the instances the pool holds beside the other roles, as rule AUT001 and the
    ScaledObject count them: generator/layout.py RoleLayout.most_instances)."""
    role = ctx.spec.spec.roles[i]
    most = role.replicas
    a = role.autoscaling
    if a is not None:
        most = max(most, a.maxReplicas or r.layout.most_instances(free_nodes(ctx, i)))
    return most - 1


@rule("NAME001", E, "role names are unique",
      "Kubernetes: names of one kind are unique in a namespace "
      "(https://kubernetes.io/docs/concepts/overview/working-with-objects/names/); every role "
      "names objects")
def _unique_roles(ctx: Context):
    seen: dict[str, int] = {}
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.name in seen:
            yield Hit(role_path(i, "name"),
                      f"role name {role.name!r} is already used by roles[{seen[role.name]}]",
                      "give each role its own name")
        seen.setdefault(role.name, i)


@rule("NAME002", E, "generated pod and controller names fit Kubernetes limits",
      "Kubernetes: a pod hostname is an RFC 1123 label (<= 63, "
      "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/); controller "
      "names + 11 <= 63 (controller-revision-hash label); LWS pods are <lws>-<group>-<index> "
      "(kubernetes-sigs/lws@v0.10.0:pkg/utils/pod/pod_utils.go); the highest group of an "
      "autoscaled role is maxReplicas - 1 (docs/spec.md §6.2)")
def _name_length(ctx: Context):
    base = ctx.spec.metadata.name
    for i, r in ctx.role_items():
        role = ctx.spec.spec.roles[i]
        controller = f"{base}-{role.name}-{highest_group(ctx, i, r)}"
        pod = f"{controller}-{len(r.layout.pods) - 1}"
        for what, name, limit in (("pod", pod, MAX_LABEL), ("controller", controller, MAX_CONTROLLER)):
            if len(name) > limit:
                yield Hit(("metadata", "name"),
                          f"{what} name {name!r} of role {role.name!r} is {len(name)} characters; "
                          f"the limit is {limit}",
                          f"shorten metadata.name or the role name by {len(name) - limit}")
                break


@rule("NAME003", W, "metadata.labels do not use keys moegen sets",
      "generator/naming.py (moegen's label scheme)")
def _own_labels(ctx: Context):
    for key in ctx.spec.metadata.labels:
        if key in OWN_LABELS or key.startswith(OWN_PREFIX):
            yield Hit(("metadata", "labels", key), f"label {key!r} is set by moegen; "
                      "your value would be replaced", "use another label key")


@rule("NAME004", E, "generated object names are unique",
      "Kubernetes: names of one kind are unique in a namespace "
      "(https://kubernetes.io/docs/concepts/overview/working-with-objects/names/); LWS creates a "
      "headless Service named after each LeaderWorkerSet "
      "(kubernetes-sigs/lws@v0.10.0:pkg/controllers/leaderworkerset_controller.go:189)")
def _unique_objects(ctx: Context):
    spec = ctx.spec.spec
    rendered = rendered_router(spec)
    roles = {r.name: (r.name, r.workload, r.replicas) for r in spec.roles}   # twice: NAME001
    seen: dict[tuple[str, str], str] = {}
    for kind, name, what in object_names(ctx.spec.metadata.name, list(roles.values()),
                                         rendered == "deployment", rendered == "gateway"):
        other = seen.setdefault((kind, name), what)
        if other != what:
            yield Hit(("spec", "roles"),
                      f"{kind} {name!r} of {what} is also the {kind} of {other}",
                      "rename the role (role names ending in -api or -env, or named router or "
                      "epp, collide with the names moegen gives other objects)")
