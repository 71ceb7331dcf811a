"""Candidate enumeration of ``gen plan``: the layouts a role may take on a pool (filling whole
nodes: TP over part of a node with its instances packed, one or two nodes, TP x PP2, DP-EP
over any number of nodes), the expert all-to-all
backend the planner deploys on a GPU, and a candidate role as the sizing and the performance
model take it (:class:`~generator.roles.RoleInput`)."""

from __future__ import annotations

from ..catalog import GPUS
from ..facts import deepep
from ..facts.versions import parse_version
from ..layout import compute_layout
from ..perf.candidate import LayoutChoice
from ..roles import RoleInput
from ..spec import models as sm


def _layouts(gpn: int, gpus: int, heads: int, mode: str,
             experts: int = 1 << 30) -> list[LayoutChoice]:
    """Layout options that fill whole nodes: TP over part of a node (1, 2, 4 ... GPUs that
    divide it: its instances pack onto the node, :func:`instances_on`), one or two nodes,
    TP x PP2, and DP-EP over any whole number of nodes (redundant experts make the experts
    divide, as in the LMSYS EP72 and DeepSeek EP144 deployments); an expert-parallel group
    never has more GPUs than routed experts. Prefill roles take the same options (EP prefill
    over several nodes). A model too large for a part of a node is rejected by its sizing."""
    out = []
    tp = 1
    while tp < gpn:
        if gpn % tp == 0 and heads % tp == 0 and tp <= gpus:
            out.append(LayoutChoice(tp, 1, 1, False))
        tp *= 2
    for tp in (gpn, 2 * gpn):
        if heads % tp == 0 and tp <= gpus:
            out.append(LayoutChoice(tp, 1, 1, False))
    if 2 * gpn <= gpus and heads % gpn == 0:
        out.append(LayoutChoice(gpn, 1, 2, False))
    d = gpn
    normal = set(deepep.normal_rank_counts(max(gpus, 1)))
    while d <= gpus and d <= experts:
        # Prefill runs DeepEP's normal kernels, compiled for some rank counts only (A2A009).
        if mode != "prefill" or d in normal:
            out.append(LayoutChoice(1, d, 1, True))
        d += gpn
    return out


def instances_on(lay: LayoutChoice, gpn: int, nodes: int, share: bool) -> int:
    """Instances of ``lay`` ``nodes`` nodes of ``gpn`` GPUs hold: gpn // GPUs a node for an
    instance smaller than a node whose pods may share one (``share``: not hostNetwork,
    generator/roles.py shares_nodes), else one per ceil(GPUs / gpn) nodes."""
    if lay.gpus < gpn:
        return nodes * (gpn // lay.gpus if share else 1)
    return nodes // max(1, lay.gpus // gpn)


def all2all_for(gpu_id: str, mode: str, ep: int, gpus_per_node: int,
                choices: list[str], engine: str = "", weights: str = "",
                hidden_size: int = 0, version: str = "") -> str:
    """The expert all-to-all backend the planner deploys on ``gpu_id`` (engine-neutral name,
    one of the release's ``choices``), by what the GPU can run (rules GPU001-GPU003):
    DeepEP low-latency for decode, normal for prefill, on NVLink-connected NVIDIA Hopper and
    newer; on AMD MoRI-EP (``mori_low_latency``/``mori_high_throughput``, or ``mori`` in vLLM
    0.15-0.22); on Ampere DeepEP normal within one node only; elsewhere (PCIe cards, releases
    without the backend) the engine's all-gather / reduce-scatter. SGLang (``engine``) with
    ``nvfp4``/``w4a16`` checkpoints (``weights``) gets all-gather / reduce-scatter everywhere:
    its DeepEP/MoRI MoE layer has no kernel for them (rule QNT005; the one exception needs an
    engine argument the planner does not write). A model whose ``hidden_size`` DeepEP is not
    compiled for gets no DeepEP backend on SGLang (:data:`generator.facts.deepep.HIDDEN_SIZES`,
    rule A2A003: gpt-oss's 2,880); vLLM at ``version`` pads it where it can
    (:func:`generator.facts.deepep.vllm_runs_hidden`)."""
    g = GPUS[gpu_id]
    decode = mode != "prefill"
    if engine == "sglang" and weights in ("nvfp4", "nvfp4-v2", "w4a16"):
        want = []
    elif g.vendor == "amd":
        want = ["mori_low_latency" if decode else "mori_high_throughput", "mori"]
    elif not g.nvlink:
        want = []
    elif g.generation in ("ampere", "ada"):
        want = ["deepep_high_throughput"] if ep <= gpus_per_node else []
    else:
        want = ["deepep_low_latency" if decode else "deepep_high_throughput"]
    if hidden_size and engine == "vllm":
        release = parse_version(version) if version else ()
        want = [w for w in want if not w.startswith("deepep")
                or deepep.vllm_runs_hidden(hidden_size, w, release)]
    elif hidden_size and hidden_size not in deepep.HIDDEN_SIZES:
        want = [w for w in want if not w.startswith("deepep")]
    return next((w for w in want if w in choices), "allgather_reducescatter")


def _role_input(name, mode, model, arch, serving, layout_args: LayoutChoice, pool, replicas,
                spec_tokens, kv_transfer, concurrency, redundant, choices=None, engine="",
                share=True):
    t, d, p, ep = layout_args
    lay = compute_layout(t, d, p, ep, "lws", pool.gpusPerNode, replicas, share_nodes=share)
    moe = None
    if ep and arch.routed_experts:
        all2all = all2all_for(pool.gpu, mode, t * d, pool.gpusPerNode,
                              choices if choices is not None else
                              ["deepep_low_latency", "deepep_high_throughput"],
                              engine=engine, weights=model.weights,
                              hidden_size=arch.hidden_size)
        moe = sm.Moe(all2all=all2all,
                     eplb=sm.Eplb(enabled=True, redundantExperts=redundant) if redundant else None)
    # A prefill role runs the decode role's MTP config (generator/roles.py
    # carried_speculative): it loads the MTP module, which its sizing counts.
    spec = sm.Speculative(method="mtp", numSpeculativeTokens=spec_tokens) \
        if spec_tokens and arch.mtp_layers else None
    return RoleInput(name=name, mode=mode, model=model, arch=arch, serving=serving,
                     parallel=sm.Parallel(tensor=t, data=d, pipeline=p, expert=ep), moe=moe,
                     speculative=spec, kv_transfer=kv_transfer, network=sm.Network(),
                     layout=lay, pd=mode != "unified", concurrency=concurrency,
                     speculative_from="decode" if spec and mode == "prefill" else "")


#: The expert all-to-all SGLang runs DSpark with under attention DP (0.5.23
#: arg_groups/speculative_hook.py ``_handle_dspark``: moe_a2a_backend none, megamoe or mori, and
#: --enable-dp-lm-head), in moegen's names; DeepEP is refused at start.
DSPARK_DP_ALL2ALL = ("allgather_reducescatter", "mori", "mori_low_latency",
                     "mori_high_throughput")
