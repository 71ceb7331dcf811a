"""What happens to a deployment over its life: every restart, upgrade and scale-down path, and
what moegen renders so each one recovers (docs/design.md §9).

==============================  ==========================================================
path                            what recovers it
==============================  ==========================================================
a pod of a multi-pod group      LeaderWorkerSet RecreateGroupOnPodRestart (manifests/plan.py):
fails                           the engines rendezvous only at start
a prefill instance goes away    decode recomputes the prompt instead of failing the request:
(group re-created, rollout,     vLLM ``kv_load_failure_policy: recompute`` on decode (>= 0.13.0;
node drain or failure, KEDA     default ``fail`` from 0.17.0: vllm PR#34896), engines/vllm.py.
scale-down, preemption)         A NIXL handshake with a prefill of another vLLM version (an
                                upgrade rolling through the roles) fails its compatibility hash
                                (vllm PR#29503) and takes the same path. SGLang's prefill drains
                                until its transfers finish (tokenizer_manager.py
                                ``sigterm_watchdog``); vLLM < 0.13 has no recovery (PD061)
an engine is stopped            preStop sleep, then the engine drains in-flight requests for
(rollout, scale-down, drain)    ``drain_s`` (generator/durations.py: the mean request x margin),
                                terminationGracePeriodSeconds covers both
a rollout of a role             one instance at a time (maxUnavailable 1); with room in the pool
                                for one more instance and an LWS that honours maxUnavailable 0
                                (>= v0.9.0), a surge instance first (:func:`rollout`): no
                                capacity drop, and a single-instance role stays up
a client bypasses the router    prefill/decode engines get no client Service of their own behind
                                a router (:func:`client_service`): SGLang engines refuse requests
                                without a bootstrap room, vLLM's would bypass the P/D split
==============================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .engines.routers import rendered_router
from .facts import lws as lwsv
from .layout import pool_nodes

if TYPE_CHECKING:
    from .roles import RoleInput
    from .spec.models import InferenceDeployment, Role

#: The rollout moegen renders without room for a surge instance (manifests/plan.py
#: LWS_MAX_SURGE, LWS_MAX_UNAVAILABLE): groups are replaced one at a time.
DEFAULT_ROLLOUT = (0, 1)


@dataclass(frozen=True)
class Rollout:
    """A LeaderWorkerSet's rolling update: ``max_surge``, ``max_unavailable`` (instances) and
    why (one line, for the review page and tests)."""

    max_surge: int
    max_unavailable: int
    reason: str


def _peak(role: Role) -> int:
    """Instances a role can reach: its autoscaling maxReplicas, or replicas."""
    return role.autoscaling.maxReplicas if role.autoscaling and role.autoscaling.maxReplicas \
        else role.replicas


def rollout(spec: InferenceDeployment, role_inputs: Sequence[RoleInput], i: int) -> Rollout:
    """The rolling update of role ``i`` (``role_inputs``: the RoleInputs in spec order).

    A surge instance (maxSurge 1, maxUnavailable 0) when all of:

    * the cluster's LeaderWorkerSet is declared (``platform.lws.version``) and honours
      maxUnavailable 0 with a surge: v0.9.0 sets the leader StatefulSet's maxUnavailable to
      maxSurge + maxUnavailable (kubernetes-sigs/lws#776, PR#781) and keeps surge groups until the
      rolled one is ready (PR#778); before, a StatefulSet with maxUnavailable 0 is refused;
    * the role's pool holds one more instance beside every role's peak (autoscaling maxReplicas
      or replicas; a role on the pool that autoscales without maxReplicas may take every node,
      and a surge group that cannot be placed stalls a maxUnavailable-0 rollout for good);
    * no Kueue admits the groups (a surge group waits for quota, and Kueue's LeaderWorkerSet
      integration stalled surge rollouts: kubernetes-sigs/kueue PR#8801).

    A DisaggregatedSet's controller reads the same bounds from each role
    (kubernetes-sigs/lws@v0.10.0:pkg/controllers/disaggregatedset/executor.go
    ``extractRollingUpdateConfig``, the same in v0.9.0) and starts the new revision's groups of
    every role within ``old + new <= replicas + maxSurge`` before it drains the old ones
    (planner.go ``canScaleUp``).

    Otherwise :data:`DEFAULT_ROLLOUT`. maxUnavailable 1 with maxSurge 1 is never rendered: on a
    single-instance LeaderWorkerSet it releases the surge before creating it and the rollout
    never advances (kubernetes-sigs/lws PR#779; lws pkg/controllers/leaderworkerset_controller.go
    calculateRollingUpdateReplicas, v0.10.0).
    """
    role = spec.spec.roles[i]
    platform = spec.spec.platform
    cfg = platform.lws if platform is not None else None
    if role.workload == "statefulset":
        return Rollout(*DEFAULT_ROLLOUT, "one StatefulSet per instance (no surge)")
    if cfg is None or not lwsv.has(cfg.version, "surgeWithoutUnavailable"):
        return Rollout(*DEFAULT_ROLLOUT, "the LeaderWorkerSet release is not declared >= "
                       f"{lwsv.since('surgeWithoutUnavailable')}")
    scheduler = platform.scheduler if platform is not None else None
    if scheduler is not None and scheduler.kind == "kueue":
        return Rollout(*DEFAULT_ROLLOUT, "Kueue admits each group (a surge group waits for "
                       "quota)")
    pool_name = role.nodePool
    pool = spec.spec.nodePools[pool_name]
    unbounded = [r.name for r in spec.spec.roles if r.nodePool == pool_name
                 and r.autoscaling is not None and r.autoscaling.maxReplicas is None]
    if unbounded:
        return Rollout(*DEFAULT_ROLLOUT, f"role {unbounded[0]!r} may autoscale over pool "
                       f"{pool_name!r} (no maxReplicas)")
    # Every role of the pool at its peak, this one with a surge instance, packed together.
    need = pool_nodes([(role_inputs[j].layout, _peak(r) + (j == i))
                       for j, r in enumerate(spec.spec.roles)
                       if r.nodePool == pool_name and role_inputs[j] is not None], pool.gpusPerNode)
    if need > pool.nodes:
        return Rollout(*DEFAULT_ROLLOUT, f"pool {pool_name!r} has no room for a surge instance "
                       f"({need} nodes needed, {pool.nodes} in the pool)")
    return Rollout(1, 0, f"pool {pool_name!r} holds a surge instance ({need} of {pool.nodes} "
                   "nodes)")


def client_service(spec: InferenceDeployment, mode: str, sidecar: bool) -> bool:
    """Whether a role of ``mode`` gets its own client Service (``<name>-<role>-api``).

    Behind a router the roles of a prefill/decode pair are no entry point: a request sent to an
    SGLang prefill or decode engine directly carries no bootstrap room and fails ("Disaggregated
    request received without bootstrap room id": volcano-sh/kthena#865), and clients that pick
    rooms themselves can crash the schedulers (sgl-project/sglang#40125); a vLLM decode engine
    would compute the prompt itself and a prefill one generate the whole answer. So: none behind
    a router Deployment; behind the inference gateway only the decode role's, whose port is the
    routing sidecar that runs the P/D protocol (``sidecar``)."""
    rendered = rendered_router(spec.spec)
    if mode not in ("prefill", "decode"):
        return True
    if rendered == "deployment":
        return False
    if rendered == "gateway":
        return mode == "decode" and sidecar
    return True
