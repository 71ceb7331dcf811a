"""Rules about autoscaling (``roles[].autoscaling``): bounds the pool can hold, a scalable
workload, the Prometheus KEDA asks, a router that finds new instances."""

from __future__ import annotations

from ..engines.routers import discovery_supported, rendered_router
from ..layout import pool_nodes
from .layout import count_text
from .registry import Context, E, Hit, W, role_path, rule


def free_nodes(ctx: Context, i: int) -> int:
    """Nodes of role ``i``'s pool that the other roles on the pool leave (their pods packed
    together: :func:`generator.layout.pool_nodes`)."""
    spec = ctx.spec.spec
    pool = spec.nodePools[spec.roles[i].nodePool]
    others = [(r.layout, r.layout.replicas) for j, r in ctx.role_items()
              if j != i and spec.roles[j].nodePool == spec.roles[i].nodePool]
    return pool.nodes - pool_nodes(others, pool.gpusPerNode)


def bounds(ctx: Context, i: int) -> tuple[int, int, int]:
    """(minReplicas, maxReplicas, most the pool holds) of autoscaled role ``i``: the spec's
    bounds or their defaults (the role's replicas; ``RoleLayout.most_instances`` in the free
    nodes)."""
    spec = ctx.spec.spec
    role, lay = spec.roles[i], ctx.roles[i].layout
    most = lay.most_instances(free_nodes(ctx, i))
    a = role.autoscaling
    return a.minReplicas or role.replicas, a.maxReplicas or most, most


@rule("AUT001", E, "an autoscaled role's bounds fit its pool",
      "docs/spec.md §6.2 (maxReplicas: the instances the pool's nodes hold beside the other "
      "roles; an instance the scheduler cannot place stays Pending and holds its gang)")
def _bounds(ctx: Context):
    spec = ctx.spec.spec
    for i, r in ctx.role_items():
        a = spec.roles[i].autoscaling
        if a is None:
            continue
        pool = spec.nodePools[spec.roles[i].nodePool]
        lay = r.layout
        low, high, most = bounds(ctx, i)
        if high > most:
            yield Hit(role_path(i, "autoscaling", "maxReplicas"),
                      f"role {r.name!r}: maxReplicas {high}, but pool "
                      f"{spec.roles[i].nodePool!r} ({count_text(pool.nodes, 'node')} of "
                      f"{pool.gpusPerNode} GPUs) holds {count_text(most, 'instance')} of "
                      f"{count_text(lay.gpus_per_instance, 'GPU')} beside the other roles",
                      f"maxReplicas <= {most}, or add nodes to the pool")
        if low > high:
            yield Hit(role_path(i, "autoscaling", "minReplicas"),
                      f"role {r.name!r}: minReplicas {low} is above maxReplicas {high}",
                      "minReplicas <= maxReplicas")
        if a.metric == "kvUsage" and a.target > 1:
            yield Hit(role_path(i, "autoscaling", "target"),
                      f"role {r.name!r}: kvUsage target {a.target:g} is a fraction of the KV "
                      "cache, at most 1", "e.g. target: 0.8")


@rule("AUT002", E, "autoscaling scales a LeaderWorkerSet",
      "KEDA ScaledObject scaleTargetRef needs a /scale subresource counting instances: "
      "LeaderWorkerSet has one "
      "(kubernetes-sigs/lws@v0.10.0:api/leaderworkerset/v1/leaderworkerset_types.go:418, "
      "+kubebuilder:subresource:scale); moegen's ScaledObjects (generator/manifests/scaling.py) "
      "count LeaderWorkerSet groups and select their leaders (hpaPodSelector); a StatefulSet "
      "role is not rendered with one")
def _scalable(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.autoscaling is not None and role.workload == "statefulset":
            yield Hit(role_path(i, "workload"),
                      f"role {role.name!r}: moegen renders autoscaling for LeaderWorkerSet roles "
                      "only", "workload: lws (or pod-per-rank)")


@rule("AUT003", E, "autoscaling has the Prometheus it queries",
      "KEDA prometheus scaler (https://keda.sh/docs/2.16/scalers/prometheus/: serverAddress "
      "is required); "
      "the queries select the PodMonitor's target labels, so monitoring must be on")
def _prometheus(ctx: Context):
    spec = ctx.spec.spec
    mon = spec.monitoring
    if not any(r.autoscaling for r in spec.roles):
        return
    if mon is None or not mon.enabled or not mon.prometheusUrl:
        i = next(i for i, r in enumerate(spec.roles) if r.autoscaling)
        yield Hit(role_path(i, "autoscaling"),
                  f"role {spec.roles[i].name!r} autoscales on its engines' metrics, but "
                  "spec.monitoring does not enable the PodMonitor with a prometheusUrl",
                  "spec.monitoring: {enabled: true, prometheusUrl: "
                  "http://prometheus-operated.monitoring.svc:9090}")


@rule("AUT004", E, "the router routes to instances the autoscaler adds",
      "generator/engines/routers.py discovery_supported (vllm-router 0.1.17 with Mooncake reads "
      "a static list at start: vllm-project/router src/routers/vllm_pd_router.rs (0.1.17))")
def _router_finds_them(ctx: Context):
    spec = ctx.spec.spec
    if rendered_router(spec) != "deployment":
        return
    connectors = {r.kvTransfer.connector for r in spec.roles if r.kvTransfer}
    finds = spec.router.discovery and all(discovery_supported(spec.engine.name, c)
                                          for c in connectors)
    for i, role in enumerate(spec.roles):
        if role.autoscaling is not None and not finds:
            yield Hit(role_path(i, "autoscaling"),
                      f"role {role.name!r} autoscales, but the router has a static list of "
                      "pods: the instances it adds would get no requests",
                      "router.discovery: true with a connector the router discovers (NIXL "
                      "for vllm-router; smg always)")


@rule("AUT005", E, "autoscaling targets a LeaderWorkerSet moegen renders itself",
      "kubernetes-sigs/lws@v0.10.0:api/disaggregatedset/v1/disaggregatedset_types.go: the "
      "DisaggregatedSet controller owns its roles' LeaderWorkerSets and their replicas")
def _not_disaggregated(ctx: Context):
    platform = ctx.spec.spec.platform
    lws = platform.lws if platform is not None else None
    if lws is None or not getattr(lws, "disaggregatedSet", False):
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.autoscaling is not None:
            yield Hit(role_path(i, "autoscaling"),
                      f"role {role.name!r}: with platform.lws.disaggregatedSet the "
                      "DisaggregatedSet controller owns the role's LeaderWorkerSet; an "
                      "autoscaler on it would fight the controller",
                      "drop autoscaling, or render LeaderWorkerSets (disaggregatedSet: false)")


@rule("AUT006", W, "an autoscaled role has room to scale",
      "KEDA ScaledObject minReplicaCount / maxReplicaCount (https://keda.sh/docs/2.16/reference/"
      "scaledobject-spec/): equal bounds leave the instance count fixed")
def _room(ctx: Context):
    for i, r in ctx.role_items():
        if ctx.spec.spec.roles[i].autoscaling is None:
            continue
        low, high, _ = bounds(ctx, i)
        if low == high:
            yield Hit(role_path(i, "autoscaling"),
                      f"role {r.name!r} autoscales between {low} and {high} instances: the "
                      "autoscaler can never change the count",
                      "raise maxReplicas (add nodes to the pool), or drop autoscaling")


@rule("AUT007", E, "autoscaled roles sharing a pool fit it together at their maxima",
      "docs/spec.md §6.2 (each role's default maxReplicas takes the nodes the others leave at "
      "their current size, so two autoscaled roles on one pool must bound themselves)")
def _shared_pool(ctx: Context):
    spec = ctx.spec.spec
    by_pool: dict[str, list[int]] = {}
    for i, _ in ctx.role_items():
        by_pool.setdefault(spec.roles[i].nodePool, []).append(i)
    roles = dict(ctx.role_items())
    for pool_name, idx in by_pool.items():
        scaled = [i for i in idx if spec.roles[i].autoscaling is not None]
        if len(scaled) < 2:
            continue
        pool = spec.nodePools[pool_name]
        unset = [i for i in scaled if spec.roles[i].autoscaling.maxReplicas is None]
        for i in unset:
            yield Hit(role_path(i, "autoscaling", "maxReplicas"),
                      f"roles {', '.join(spec.roles[j].name for j in scaled)} all autoscale on "
                      f"pool {pool_name!r}: each default maxReplicas would take the whole pool",
                      "set maxReplicas on each so their nodes add up to the pool")
        if unset:
            continue
        need = pool_nodes([(roles[i].layout, spec.roles[i].autoscaling.maxReplicas
                            if i in scaled else spec.roles[i].replicas) for i in idx],
                          pool.gpusPerNode)
        if need > pool.nodes:
            yield Hit(("spec", "nodePools", pool_name, "nodes"),
                      f"at their maxReplicas the roles on pool {pool_name!r} need {need} nodes; "
                      f"it has {pool.nodes}", "lower maxReplicas, or add nodes to the pool")
