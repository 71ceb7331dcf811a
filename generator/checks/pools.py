"""Rules about node pools and placement: existence, capacity, tolerations, overlap, topology
domains, gang schedulers."""

from __future__ import annotations

from collections import defaultdict

from ..layout import RoleLayout, pool_nodes
from ..pods import effective_pod, pod_path
from .layout import count_text
from .registry import Context, E, Hit, W, role_path, rule


@rule("POOL001", E, "role.nodePool names a pool of spec.nodePools", "docs/spec.md §2 (roles name a pool of spec.nodePools)")
def _pool_exists(ctx: Context):
    pools = ctx.spec.spec.nodePools
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.nodePool not in pools:
            yield Hit(role_path(i, "nodePool"), f"node pool {role.nodePool!r} is not defined",
                      f"defined pools: {', '.join(sorted(pools))}")


def _use_text(name: str, lay: RoleLayout) -> str:
    """A role's share of a pool: its nodes, or its pods when they pack."""
    if lay.pods_per_node > 1:
        return (f"{name} {count_text(lay.replicas * len(lay.pods), 'pod')} of "
                f"{count_text(lay.gpus_per_pod, 'GPU')}, packed")
    return f"{name} {lay.nodes_needed}"


@rule("POOL002", E, "the roles on a pool fit in its nodes",
      "docs/spec.md §2 (replicas x pods must fit in the pool's nodes; pods smaller than a node "
      "pack onto its GPUs, every role's together)")
def _pool_capacity(ctx: Context):
    need: dict[str, list[tuple[int, RoleLayout]]] = defaultdict(list)
    for i, r in ctx.role_items():
        need[ctx.spec.spec.roles[i].nodePool].append((i, r.layout))
    for pool_name, uses in need.items():
        pool = ctx.spec.spec.nodePools[pool_name]
        total = pool_nodes([(lay, lay.replicas) for _, lay in uses], pool.gpusPerNode)
        if total > pool.nodes:
            parts = ", ".join(_use_text(ctx.spec.spec.roles[i].name, lay) for i, lay in uses)
            yield Hit(("spec", "nodePools", pool_name, "nodes"),
                      f"pool {pool_name!r} has {count_text(pool.nodes, 'node')} but its roles "
                      f"need {total} ({parts})", f"set nodes: {total} or shrink the roles")


@rule("POOL007", W, "pods that pack share their pool with larger pods the scheduler can starve",
      "kube-scheduler defaults: NodeResourcesFit scores cpu and memory only (LeastAllocated, "
      "kubernetes/kubernetes v1.33.0 pkg/scheduler/apis/config/v1/defaults.go "
      "defaultResourceSpec), and PodTopologySpread's system default constraints spread a "
      "StatefulSet's pods over hostnames "
      "(https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/"
      "#internal-default-constraints); bin packing by GPU needs a scheduler profile "
      "(https://kubernetes.io/docs/concepts/scheduling-eviction/resource-bin-packing/)")
def _packing_starves(ctx: Context):
    pools: dict[str, list[tuple[str, RoleLayout]]] = defaultdict(list)
    for i, r in ctx.role_items():
        pools[ctx.spec.spec.roles[i].nodePool].append((r.name, r.layout))
    for pool_name, uses in pools.items():
        pool = ctx.spec.spec.nodePools[pool_name]
        gpn = pool.gpusPerNode
        size = {name: lay.gpus_per_pod if lay.pods_per_node > 1 else gpn for name, lay in uses}
        largest = max(size.values())
        small = [(n, lay) for n, lay in uses if size[n] < largest]
        big = [(n, lay) for n, lay in uses if size[n] == largest]
        if not small:
            continue
        spread = min(pool.nodes, sum(lay.replicas * len(lay.pods) for _, lay in small))
        need = pool_nodes([(lay, lay.replicas) for _, lay in big], gpn)
        if pool.nodes - spread >= need:
            continue   # even one small pod on every node it can reach leaves the larger room
        yield Hit(("spec", "nodePools", pool_name),
                  f"pool {pool_name!r}: the default scheduler spreads the smaller pods of "
                  f"{', '.join(n for n, _ in small)} over up to {count_text(spread, 'node')} "
                  f"of {pool.nodes} (it scores CPU and memory, not GPUs), which can leave no "
                  f"node with {largest} free GPUs for {', '.join(n for n, _ in big)} "
                  f"({need} needed): those pods then stay Pending",
                  "give the roles pools of their own (distinct nodeSelector), or run a scheduler "
                  "profile that bin-packs nvidia.com/gpu (NodeResourcesFit MostAllocated)")


@rule("POOL004", W, "node pools select distinct nodes",
      "Kubernetes nodeSelector "
      "(https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodeselector): "
      "pools with the same (or no) selector share nodes, so one pool's pods can land on the "
      "other's GPU type")
def _pool_overlap(ctx: Context):
    pools = ctx.spec.spec.nodePools
    if len(pools) < 2:
        return
    used = {r.nodePool for r in ctx.spec.spec.roles}
    seen: dict[tuple, str] = {}
    for name, pool in pools.items():
        if name not in used:
            continue
        key = tuple(sorted(pool.nodeSelector.items()))
        if key in seen:
            yield Hit(("spec", "nodePools", name, "nodeSelector"),
                      f"pools {seen[key]!r} and {name!r} select the same nodes "
                      f"({dict(key) or 'no nodeSelector'})",
                      "give each pool a nodeSelector that matches only its nodes (e.g. the "
                      "instance type or GPU product label)")
        seen.setdefault(key, name)


@rule("POOL003", E, "tolerations are valid Kubernetes tolerations",
      "Kubernetes core/v1 Toleration: value must be empty when operator is Exists; "
      "tolerationSeconds only with effect NoExecute "
      "(https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/)")
def _tolerations(ctx: Context):
    for name, pool in ctx.spec.spec.nodePools.items():
        for j, t in enumerate(pool.tolerations):
            if t.operator == "Exists" and t.value:
                yield Hit(("spec", "nodePools", name, "tolerations", j, "value"),
                          f"toleration {t.key!r} has operator Exists and value {t.value!r}",
                          "drop value, or use operator: Equal")
            if t.tolerationSeconds is not None and t.effect != "NoExecute":
                yield Hit(("spec", "nodePools", name, "tolerations", j, "tolerationSeconds"),
                          f"toleration {t.key!r} sets tolerationSeconds with effect {t.effect!r}",
                          "tolerationSeconds applies to effect NoExecute only")


@rule("POOL005", W, "every pool a role uses selects its nodes",
      "Kubernetes nodeSelector "
      "(https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodeselector): "
      "without one, the scheduler may place the pods on any node with free GPUs, of another type "
      "than the pool's GPU the sizing was computed for")
def _pool_selector(ctx: Context):
    used = {r.nodePool for r in ctx.spec.spec.roles}
    for name, pool in ctx.spec.spec.nodePools.items():
        if name in used and not pool.nodeSelector:
            yield Hit(("spec", "nodePools", name),
                      f"pool {name!r} ({pool.gpu}) has no nodeSelector: its pods may land on "
                      "nodes with other GPUs",
                      _selector_hint(pool.gpu))


def _selector_hint(gpu: str) -> str:
    """The pool's own GPU product label (catalog GPU_PRODUCTS), else what to look for."""
    from ..catalog import GPU_PRODUCTS
    if gpu in GPU_PRODUCTS:
        return (f"set nodeSelector, e.g. {{nvidia.com/gpu.product: {GPU_PRODUCTS[gpu]}}} or "
                "the instance-type label")
    return (f"set nodeSelector to a label only the {gpu} nodes carry (GPU feature discovery's "
            "nvidia.com/gpu.product or amd.com/gpu.product-name, or the instance-type label)")


@rule("TOP001", E, "an instance fits one topology domain",
      "docs/spec.md §6.2 (platform.topology: a group must fit in one domain); the required pod "
      "affinity that keeps a group's pods together leaves a larger group Pending for ever")
def _domain_size(ctx: Context):
    platform = ctx.spec.spec.platform
    if platform is None or platform.topology is None or platform.topology.nodesPerDomain is None:
        return
    per_domain = platform.topology.nodesPerDomain
    for i, r in ctx.role_items():
        gpn = ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool].gpusPerNode
        nodes = -(-r.layout.gpus_per_instance // gpn)
        if nodes > per_domain:
            yield Hit(("spec", "platform", "topology", "nodesPerDomain"),
                      f"role {r.name!r}: one instance needs {nodes} nodes "
                      f"({r.layout.gpus_per_instance} GPUs / {gpn} per node) but a "
                      f"{platform.topology.key} domain has {per_domain}",
                      "use a smaller layout (fewer data or pipeline ranks per instance) or a "
                      "wider topology key")


@rule("SCHD001", E, "a Kueue scheduler names its queue",
      "https://kueue.sigs.k8s.io/docs/tasks/run/leaderworkerset/ (Kueue manages a workload whose "
      "kueue.x-k8s.io/queue-name label names a LocalQueue)")
def _kueue_queue(ctx: Context):
    platform = ctx.spec.spec.platform
    sched = platform.scheduler if platform is not None else None
    if sched is not None and sched.kind == "kueue" and not sched.queue:
        yield Hit(("spec", "platform", "scheduler", "queue"),
                  "platform.scheduler.kind is kueue but no queue is named",
                  "set platform.scheduler.queue to the namespace's LocalQueue")


@rule("SCHD002", E, "Kueue topology-aware scheduling and LWS exclusive topology are not combined",
      "https://kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling/ (Limitations: pod "
      "affinity is ignored when placing; kubernetes-sigs/kueue#15057): two groups placed in one "
      "domain leave the second Pending against the exclusive anti-affinity while its quota stays "
      "reserved")
def _kueue_exclusive(ctx: Context):
    platform = ctx.spec.spec.platform
    if platform is None or platform.scheduler is None or platform.scheduler.kind != "kueue" \
            or platform.topology is None:
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.placement is not None and role.placement.topologyKey:
            yield Hit(role_path(i, "placement", "topologyKey"),
                      f"role {role.name!r}: an exclusive topology with Kueue's topology-aware "
                      "scheduling (platform.topology) conflicts",
                      "use one: drop placement.topologyKey, or platform.topology")


@rule("SCHD003", E, "Volcano gang scheduling runs the pods on the volcano scheduler",
      "https://github.com/kubernetes-sigs/lws/tree/main/docs/examples/sample/gang-scheduling "
      "(and kubernetes-sigs/lws@v0.10.0:pkg/schedulerprovider/volcano_provider.go): the LWS "
      "controller makes a PodGroup per group for pods with schedulerName volcano")
def _volcano_scheduler(ctx: Context):
    platform = ctx.spec.spec.platform
    if platform is None or platform.scheduler is None or platform.scheduler.kind != "volcano":
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        pod = effective_pod(ctx.spec.spec, role)
        if pod.scheduler_name not in (None, "volcano"):
            yield Hit(pod_path(pod, i, "schedulerName"),
                      f"role {role.name!r}: schedulerName {pod.scheduler_name!r} with "
                      "platform.scheduler.kind volcano: no PodGroup would gang its groups",
                      "remove pod.schedulerName (moegen sets volcano)")
