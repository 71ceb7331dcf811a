"""The layout model: where every rank of every instance runs (docs/spec.md §2, "parallel" and "Pods").

Computed in Python before any template runs. For one role:

* ``parallel`` describes one engine instance: GPUs = tensor x data x pipeline; with
  ``expert: true`` the expert-parallel size is tensor x data (vLLM's rule, vllm/config/parallel.py:
  EP size = TP x DP [x PCP from 0.26.0]).
* ``lws`` / ``statefulset``: an instance spans ceil(GPUs / gpusPerNode) pods, one per node, each
  with GPUs / pods GPUs. How the ranks map onto the pods is one of the :class:`Spread` kinds. An
  instance smaller than a node is one pod, and the instances of a role pack onto nodes by GPU
  count (the scheduler places pods by their ``nvidia.com/gpu`` requests: kube-scheduler's
  NodeResourcesFit filter) unless they may not share a node (``share_nodes`` false: the pods
  bind the node's ports with hostNetwork, or ``placement.topologyKey`` keeps one instance per
  domain).
* ``pod-per-rank``: every data-parallel rank is its own pod with tensor x pipeline GPUs (vLLM's
  external load-balancing DP mode); pods pack onto nodes by GPU count.

The layout does not decide flags; the engine dialects read it. It raises nothing: impossible
layouts are reported by the rules (``LAY*`` codes) from the fields ``problem`` carries.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class Spread(str, enum.Enum):
    """How one instance's ranks are spread over its pods."""

    #: One pod holds the whole instance.
    SINGLE = "single"
    #: Data-parallel ranks are spread over pods; each pod holds ``dp_local`` whole DP ranks
    #: (vLLM internal load balancing: leader serves the API, workers are ``--headless``).
    DATA = "data"
    #: One tensor/pipeline-parallel group spans the pods (data == 1): vLLM
    #: ``--nnodes/--node-rank/--master-addr``, SGLang ``--nnodes/--node-rank/--dist-init-addr``.
    MODEL = "model"
    #: Each data-parallel rank is its own pod (external load balancing).
    PER_RANK = "per-rank"


@dataclass(frozen=True)
class PodSlot:
    """One pod of an instance.

    Attributes:
        index: pod index in the instance (0 = leader).
        gpus: GPUs of the pod.
        dp_ranks: global data-parallel ranks it hosts (``(r,)`` for per-rank pods).
    """

    index: int
    gpus: int
    dp_ranks: tuple[int, ...]

    @property
    def dp_start(self) -> int:
        """First DP rank of the pod (``--data-parallel-start-rank`` / ``--data-parallel-rank``)."""
        return self.dp_ranks[0]


@dataclass(frozen=True)
class RoleLayout:
    """Layout of one role (all its instances are identical).

    Attributes:
        spread: how ranks are spread over pods.
        tensor, data, pipeline: parallel sizes of one instance.
        expert_parallel: EP enabled; ``ep_size`` = tensor x data then (1 otherwise).
        gpus_per_instance: tensor x data x pipeline.
        pods: the pods of one instance, leader first.
        gpus_per_pod: GPUs of each pod (all pods of a role are alike).
        dp_local: DP ranks per pod.
        replicas: instances of the role.
        nodes_needed: nodes of the pool the role occupies (:meth:`nodes_for` its replicas).
        pods_per_node: pods of the role one node holds (1 for pods of whole nodes, or when
            instances may not share a node; gpusPerNode // GPUs per pod when they pack).
        problem: why the layout is impossible (``None`` when it is fine); rules report it.
    """

    spread: Spread
    tensor: int
    data: int
    pipeline: int
    expert_parallel: bool
    gpus_per_instance: int
    pods: tuple[PodSlot, ...]
    gpus_per_pod: int
    dp_local: int
    replicas: int
    nodes_needed: int
    problem: str | None = None
    pods_per_node: int = 1

    @property
    def ep_size(self) -> int:
        """Expert-parallel size (tensor x data with EP on, else 1)."""
        return self.tensor * self.data if self.expert_parallel else 1

    @property
    def multi_pod(self) -> bool:
        """True when one instance spans more than one pod."""
        return len(self.pods) > 1

    def nodes_for(self, replicas: int) -> int:
        """Nodes ``replicas`` instances of this layout occupy: ceil(replicas x pods per
        instance / pods per node)."""
        return _ceil_div(replicas * len(self.pods), self.pods_per_node)

    def most_instances(self, free_nodes: int) -> int:
        """The most instances ``free_nodes`` nodes hold (0 when not one): whole instances of
        ``len(pods)`` pods, ``pods_per_node`` pods a node. An autoscaler's ceiling for a role,
        with the other roles' nodes taken out."""
        return max(0, free_nodes) * self.pods_per_node // len(self.pods)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def compute_layout(tensor: int, data: int, pipeline: int, expert: bool, workload: str,
                   gpus_per_node: int, replicas: int, share_nodes: bool = False) -> RoleLayout:
    """Compute the layout of a role.

    Args:
        tensor, data, pipeline: parallel sizes of one instance (>= 1).
        expert: expert parallelism on.
        workload: ``lws`` | ``statefulset`` | ``pod-per-rank``.
        gpus_per_node: GPUs of one node of the role's pool.
        replicas: instances.
        share_nodes: instances of one pod smaller than a node may share a node
            (:func:`generator.roles.shares_nodes`); false counts a node per such instance.

    Returns:
        The :class:`RoleLayout`; ``problem`` says why it cannot be deployed, if so.
    """
    model_gpus = tensor * pipeline
    gpus = model_gpus * data
    common: dict[str, Any] = dict(tensor=tensor, data=data, pipeline=pipeline, expert_parallel=expert,
                  gpus_per_instance=gpus, replicas=replicas)
    if workload == "pod-per-rank":
        pods = tuple(PodSlot(r, model_gpus, (r,)) for r in range(data))
        per_node = gpus_per_node // model_gpus
        problem = None
        if per_node == 0:
            problem = (f"a data-parallel rank needs tensor x pipeline = {model_gpus} GPUs, "
                       f"more than the {gpus_per_node} GPUs of a node")
            per_node = 1
        return RoleLayout(Spread.PER_RANK, pods=pods, gpus_per_pod=model_gpus, dp_local=1,
                          nodes_needed=_ceil_div(replicas * data, per_node), problem=problem,
                          pods_per_node=per_node, **common)
    n_pods = _ceil_div(gpus, gpus_per_node)
    if n_pods == 1:
        per_node = max(1, gpus_per_node // gpus) if share_nodes else 1
        return RoleLayout(Spread.SINGLE, pods=(PodSlot(0, gpus, tuple(range(data))),),
                          gpus_per_pod=gpus, dp_local=data,
                          nodes_needed=_ceil_div(replicas, per_node), pods_per_node=per_node,
                          **common)
    per_pod = gpus // n_pods
    if gpus % n_pods:
        pods = tuple(PodSlot(i, per_pod, ()) for i in range(n_pods))
        return RoleLayout(Spread.DATA, pods=pods, gpus_per_pod=per_pod, dp_local=0,
                          nodes_needed=replicas * n_pods, **common,
                          problem=(f"{gpus} GPUs do not split evenly over {n_pods} pods of at "
                                   f"most {gpus_per_node} GPUs"))
    if data % n_pods == 0 and (data // n_pods) * model_gpus == per_pod:
        dp_local = data // n_pods
        pods = tuple(PodSlot(i, per_pod, tuple(range(i * dp_local, (i + 1) * dp_local)))
                     for i in range(n_pods))
        return RoleLayout(Spread.DATA, pods=pods, gpus_per_pod=per_pod, dp_local=dp_local,
                          nodes_needed=replicas * n_pods, **common)
    if data == 1:
        pods = tuple(PodSlot(i, per_pod, (0,) if i == 0 else ()) for i in range(n_pods))
        return RoleLayout(Spread.MODEL, pods=pods, gpus_per_pod=per_pod, dp_local=1,
                          nodes_needed=replicas * n_pods, **common)
    pods = tuple(PodSlot(i, per_pod, ()) for i in range(n_pods))
    return RoleLayout(Spread.DATA, pods=pods, gpus_per_pod=per_pod, dp_local=0,
                      nodes_needed=replicas * n_pods, **common,
                      problem=(f"data = {data} ranks of tensor x pipeline = {model_gpus} GPUs "
                               f"cannot be placed as whole ranks on {n_pods} pods of "
                               f"{per_pod} GPUs"))


def min_redundant_experts(experts: int, ep: int) -> int:
    """The fewest redundant experts that make ``experts`` + redundant divide over ``ep`` ranks
    (``(ep - experts % ep) % ep``; vllm#30075 proposes it as vLLM's default)."""
    return (ep - experts % ep) % ep if ep > 1 else 0


def parallel_text(tensor: int, data: int, pipeline: int, expert: bool,
                  context: int | None = None, sep: str = " ") -> str:
    """A layout the way people write it: ``TP1 DP16 PP1 EP16`` (``CP`` when context > 1)."""
    parts = [f"TP{tensor}", f"DP{data}", f"PP{pipeline}"]
    if context and context > 1:
        parts.append(f"CP{context}")
    if expert:
        parts.append(f"EP{tensor * data}")
    return sep.join(parts)


def pool_nodes(uses: list[tuple[RoleLayout, int]], gpus_per_node: int) -> int:
    """Nodes of one pool the roles ``uses`` = [(layout, replicas)] occupy together: pods that
    take a node each (multi-node instances, pods of whole nodes, instances that may not share
    a node) take their nodes; the pods that pack (``pods_per_node`` > 1, whatever their role)
    share the other nodes, first fit by decreasing GPUs (a packing the scheduler can reach;
    rule POOL007 warns where its default scoring may not)."""
    whole = 0
    small: list[int] = []
    for lay, replicas in uses:
        if lay.pods_per_node > 1:
            small += [lay.gpus_per_pod] * (replicas * len(lay.pods))
        else:
            whole += lay.nodes_for(replicas)
    free: list[int] = []   # GPUs left on each node the packed pods use
    for gpus in sorted(small, reverse=True):
        k = next((k for k, left in enumerate(free) if left >= gpus), None)
        if k is None:
            free.append(gpus_per_node - gpus)
        else:
            free[k] -= gpus
    return whole + len(free)


def max_instances(tensor: int, data: int, pipeline: int, expert: bool, workload: str,
                  gpus_per_node: int, free_nodes: int, share_nodes: bool = False) -> int:
    """The most instances of this layout ``free_nodes`` nodes of the pool hold (0 when not
    one): :meth:`RoleLayout.most_instances` of :func:`compute_layout` (instances smaller than a
    node pack when ``share_nodes``, per-rank pods always; multi-node instances take whole
    nodes). An autoscaler's ceiling for a role, with the other roles' nodes taken out."""
    return compute_layout(tensor, data, pipeline, expert, workload, gpus_per_node, 1,
                          share_nodes).most_instances(free_nodes)
