"""Where each rank of a vLLM instance gets its data-parallel and node flags: one load-balancing
mode per role (internal, model-parallel over nodes, external per rank, or the DP supervisor's
rank endpoints), with the leader's rendezvous port. vLLM 0.33.0 sources cited per function."""

from __future__ import annotations

from ..layout import Spread
from ..roles import RoleInput
from .base import LEADER_IP, POD_IP

#: ``--data-parallel-rpc-port``: vLLM's default, rendered explicitly so every pod agrees
#: (ParallelConfig.data_parallel_rpc_port = 29550, vllm/config/parallel.py).
DP_RPC_PORT = 29550

#: ``--master-port`` for multi-node TP/PP: vLLM's default 29501 (vllm/config/parallel.py).
MASTER_PORT = 29501

#: ``--data-parallel-supervisor-port``: vLLM's default (0.22.0+, the DP supervisor's aggregated
#: ``/health``: vllm/entrypoints/launchers/dp_supervisor.py), rendered explicitly.
DP_SUPERVISOR_PORT = 9256


#: The Ray head's port (GCS), as vLLM's LWS guide starts it: ``ray start --head --port=6379``
#: (vllm-project/vllm@v0.8.5:examples/online_serving/multi-node-serving.sh ray_port=6379; Ray's
#: default, https://docs.ray.io/en/latest/cluster/cli.html#ray-start).
RAY_PORT = 6379


def rank_args(role: RoleInput, notes: list[str]):
    """Per-pod rank/address arguments from the layout (one load-balancing mode per role).

    Returns (per-pod arguments, which pods serve the API, the leader's rendezvous port as
    ``(name, port)`` or None).

    * DATA spread, internal load balancing: the leader gets ``--data-parallel-size-local``
      and binds ``--data-parallel-address`` on its own IP; workers add ``--headless`` and
      ``--data-parallel-start-rank``. No start rank on the leader: a start rank on a
      non-headless node switches vLLM to hybrid LB, which rejects headless workers
      (vllm-project/vllm@v0.33.0:vllm/engine/arg_utils.py; gpustack/gpustack#6221).
    * MODEL spread (data == 1): ``--nnodes/--node-rank/--master-addr/--master-port``;
      workers are ``--headless``.
    * PER_RANK: external load balancing; every pod is one DP rank with its own API server,
      ``--data-parallel-rank`` = pod index, rank 0's IP as ``--data-parallel-address``.
    * MODEL spread over Ray (``parallel.executor: ray``): no rank flags; the leader's engine
      spans the Ray cluster whose head it starts (rendezvous: the head's port), the other pods
      are Ray nodes (:attr:`~generator.engines.base.EngineLaunch.ray_port`).
    """
    lay = role.layout
    pods = lay.pods
    if role.parallel.executor == "ray" and lay.spread is Spread.MODEL:
        notes.append(f"one TP x PP = {lay.tensor} x {lay.pipeline} group over {len(pods)} pods "
                     f"as a Ray cluster: the leader runs the Ray head and the engine, the other "
                     f"pods Ray nodes")
        return [[] for _ in pods], [True] + [False] * (len(pods) - 1), ("ray-gcs", RAY_PORT)
    if role.rank_ports > 1:
        return supervised_rank_args(role, notes)
    if lay.spread is Spread.SINGLE:
        return [[]], [True], None
    if lay.spread is Spread.DATA:
        shared = ["--data-parallel-size-local", str(lay.dp_local),
                  "--data-parallel-rpc-port", str(DP_RPC_PORT)]
        per_pod = [shared + ["--data-parallel-address", POD_IP]]
        for pod in pods[1:]:
            per_pod.append(["--headless", "--data-parallel-start-rank", str(pod.dp_start)]
                           + shared + ["--data-parallel-address", LEADER_IP])
        notes.append(f"internal load balancing: {lay.data} DP ranks, {lay.dp_local} per pod; "
                     "the leader serves the API, workers are headless")
        return per_pod, [True] + [False] * (len(pods) - 1), ("dp-rpc", DP_RPC_PORT)
    if lay.spread is Spread.MODEL:
        shared = ["--nnodes", str(len(pods)), "--master-port", str(MASTER_PORT)]
        per_pod = [shared + ["--node-rank", "0", "--master-addr", POD_IP]]
        for pod in pods[1:]:
            per_pod.append(["--headless"] + shared
                           + ["--node-rank", str(pod.index), "--master-addr", LEADER_IP])
        notes.append(f"one TP x PP = {lay.tensor} x {lay.pipeline} group over {len(pods)} pods; "
                     "the leader serves the API, workers are headless")
        return per_pod, [True] + [False] * (len(pods) - 1), ("master", MASTER_PORT)
    # PER_RANK
    per_pod = []
    for pod in pods:
        addr = POD_IP if pod.index == 0 else LEADER_IP
        per_pod.append(["--data-parallel-rank", str(pod.dp_start),
                        "--data-parallel-rpc-port", str(DP_RPC_PORT),
                        "--data-parallel-address", addr])
    notes.append(f"external load balancing: {lay.data} DP ranks, one pod and API server each")
    return per_pod, [True] * len(pods), ("dp-rpc", DP_RPC_PORT)

def supervised_rank_args(role: RoleInput, notes: list[str]):
    """Every pod runs vLLM's DP supervisor (``--data-parallel-multi-port-external-lb``,
    vllm/entrypoints/launchers/dp_supervisor.py, 0.22.0+): one external-LB API server per
    local rank on ``--port + i`` (rank = ``--data-parallel-start-rank + i``), aggregated
    ``/health`` on ``--data-parallel-supervisor-port``; the supervisor refuses
    ``--data-parallel-rank``, ``--headless``-style external/hybrid LB flags and an
    ``--api-server-count`` other than 1 (``validate_multi_port_external_lb_args``)."""
    lay = role.layout
    per_pod = []
    for pod in lay.pods:
        addr = POD_IP if pod.index == 0 else LEADER_IP
        per_pod.append(["--data-parallel-multi-port-external-lb",
                        "--data-parallel-size-local", str(lay.dp_local),
                        "--data-parallel-start-rank", str(pod.dp_start),
                        "--data-parallel-supervisor-port", str(DP_SUPERVISOR_PORT),
                        "--data-parallel-rpc-port", str(DP_RPC_PORT),
                        "--data-parallel-address", addr])
    notes.append(f"DP supervisor: {lay.data} DP ranks, {lay.dp_local} per pod, one API "
                 f"server each on ports {role.serving.port}-"
                 f"{role.serving.port + lay.dp_local - 1} (rank endpoints for the "
                 "inference gateway)")
    rendezvous = ("dp-rpc", DP_RPC_PORT) if len(lay.pods) > 1 or lay.data > 1 else None
    return per_pod, [True] * len(lay.pods), rendezvous
