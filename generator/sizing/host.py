"""Host resources of the engine pods: CPU, memory and ephemeral-storage requests, and the
startup budget (how long a cold start may take).

All memory figures are GiB (2^30 bytes); CPU is cores; times are seconds. Facts and their
sources: docs/platform-facts.md; peers' figures per 8-GPU pod (32-128 CPUs, 256-512 Gi):
docs/design.md §7.

Per pod, from its processes (``Dialect.processes``: GPU processes, API servers, others)::

    cpu    = 4 x GPU processes + 2 x API servers + 1 x other processes + 2
    memory = 8 x GPU processes + 3 x API servers + 2 x other processes + 2   (process memory)
           + /dev/shm                                                    (charged to the pod)
           + 5 x GPU processes                                           (weight staging)
    ephemeral-storage = compile cache (when it is an emptyDir) + 20

* 4 cores per GPU process: its Python thread drives the GPU continuously, next to NCCL's proxy
  thread, NVSHMEM/DeepEP progress, NIXL's UCX progress thread (a busy poll: NIXL's Python agent
  sets ``pthrDelay = 0``, ai-dynamo/nixl@v1.4.0 src/api/python/_api.py:230, the thread's poll
  timeout in src/plugins/ucx/ucx_backend.cpp:331: one core while the engine lives) and the weight
  loader's threads; 2 per API server (HTTP,
  tokenization, detokenization); 1 per engine core without a GPU, DP coordinator, detokenizer
  or DP controller; 2 for the launcher, probes and exec sessions.
* 8 GiB per GPU process: CUDA context, PyTorch and CUDA libraries, NCCL/NVSHMEM host buffers;
  3 GiB per API server (tokenizer, request state); 2 GiB per other process; 2 GiB for the rest.
* ``/dev/shm`` is a memory-backed emptyDir: Kubernetes charges it to the pod's memory.
* Weight staging: each GPU process reads the checkpoint one safetensors shard at a time through
  mmap (DeepSeek-V3/R1 ship 163 shards of about 4.3 GB); 5 GiB per GPU process holds the shard
  being copied to the GPU. The rest of the checkpoint passes through the page cache, which the
  kernel reclaims at the pod's limit instead of killing it, so it is not requested (it would
  ask 640 GiB for a TP8 DeepSeek-V3 pod, and the page cache does not outlive a re-created group).
* 20 GiB of ephemeral storage: logs, Python caches, temporary files of the JIT compilers: the
  /tmp emptyDir of the read-only root filesystem (its sizeLimit; generator/security.py).

The process memory and /dev/shm cannot be reclaimed: a limit below them is an OOM kill (rule
POD002); below the staging too, loading thrashes (POD003).

Startup budget (cold start, empty compile cache)::

    budget = the pod's share of the checkpoint / loadGBps + warm-up 1200 s + rendezvous 300 s
                                                       (1200 s for a Ray cluster over pods)

rounded up to the startup probe period. A pod of ``g`` GPUs of an instance of ``G`` GPUs
(tensor x data x pipeline) reads ``min(1, g / (tensor x pipeline))`` of the non-expert tensors
(every DP rank holds them whole) and ``g / G`` of the routed experts. The warm-up covers JIT
compilation (DeepGEMM, whose SGLang precompile builds M = 1..16384 at start; Triton, FlashInfer,
torch.compile) and CUDA graph capture: sglang#29170 and dynamo#10695 report 10-30 minute
recompiles. The rendezvous covers the pods of an instance finding each other and the DP
handshake.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..pods import PodSettings
from ..roles import RoleInput
from .params import inventory
from .weights import checkpoint_bytes

GIB = 2**30


@dataclass(frozen=True)
class PodProcesses:
    """The engine processes of one pod (host CPU and memory are sized from them).

    Attributes:
        gpu: processes that drive a GPU (vLLM workers; SGLang schedulers): one per GPU.
        api: HTTP API / tokenizer processes (vLLM API servers; SGLang's main process and its
            tokenizer workers).
        other: processes without a GPU or HTTP server (vLLM engine cores of TP > 1 ranks and the
            DP coordinator; SGLang's detokenizer and data-parallel controller).
    """

    gpu: int
    api: int
    other: int

CPU_PER_GPU, CPU_PER_API, CPU_PER_OTHER, CPU_BASE = 4, 2, 1, 2
MEM_PER_GPU_GIB, MEM_PER_API_GIB, MEM_PER_OTHER_GIB, MEM_BASE_GIB = 8, 3, 2, 2
STAGING_PER_GPU_GIB = 5
EPHEMERAL_BASE_GIB = 20
#: Default read bandwidth of the weights volume, GB/s (10^9 B/s) per pod: a network file system
#: or network block PVC; local NVMe reads 3-7 (set ``model.loadGBps``).
LOAD_GBPS_DEFAULT = 1.0
WARMUP_S = 1200
RENDEZVOUS_S = 300
#: A Ray leader (``parallel.executor: ray``) starts its engine only once every pod's Ray node is
#: alive, and waits for them as long as a worker waits for the leader (20 min:
#: manifests/pods.py RESOLVE_TRIES x RESOLVE_SLEEP_S), so a worker whose node pulls the image
#: slower than the leader's does not restart the group; its rendezvous is that wait.
RAY_RENDEZVOUS_S = 1200


@dataclass(frozen=True)
class PodResources:
    """Requests of one pod (limits equal them unless the spec says otherwise).

    Attributes:
        cpu: cores; memory_gib, ephemeral_gib: GiB (whole).
        processes: what the pod runs.
        process_gib, shm_gib, staging_gib: the memory terms, GiB.
        checkpoint_gib: the pod's share of the checkpoint, GiB (what it reads at start).
    """

    cpu: int
    memory_gib: int
    ephemeral_gib: int
    processes: PodProcesses
    process_gib: float
    shm_gib: int
    staging_gib: float
    checkpoint_gib: float

    @property
    def unreclaimable_gib(self) -> float:
        """Memory the kernel cannot take back (processes + /dev/shm), GiB."""
        return self.process_gib + self.shm_gib


@dataclass(frozen=True)
class HostPlan:
    """Host resources and startup budget of one role.

    Attributes:
        pods: per pod of an instance (leader first).
        load_gbps: read bandwidth, GB/s; load_s: reading the largest pod share, s.
        startup_s: the cold-start budget, s (multiple of the startup probe period).
        load_basis: ``stated`` (``model.loadGBps``) or ``assumed`` (:data:`LOAD_GBPS_DEFAULT`).
        rendezvous_s: its rendezvous term, s (RENDEZVOUS_S; RAY_RENDEZVOUS_S on Ray).
    """

    pods: tuple[PodResources, ...]
    load_gbps: float
    load_s: float
    startup_s: int
    load_basis: str = "stated"
    rendezvous_s: int = RENDEZVOUS_S


def api_servers_from(args: list[str]) -> int | None:
    """``--api-server-count`` / ``-asc`` (vLLM) or ``--tokenizer-worker-num`` (SGLang) in
    engineArgs, or None."""
    for j, a in enumerate(args):
        name, _, value = a.partition("=")
        if name in ("--api-server-count", "-asc", "--tokenizer-worker-num"):
            text = value or (args[j + 1] if j + 1 < len(args) else "")
            if text.isdigit():
                return int(text)
    return None


def host_plan(role: RoleInput, procs: tuple[PodProcesses, ...], pod: PodSettings,
              load_gbps: float | None, probe_period_s: int) -> HostPlan:
    """Resources of every pod of ``role`` and its startup budget (see the module docstring).
    ``procs``: the engine processes of each pod of one instance (leader first), from the
    engine dialect's ``processes()``.

    Raises:
        KeyError: the model's config.json lacks a field the weight inventory needs.
    """
    inv = inventory(role.arch)
    other_b, expert_b = checkpoint_bytes(inv, role.arch, role.model.weights,
                                         mtp=role.speculative is not None)
    lay = role.layout
    cache_gib = pod.cache.sizeGiB if pod.cache.volume is None else 0
    pods = []
    for slot, p in zip(lay.pods, procs):
        share_other = min(1.0, slot.gpus / (lay.tensor * lay.pipeline))
        share_expert = slot.gpus / lay.gpus_per_instance
        share = (other_b * share_other + expert_b * share_expert) / GIB
        process = (MEM_PER_GPU_GIB * p.gpu + MEM_PER_API_GIB * p.api
                   + MEM_PER_OTHER_GIB * p.other + MEM_BASE_GIB)
        staging = STAGING_PER_GPU_GIB * p.gpu
        pods.append(PodResources(
            cpu=CPU_PER_GPU * p.gpu + CPU_PER_API * p.api + CPU_PER_OTHER * p.other + CPU_BASE,
            memory_gib=math.ceil(process + pod.shm_gib + staging),
            ephemeral_gib=cache_gib + EPHEMERAL_BASE_GIB,
            processes=p, process_gib=float(process), shm_gib=pod.shm_gib,
            staging_gib=float(staging), checkpoint_gib=round(share, 1)))
    gbps = load_gbps or LOAD_GBPS_DEFAULT
    load_s = max(p.checkpoint_gib for p in pods) * GIB / (gbps * 1e9)
    ray = role.parallel.executor == "ray" and len(lay.pods) > 1
    rendezvous = RAY_RENDEZVOUS_S if ray else RENDEZVOUS_S
    total = load_s + WARMUP_S + rendezvous
    startup = math.ceil(total / probe_period_s) * probe_period_s
    return HostPlan(tuple(pods), gbps, round(load_s), startup,
                    "stated" if load_gbps else "assumed", rendezvous)
