"""Rules about node pools and placement: existence, capacity, tolerations, overlap, topology
domains, gang schedulers."""

from __future__ import annotations

from collections import defaultdict

from ..pods import effective_pod, pod_path
from .registry import Context, E, Hit, W, role_path, rule


@rule("POOL001", E, "role.nodePool names a pool of spec.nodePools", "docs/spec.md §2 (roles name a pool of spec.nodePools)")
def _pool_exists(ctx: Context):
    pools = ctx.spec.spec.nodePools
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.nodePool not in pools:
            yield Hit(role_path(i, "nodePool"), f"node pool {role.nodePool!r} is not defined",
                      f"defined pools: {', '.join(sorted(pools))}")


@rule("POOL002", E, "the roles on a pool fit in its nodes",
      "docs/spec.md §2 (replicas x pods must fit in the pool's nodes)")
def _pool_capacity(ctx: Context):
    need: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for i, r in ctx.role_items():
        need[ctx.spec.spec.roles[i].nodePool].append((i, r.layout.nodes_needed))
    for pool_name, uses in need.items():
        pool = ctx.spec.spec.nodePools[pool_name]
        total = sum(n for _, n in uses)
        if total > pool.nodes:
            parts = ", ".join(f"{ctx.spec.spec.roles[i].name} {n}" for i, n in uses)
            yield Hit(("spec", "nodePools", pool_name, "nodes"),
                      f"pool {pool_name!r} has {pool.nodes} nodes but its roles need {total} "
                      f"({parts})", f"set nodes: {total} or shrink the roles")


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
