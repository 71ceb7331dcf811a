"""Rules about the parallel layout: ranks on pods, heads, pipeline depth, context parallelism,
group restarts, and the engines' layout limits."""

from __future__ import annotations

from collections import defaultdict

from ..layout import Spread, pool_nodes
from ..roles import apart_reason
from .registry import Context, E, Hit, W, is_vllm, role_path, rule


@rule("ENG001", E, "the workload shape is one the engine supports",
      "SGLang has no per-rank external load-balancing mode (one launch_server per instance, "
      "SGLang 0.5.23 python/sglang/srt/server_args.py); vLLM --data-parallel-rank", engines=("sglang",))
def _engine(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.workload == "pod-per-rank":
            yield Hit(role_path(i, "workload"),
                      f"role {role.name!r}: SGLang cannot run one pod per data-parallel rank",
                      "use workload: lws or statefulset")


@rule("LAY001", E, "an instance's ranks can be placed on its pods",
      "docs/spec.md §2 (Pods); vLLM DP places whole DP ranks per node "
      "(--data-parallel-size-local, vLLM 0.33.0 vllm/config/parallel.py)")
def _layout_possible(ctx: Context):
    for i, r in ctx.role_items():
        if r.layout.problem:
            pool = ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool]
            yield Hit(role_path(i, "parallel"), r.layout.problem,
                      f"make tensor x pipeline divide gpusPerNode ({pool.gpusPerNode}) and data a "
                      "multiple of the pods" + (", or use workload: pod-per-rank"
                                                if is_vllm(ctx) else ""))


_QKV_SOURCE = ("vLLM 0.33.0 vllm/model_executor/layers/linear.py:1066-1070; SGLang 0.5.23 "
               "python/sglang/srt/layers/linear.py:1140-1144 (QKVParallelLinear)")


@rule("LAY002", E, "tensor parallel size divides the attention heads",
      "vLLM 0.33.0 vllm/config/model.py verify_with_parallel_config; vllm-project/vllm#11797, "
      "vllm-project/vllm#2652")
def _tp_heads(ctx: Context):
    for i, r in ctx.role_items():
        heads = r.arch.num_attention_heads
        tp = r.layout.tensor
        if heads % tp:
            ok = [t for t in (1, 2, 4, 8, 16, 32, 64) if heads % t == 0]
            yield Hit(role_path(i, "parallel", "tensor"),
                      f"tensor {tp} does not divide the model's {heads} attention heads",
                      f"valid tensor sizes: {', '.join(map(str, ok))}")


@rule("LAY014", E, "tensor parallel size and the KV heads divide one another", _QKV_SOURCE)
def _tp_kv_heads(ctx: Context):
    """QKVParallelLinear takes divide(tp, kv_heads) when TP exceeds the KV heads, else
    divide(kv_heads, tp); MLA caches one latent, and LAY002 reports a size that misses the
    attention heads."""
    for i, r in ctx.role_items():
        kv = r.arch.attention.kv_heads
        if r.arch.attention.kind != "gqa" or r.arch.num_attention_heads % r.layout.tensor:
            continue
        tp = max(1, r.layout.tensor // (r.parallel.context or 1)) if ctx.engine == "sglang" \
            else r.layout.tensor
        if kv % tp and tp % kv:
            ok = [t for t in (1, 2, 4, 8, 16, 32, 64)
                  if r.arch.num_attention_heads % t == 0 and (kv % t == 0 or t % kv == 0)]
            yield Hit(role_path(i, "parallel", "tensor"),
                      f"attention tensor size {tp} and the model's {kv} KV heads do not divide "
                      "one another: the engine can neither split the KV heads over the ranks nor "
                      "replicate them evenly, and stops loading the model",
                      f"valid tensor sizes: {', '.join(map(str, ok))}")


@rule("LAY003", E, "pipeline parallel size is at most the number of layers",
      "vLLM 0.33.0 vllm/distributed/utils.py get_pp_indices (each stage needs >= 1 layer)")
def _pp_layers(ctx: Context):
    for i, r in ctx.role_items():
        if r.layout.pipeline > r.arch.num_layers:
            yield Hit(role_path(i, "parallel", "pipeline"),
                      f"pipeline {r.layout.pipeline} exceeds the model's {r.arch.num_layers} layers",
                      f"use pipeline <= {r.arch.num_layers}")


@rule("LAY004", E, "context parallelism is rendered for SGLang only",
      "moegen renders SGLang prefill CP (generator/engines/sglang.py); the vLLM -dcp/-pcp "
      "mapping is not implemented", engines=("vllm",))
def _context(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.parallel.context not in (None, 1):
            yield Hit(role_path(i, "parallel", "context"),
                      f"context {role.parallel.context} is not supported with engine vllm in this "
                      "build", "remove parallel.context, or use engine sglang")


@rule("LAY006", E, "context parallelism divides the tensor ranks",
      "docs/spec.md §2 (context reuses the tensor ranks); SGLang 0.5.23 "
      "python/sglang/srt/arg_groups/parallel_hook.py (tp_size % attn_cp_size)")
def _context_divides(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        c = role.parallel.context
        if c and c > 1 and role.parallel.tensor % c:
            yield Hit(role_path(i, "parallel", "context"),
                      f"context {c} does not divide tensor {role.parallel.tensor}",
                      f"use a context size that divides {role.parallel.tensor}")


@rule("LAY007", E, "the SGLang release has prefill context parallelism",
      "SGLang --enable-prefill-cp/--cp-strategy first appear in 0.5.14 (per-release option "
      "dumps: generator/engines/data/engine-options.json); before, --attn-cp-size binds no CP "
      "strategy (SGLang 0.5.23 python/sglang/srt/layers/cp/base.py)",
      engines=("sglang",))
def _context_version(ctx: Context):
    if ctx.dialect is None:
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        c = role.parallel.context
        if c and c > 1 and not ctx.dialect.has("--enable-prefill-cp"):
            yield Hit(role_path(i, "parallel", "context"),
                      f"SGLang {ctx.spec.spec.engine.version} has no --enable-prefill-cp: "
                      "--attn-cp-size alone splits no tokens",
                      "use SGLang >= 0.5.14")


@rule("LAY011", E, "SGLang context parallelism runs on prefill roles",
      "SGLang --enable-prefill-cp parallelises the prefill phase only (SGLang 0.5.23 "
      "python/sglang/srt/arg_groups/deepseek_v4_hook.py: CP=1 on decode)", engines=("sglang",))
def _context_prefill(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        c = role.parallel.context
        if c and c > 1 and role.mode == "decode":
            yield Hit(role_path(i, "parallel", "context"),
                      f"decode role {role.name!r} sets context {c}: SGLang's context parallelism "
                      "splits prefill tokens; on decode it only replicates attention",
                      "remove parallel.context from decode roles")


#: SGLang 0.5.23 DeepSeek-V4 prefill CP limits (arg_groups/deepseek_v4_hook.py
#: ``validate_deepseek_v4_cp``): one attention DP group, at most 8 GPUs per TP group; DeepSeek-V3.2's
#: DSA CP (arg_groups/model_overrides/deepseek_v2.py:123-125) asserts tp_size <= 8 and sets the
#: attention DP size itself.
SGLANG_V4_CP_MAX_TP = 8


@rule("LAY012", E, "SGLang DeepSeek-V3.2/V4 context parallelism stays within one node",
      "SGLang 0.5.23 python/sglang/srt/arg_groups/deepseek_v4_hook.py validate_deepseek_v4_cp: "
      "attn_dp_size == 1 and tp_size <= 8 (\"Cross-machine CP has precision issues\"); "
      "python/sglang/srt/arg_groups/model_overrides/deepseek_v2.py:123-125 (DSA context "
      "parallelism, DeepSeek-V3.2 and GLM-5 by is_deepseek_dsa: tp_size <= 8)", engines=("sglang",))
def _context_v4(ctx: Context):
    for i, r in ctx.role_items():
        c = r.parallel.context
        if not (c and c > 1) or not (r.arch.compressed_attention or r.arch.sparse_attention):
            continue
        if r.arch.sparse_attention:      # DSA: DeepSeek-V3.2, GLM-5 (SGLang's is_deepseek_dsa)
            if r.layout.tensor > SGLANG_V4_CP_MAX_TP:
                yield Hit(role_path(i, "parallel", "tensor"),
                          f"role {r.name!r}: {r.arch.label} context parallelism needs tensor <= "
                          f"{SGLANG_V4_CP_MAX_TP} (one node; SGLang asserts \"Cross-machine CP "
                          f"has precision issues\"), got tensor {r.layout.tensor}",
                          "use tensor 8 (add pipeline stages for more GPUs)")
            continue
        group = r.layout.tensor * r.layout.data
        if r.layout.data > 1 or group > SGLANG_V4_CP_MAX_TP:
            yield Hit(role_path(i, "parallel"),
                      f"role {r.name!r}: DeepSeek-V4 context parallelism needs data 1 and tensor "
                      f"x data <= {SGLANG_V4_CP_MAX_TP}, got tensor {r.layout.tensor} x data "
                      f"{r.layout.data}",
                      "use tensor 8, data 1 (add pipeline stages for more GPUs)")


@rule("LAY005", E, "multi-node tensor/pipeline parallel needs vLLM >= 0.11.1",
      "vLLM 0.11.1 added --nnodes/--node-rank/--master-addr (vllm/config/parallel.py)",
      engines=("vllm",))
def _multinode(ctx: Context):
    if ctx.dialect is None:
        return
    for i, r in ctx.role_items():
        if r.parallel.executor == "ray":
            continue   # the Ray cluster spans the pods at every release (LAY015)
        if r.layout.spread is Spread.MODEL and not ctx.dialect.multinode:
            yield Hit(role_path(i, "parallel"),
                      f"tensor x pipeline = {r.layout.tensor * r.layout.pipeline} GPUs spans "
                      f"{len(r.layout.pods)} pods, which needs --nnodes (vLLM >= 0.11.1); "
                      f"engine.version is {ctx.spec.spec.engine.version}",
                      "use vLLM >= 0.11.1, or fit tensor x pipeline in one node")


@rule("LAY015", E, "parallel.executor is vLLM's; Ray runs one engine per instance",
      "vLLM 0.33.0 vllm/config/parallel.py (distributed_executor_backend \"ray\": the engine "
      "spans the Ray cluster's GPUs with one placement group, vllm/v1/executor/ray_utils.py "
      "initialize_ray_cluster; nnodes > 1 only with mp); SGLang 0.5.23 "
      "python/sglang/srt/ray/engine.py (SGLang's own --use-ray, which moegen does not render)")
def _ray_executor(ctx: Context):
    for i, r in ctx.role_items():
        executor = r.parallel.executor
        if executor is None:
            continue
        if ctx.spec.spec.engine.name != "vllm":
            yield Hit(role_path(i, "parallel", "executor"),
                      f"role {r.name!r}: parallel.executor {executor} is vLLM's "
                      "--distributed-executor-backend; moegen renders SGLang's multi-node "
                      "roles with --nnodes/--dist-init-addr and does not render its --use-ray",
                      "remove parallel.executor (SGLang spans pods with --nnodes)")
        elif executor == "ray" and r.layout.data > 1:
            yield Hit(role_path(i, "parallel", "executor"),
                      f"role {r.name!r}: parallel.executor ray with data = {r.layout.data}: "
                      "moegen renders the Ray executor for one engine per instance (one "
                      "placement group of tensor x pipeline GPUs); data-parallel ranks use "
                      "vLLM's own rank flags",
                      "use data: 1 with the Ray executor, or remove parallel.executor")


#: The first vLLM release whose wheel does not depend on Ray (``Requires-Dist`` of 0.17.0 has
#: ``ray[cgraph]>=2.48.0``, 0.18.0 has no ``ray``: vllm-project/vllm#36170, read on PyPI with
#: ``pip install --dry-run --report``); an image built from the wheel alone has no ``ray``
#: command (ai-dynamo/dynamo#8515: "ray: not found").
RAY_OPTIONAL = (0, 18, 0)


#: The vLLM project's own image repository (Docker Hub; with or without the registry host).
STOCK_VLLM_IMAGES = frozenset({"vllm/vllm-openai", "docker.io/vllm/vllm-openai",
                               "index.docker.io/vllm/vllm-openai"})


def _ray_roles(ctx: Context):
    """(index, role) of the Ray-executor roles, at a release whose wheel does not install Ray."""
    from ..facts.versions import parse_version
    if ctx.dialect is None or parse_version(ctx.dialect.version) < RAY_OPTIONAL:
        return []
    return [(i, r) for i, r in ctx.role_items() if r.parallel.executor == "ray"]


def _image_repository(image: str) -> str:
    """``image`` without its digest and tag (``registry/path:tag@sha256:...`` -> ``registry/path``)."""
    name = image.split("@", 1)[0]
    head, _, tail = name.rpartition(":")
    return head if head and "/" not in tail else name


@rule("LAY016", E, "the stock vLLM image runs Ray",
      "vllm-project/production-stack#1056 (vllm/vllm-openai removed Ray from its image in "
      "v0.18.0; v0.17.1 is the last tag with it); vllm-project/vllm#36170 (vLLM 0.18.0 drops its "
      "ray[cgraph] dependency); ai-dynamo/dynamo#8515 (\"ray: not found\")",
      engines=("vllm",))
def _ray_stock_image(ctx: Context):
    if _image_repository(ctx.spec.spec.engine.image) not in STOCK_VLLM_IMAGES:
        return
    for i, r in _ray_roles(ctx):
        yield Hit(role_path(i, "parallel", "executor"),
                  f"role {r.name!r}: parallel.executor ray needs Ray (`ray start` on every "
                  f"pod, `import ray` in the engine), but {ctx.spec.spec.engine.image} (vLLM "
                  f"{ctx.dialect.version}) has none: vllm/vllm-openai does not install it from "
                  "v0.18.0 on, so the pod exits at start and restarts in a loop",
                  "build an image FROM it that installs ray[cgraph] and set engine.image, or "
                  "use parallel.executor mp (--nnodes)")


@rule("LAY017", W, "the image runs Ray",
      "vllm-project/vllm#36170 (vLLM 0.18.0 drops its ray[cgraph] dependency); "
      "ai-dynamo/dynamo#8515 (a vLLM image without Ray: ray start fails with \"ray: not found\")",
      engines=("vllm",))
def _ray_installed(ctx: Context):
    if _image_repository(ctx.spec.spec.engine.image) in STOCK_VLLM_IMAGES:
        return                                                  # LAY016
    for i, r in _ray_roles(ctx):
        yield Hit(role_path(i, "parallel", "executor"),
                  f"role {r.name!r}: parallel.executor ray needs Ray in the image; vLLM "
                  f"{ctx.dialect.version} does not depend on it (>= 0.18.0), so "
                  f"{ctx.spec.spec.engine.image} has it only if its build installs it",
                  "make sure the image installs ray[cgraph] (`ray --version` in it), or use "
                  "parallel.executor mp (--nnodes)")


#: The first vLLM release whose Ray executor leaves a worker's own ``VLLM_*`` variables as they
#: are: earlier, every ``VLLM_*`` variable of the driver is copied over the workers' unless
#: listed worker-specific (vllm-project/vllm#14099; the list: VLLM_HOST_IP, VLLM_HOST_PORT,
#: LOCAL_RANK, CUDA_VISIBLE_DEVICES, read in the 0.11.0 wheel's
#: vllm/executor/ray_distributed_executor.py), so a worker pod's VLLM_NIXL_SIDE_CHANNEL_HOST
#: becomes the leader's address and NIXL's listener cannot bind it (vllm-project/vllm#41806);
#: RayExecutorV2 keeps a value the worker has (vllm-project/vllm#36836), the default in the
#: 0.26.0 wheel (vllm/envs.py, read by a reviewer; the releases between were not read).
RAY_KEEPS_WORKER_ENV = (0, 26, 0)


@rule("LAY018", W, "a Ray worker pod keeps its own NIXL side-channel address",
      "vllm-project/vllm#14099 (the Ray executor copies the driver's VLLM_* variables to its "
      "workers), vllm-project/vllm#41806 (Ray workers binding the head node's address), "
      "vllm-project/vllm#36836 (RayExecutorV2 keeps a worker's own value)",
      engines=("vllm",))
def _ray_nixl_host(ctx: Context):
    from ..facts.versions import parse_version
    if ctx.dialect is None or parse_version(ctx.dialect.version) >= RAY_KEEPS_WORKER_ENV:
        return
    for i, r in ctx.role_items():
        kv = r.kv_transfer
        if r.parallel.executor == "ray" and r.layout.multi_pod and kv is not None \
                and kv.connector == "nixl":
            yield Hit(role_path(i, "parallel", "executor"),
                      f"role {r.name!r}: at vLLM {ctx.dialect.version} the Ray executor copies "
                      "the leader's VLLM_NIXL_SIDE_CHANNEL_HOST over each worker pod's own, so "
                      "NIXL's side channel on a worker pod binds an address it does not have "
                      "and the engine waits for it without a timeout",
                      "use vLLM >= 0.26.0 (RayExecutorV2 keeps the worker's value), or "
                      "parallel.executor mp (--nnodes)")


@rule("LAY019", W, "a Ray cluster's ports stay inside the pod network",
      "https://docs.ray.io/en/latest/ray-security/index.html (Ray's GCS, raylet and worker "
      "ports have no authentication: never expose them to untrusted networks); "
      "https://kubernetes.io/docs/concepts/services-networking/network-policies/"
      "#networkpolicy-and-hostnetwork-pods (a NetworkPolicy's behaviour for hostNetwork pods "
      "is undefined); templates/_launch.sh.j2 (ray start --node-ip-address = the pod IP)",
      engines=("vllm",))
def _ray_host_network(ctx: Context):
    if not ctx.spec.spec.network.hostNetwork:
        return
    for i, r in ctx.role_items():
        if r.parallel.executor == "ray" and r.layout.multi_pod:
            yield Hit(role_path(i, "parallel", "executor"),
                      f"role {r.name!r}: with network.hostNetwork the pod IP is the node's, so "
                      "the Ray head's GCS (port 6379) and every pod's raylet, object manager "
                      "and worker ports listen on the node's addresses with no authentication, "
                      "and the engines' NetworkPolicy does not reliably cover hostNetwork pods",
                      "parallel.executor mp (--nnodes: a TCPStore rendezvous on one port), or "
                      "restrict the nodes' network to the cluster with the host firewall")


@rule("LAY009", E, "an instance that spans pods restarts as a group",
      "vLLM's DP/TP handshake happens only at start (vLLM 0.33.0 vllm/v1/engine/utils.py; a "
      "headless engine waits HANDSHAKE_TIMEOUT_MINS = 5, vllm/v1/engine/core.py) and a headless "
      "node whose leader died never exits (vllm-project/vllm#32136); LWS "
      "RecreateGroupOnPodRestart restarts the whole group")
def _group_restart(ctx: Context):
    for i, r in ctx.role_items():
        role = ctx.spec.spec.roles[i]
        if role.workload == "statefulset" and r.layout.multi_pod:
            yield Hit(role_path(i, "workload"),
                      f"role {r.name!r} spans {len(r.layout.pods)} pods per instance, but a "
                      "StatefulSet restarts one pod at a time: a restarted pod cannot rejoin "
                      "its running group, which then hangs or crash-loops",
                      "use workload: lws (the group restarts together), or a layout that fits "
                      "one node per instance")


def _ranks_split_per_node(ctx: Context, i: int, r) -> int:
    """Expert-parallel ranks of one node that pod-per-rank puts in separate pods (0 if none)."""
    role = ctx.spec.spec.roles[i]
    per_node = ctx.spec.spec.nodePools[role.nodePool].gpusPerNode // max(1, r.layout.gpus_per_pod)
    split = role.workload == "pod-per-rank" and r.layout.expert_parallel and per_node > 1
    return per_node if split else 0


@rule("LAY010", E, "DeepEP's NVLink peers share one pod",
      "DeepEP opens its NVLink buffer on the other ranks of its 8-GPU group with "
      "cudaIpcOpenMemHandle (deepseek-ai/DeepEP@v1.2.1:csrc/deep_ep.cpp Buffer::sync); vLLM "
      "allocates that buffer in low-latency mode too (vLLM 0.33.0 "
      "vllm/distributed/device_communicators/all2all.py, VLLM_DEEPEP_BUFFER_SIZE_MB); separate "
      "pods cannot open each other's handles",
      engines=("vllm",))
def _per_rank_deepep(ctx: Context):
    for i, r in ctx.role_items():
        per_node = _ranks_split_per_node(ctx, i, r)
        if per_node and r.moe and r.moe.all2all and r.moe.all2all.startswith("deepep"):
            yield Hit(role_path(i, "workload"),
                      f"role {r.name!r} puts up to {per_node} ranks of a node in separate pods, "
                      f"but {r.moe.all2all} maps its NVLink peers' buffers by CUDA IPC: every "
                      "engine fails at start", "use workload: lws (one pod per node)")


@rule("LAY013", W, "DP ranks on one node share NVLink only inside one pod",
      "CUDA IPC / NVLink peer access needs the processes in one container (separate pods have "
      "separate IPC namespaces); NCCL then falls back to the network between them "
      "(NCCL docs: NCCL_P2P_LEVEL, https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/"
      "env.html)", engines=("vllm",))
def _per_rank_nvlink(ctx: Context):
    for i, r in ctx.role_items():
        per_node = _ranks_split_per_node(ctx, i, r)
        if per_node and not (r.moe and r.moe.all2all and r.moe.all2all.startswith("deepep")):
            yield Hit(role_path(i, "workload"),
                      f"role {r.name!r} puts up to {per_node} expert-parallel ranks of a node in "
                      "separate pods: their all-to-all cannot use NVLink between them",
                      "use workload: lws (one pod per node, ranks share NVLink)")


def count_text(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one: "1 GPU", "7 instances"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@rule("LAY008", W, "instances use whole nodes",
      "docs/spec.md §2 (Pods: instances smaller than a node pack onto its GPUs unless they may "
      "not share a node; GPUs no instance takes stay idle)")
def _idle_gpus(ctx: Context):
    packed: dict[str, list] = defaultdict(list)   # pool -> the roles whose pods pack on it
    for i, r in ctx.role_items():
        role = ctx.spec.spec.roles[i]
        pool = ctx.spec.spec.nodePools[role.nodePool]
        lay = r.layout
        if role.workload == "pod-per-rank" or lay.problem or lay.gpus_per_pod >= pool.gpusPerNode:
            continue
        if lay.pods_per_node > 1:
            packed[role.nodePool].append((i, r))
            continue
        apart = apart_reason(ctx.spec.spec, role)
        why = (f" (its instances may not share a node: {apart})"
               if apart and 2 * lay.gpus_per_pod <= pool.gpusPerNode else "")
        yield Hit(role_path(i, "parallel"),
                  f"role {r.name!r} pods use {lay.gpus_per_pod} of each node's "
                  f"{pool.gpusPerNode} GPUs; {pool.gpusPerNode - lay.gpus_per_pod} stay "
                  f"idle{why}", "size tensor x data x pipeline to a multiple of gpusPerNode")
    for pool_name, items in packed.items():
        gpn = ctx.spec.spec.nodePools[pool_name].gpusPerNode
        nodes = pool_nodes([(r.layout, r.layout.replicas) for _, r in items], gpn)
        idle = nodes * gpn - sum(r.layout.replicas * r.layout.gpus_per_instance for _, r in items)
        if idle <= 0:
            continue
        i, first = items[0]
        what = ", ".join(f"{r.name} {count_text(r.layout.replicas, 'instance')} of "
                         f"{count_text(r.layout.gpus_per_pod, 'GPU')}" for _, r in items)
        several = len(items) > 1 or first.layout.replicas > 1
        # Several instances: their count leaves the GPUs; one: its size does.
        yield Hit(role_path(i, "replicas" if several else "parallel"),
                  f"pool {pool_name!r}: {what} pack onto {count_text(nodes, 'node')} of "
                  f"{gpn} GPUs: {count_text(idle, 'GPU')} idle",
                  "size the instances (replicas x tensor x data x pipeline, over the roles on "
                  "the pool) to fill whole nodes")


@rule("SPD005", E, "SGLang runs pipeline parallelism with speculative decoding only on prefill",
      "SGLang 0.5.23 python/sglang/srt/arg_groups/validation_hook.py (0.5.21+): \"PP + "
      "speculative decoding (MTP) is only supported on prefill nodes\"; SGLang 0.5.1-0.5.20 "
      "refuse PP with any speculative algorithm (python/sglang/srt/server_args.py "
      "check_server_args)", engines=("sglang",))
def _sglang_pp_speculative(ctx: Context):
    if ctx.dialect is None:
        return
    for i, r in ctx.role_items():
        if r.layout.pipeline == 1 or r.speculative is None:
            continue
        if r.mode == "prefill" and ctx.dialect.pp_speculative_on_prefill:
            continue
        carried = f" (carried from decode role {r.speculative_from!r})" if r.speculative_from else ""
        where = ("SGLang >= 0.5.21 allows it on prefill roles only"
                 if ctx.dialect.pp_speculative_on_prefill
                 else f"SGLang {ctx.spec.spec.engine.version} refuses it on every role")
        yield Hit(role_path(i, "parallel", "pipeline"),
                  f"role {r.name!r} runs pipeline {r.layout.pipeline} with speculative "
                  f"decoding{carried}: {where}",
                  "drop the pipeline stages (more tensor/expert parallelism), or speculative "
                  "decoding" + ("" if ctx.dialect.pp_speculative_on_prefill or r.mode != "prefill"
                                else ", or use SGLang >= 0.5.21"))
