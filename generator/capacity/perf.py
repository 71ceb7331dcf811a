"""Performance model of the planner: decode and prefill time per GPU from first principles.

Every estimate is a sum of physical costs divided by a named efficiency; the efficiencies are
the only fitted numbers, each calibrated on a published figure (tests/test_planner.py states the
figures and tolerances). Units: bytes, FLOPs, seconds.

Decode step of one data-parallel rank holding ``b`` sequences (and its GPUs):

* memory: the weights the step reads (every non-expert tensor of the GPU, and the local
  experts that at least one token of the step is routed to: with T tokens routed top-k over E
  experts, a given expert is hit with probability 1 - (1 - 1/E)^(T x k)) plus the KV cache of the
  rank's sequences (MLA latent, replicated per TP rank), at HBM bandwidth x :data:`ETA_HBM`;
* compute: 2 x active parameters per token (+ MLA decode attention over the context, or over the
  sparse-attention window for V3.2/V4) at the
  GPU's dense FP8 (or BF16) throughput x :data:`ETA_DECODE_COMPUTE`;
* communication: expert-parallel dispatch (FP8) + combine (BF16) of every token's top-k copies,
  the inter-node share over the RDMA network x :data:`ETA_NET` and the rest over NVLink; TP
  all-reduces (two per layer) over NVLink; plus a latency per collective;
* a fixed per-step cost :data:`STEP_OVERHEAD_S` (scheduling, sampling, launch);
* step = max(memory, compute) + communication + overhead; MTP with k draft tokens multiplies the
  tokens per step by (1 + k) and yields 1 + a + a^2 + ... + a^k accepted tokens per step for an
  acceptance rate a, so TPOT = step / accepted.

Prefill of one request of ``isl`` tokens on an instance of G GPUs: 2 x active parameters x isl
+ causal attention 2 x layers x heads x isl^2 / 2 x (qk_head + v_head) FLOPs at G x the FP8
throughput x :data:`ETA_PREFILL`, plus TP all-reduce traffic over NVLink; TTFT adds the KV
transfer to the decode side over the network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..catalog import Gpu

#: Fraction of HBM bandwidth a decode step achieves (weights + KV streaming). Typical for
#: large-batch GEMV/grouped-GEMM decode kernels on Hopper (DeepGEMM / FlashMLA reach 70-85 %).
ETA_HBM = 0.75
#: Fraction of dense FP8 peak a decode step's GEMMs reach (small M, grouped MoE GEMMs).
ETA_DECODE_COMPUTE = 0.45
#: Fraction of the dense FP8 (BF16) peak prefill GEMMs reach (dense + grouped MoE GEMMs), per
#: GPU family: the H20's tensor throughput is 15 % of an H100's on the same memory system, so its
#: GEMMs (and their FP8 scaling and elementwise neighbours) run much closer to peak. H20: fitted
#: to Ant Group's TP8 prefill on H20-96G (lmsys.org 2025-09-26: 16.5k input tokens/s per node at
#: 4,096 tokens); other GPUs: to lmsys.org 2025-05-05's EP32 prefill on H100 (57.7k / 54.5k /
#: 50.3k input tokens/s per node at 1K / 2K / 4K tokens). bench/planner_residuals.py.
ETA_PREFILL = 0.40
ETA_PREFILL_BY_GPU = {"H20-96GB": 0.72, "H20-141GB": 0.72}
#: Rate of compute-bound expert GEMMs with 4-bit weights (w4a8, MXFP4) on a GPU without FP4
#: tensor cores, relative to FP8 weights: the kernels dequantize to FP8 in the main loop. Fitted
#: to two independent H20 figures: seed 000 (vLLM, w4a8, 16 x H20: 15,800 tokens/s) and seed 002
#: (SGLang, DeepSeek-V4-Pro MXFP4 experts, PP2-CP8-TP8 prefill: 8.45k tokens/s per node).
#: Prefill only: decode's small-M expert GEMMs are bandwidth-bound.
DEQUANT_4BIT_PREFILL = 0.5
#: Fraction of the per-GPU RDMA line rate a KV transfer or a TP all-reduce across nodes
#: achieves; of NVLink bandwidth.
ETA_NET, ETA_NVLINK = 0.6, 0.7
#: Fraction of the per-GPU RDMA line rate DeepEP's expert all-to-all reaches: deepseek-ai/DeepEP
#: README (H800, ConnectX-7 400 Gbit/s = 50 GB/s per GPU): low-latency kernels 39-46 GB/s at
#: EP 8-256, normal kernels 43-58 GB/s across nodes (NVLink forwarding within a node).
ETA_A2A = 0.8
#: Fraction of the BF16 (or FP8) peak MLA attention reaches: FlashMLA README (2025-04-22) 660
#: TFLOPS on H800 SXM5 (989 dense BF16) in the compute-bound decode regime = 0.67; FA3 prefill
#: attention is of the same order (FlashAttention-3 paper: 600-740 TFLOPS BF16 on H100).
ETA_ATTN = 0.67
#: Fixed cost of one MTP draft pass (its own kernels, sampling, under CUDA graphs), s.
DRAFT_PASS_S = 0.0005
#: Share of the shorter of computation and expert all-to-all that micro-batch overlap hides
#: (the rest is lost to the micro-batches' imbalance, the SMs the communication kernels take and
#: half-size GEMMs). Prefill: lmsys.org 2025-05-05 (large-scale EP on 96 H100) reports two-batch
#: overlap raising prefill throughput 27-35 %; 0.5 of the shorter term gives +30 % on its EP32
#: prefill. Decode: fitted to the same post's EP72 decode (22,282 tokens/s per node) and the
#: Ant Group H20 EP16 single-batch-overlap figures (bench/published_cases.yaml).
OVERLAP_PREFILL = 0.5
OVERLAP_DECODE = 0.15
#: Fixed cost of a decode step, s (scheduler, sampler, kernel launches under CUDA graphs).
STEP_OVERHEAD_S = 0.003
#: Latency of one TP all-reduce of a decode step (one-shot custom all-reduce over NVLink), s,
#: and of one DeepEP low-latency dispatch or combine, s. Two of each per layer. Calibrated with
#: seed 002's batch-1 TP8 (271 tokens/s) and DP16-EP16 (27.4 ms TPOT) figures.
ALLREDUCE_LATENCY_S = 15e-6
A2A_LATENCY_S = 25e-6


@dataclass(frozen=True)
class ModelShape:
    """What the performance model needs from a model (per GPU numbers come from sizing).

    Attributes:
        active_params: parameters a token goes through (non-expert + top-k routed experts).
        layers, moe_layers, hidden, heads, topk, experts: config fields.
        expert_bytes: bytes of one routed expert in one layer (checkpoint format).
        expert_params: parameters of one routed expert in one layer.
        kv_bytes_per_token: KV bytes of one token on one GPU (all layers of the GPU).
        qk_head, v_head: prefill attention head dims (MLA: nope + rope, v).
        latent: MLA decode attention width per head (kv_lora + rope), for attention FLOPs.
        attn_window: tokens one query attends to in sparse attention (V3.2/V4: the indexer's
            top-k + the sliding window), None for dense attention over the whole context.
        n_group, topk_group: group-limited routing (config ``n_group``, ``topk_group``; 0: none).
        lm_head_bytes: bytes of the LM head (vocabulary x hidden, BF16), read per MTP draft pass.
        expert_bits: bits per routed-expert weight of the checkpoint format (4: w4a8, MXFP4).
    """

    active_params: float
    layers: int
    moe_layers: int
    hidden: int
    heads: int
    topk: int
    experts: int
    expert_bytes: float
    expert_params: float
    kv_bytes_per_token: float
    qk_head: int
    v_head: int
    latent: int
    attn_window: int | None = None
    n_group: int = 0
    topk_group: int = 0
    lm_head_bytes: float = 0.0
    expert_bits: int = 8

    def attended(self, ctx: float) -> float:
        """Tokens one decode query attends to at context ``ctx``."""
        return min(ctx, self.attn_window) if self.attn_window else ctx

    def causal_pairs(self, isl: int) -> float:
        """Query-key pairs of a causal prefill of ``isl`` tokens (sparse: each query <= window)."""
        w = self.attn_window
        if not w or isl <= w:
            return isl * isl / 2
        return w * w / 2 + (isl - w) * w


@dataclass(frozen=True)
class DecodeEstimate:
    """One decode operating point: batch per DP rank, TPOT, tokens/s, and the binding term."""

    batch_per_rank: int
    step_s: float
    tpot_s: float
    tokens_per_s_per_rank: float
    bound: str


def _hit_fraction(tokens: float, topk: int, experts: int) -> float:
    """Probability that one expert receives at least one of ``tokens`` x topk routed copies."""
    if experts <= 0:
        return 0.0
    return 1.0 - (1.0 - 1.0 / experts) ** (tokens * topk)


def accepted_per_step(k: int, acceptance: float) -> float:
    """Expected tokens per sequence per step with k draft tokens: 1 + a + ... + a^k."""
    return sum(acceptance ** i for i in range(k + 1))


def _nodes_hit(m: ModelShape, nodes: int) -> float:
    """Expected distinct nodes one token's top-k experts live on, with the experts spread evenly
    over ``nodes`` nodes. DeepSeek-V3-style group-limited routing (``n_group`` groups, a token's
    experts within ``topk_group`` of them; the V3 report's node-limited routing, M = 4) when each
    node holds whole groups: 1 - C(G - g, k_g) / C(G, k_g) per node with g groups per node;
    otherwise the experts are independent: 1 - (1 - 1/nodes)^topk per node."""
    if nodes <= 1:
        return 1.0
    g_total, g_k = m.n_group, m.topk_group
    if g_total and g_k and g_total % nodes == 0 and g_k <= g_total:
        per = g_total // nodes
        miss = math.comb(g_total - per, g_k) / math.comb(g_total, g_k) if g_total - per >= g_k \
            else 0.0
        return nodes * (1 - miss)
    return nodes * (1 - (1 - 1 / nodes) ** m.topk)


@dataclass(frozen=True)
class StepTerms:
    """The parts of one decode step of one DP rank, seconds (see the module docstring).

    Attributes:
        weights, kv: HBM reads of the weights (non-expert + hit local experts) and the KV cache.
        gemm, attn, moe_gemm: compute of the GEMMs (of which the routed experts') and attention.
        dispatch, combine: expert all-to-all transfer time (bandwidth part).
        latency: collective latency floors (all-to-all and all-reduce).
        allreduce: TP all-reduce transfer time.
        draft: the MTP draft passes.
    """

    weights: float
    kv: float
    gemm: float
    moe_gemm: float
    attn: float
    dispatch: float
    combine: float
    latency: float
    allreduce: float
    draft: float

    def total(self, overlap: str | None) -> tuple[float, str]:
        """Step time (s) and the binding term's name under ``overlap``:

        * none: max(memory, compute) + communication;
        * ``two_batch`` (SGLang TBO, vLLM DBO): two micro-batches (each reads the weights), the
          all-to-all of one under the computation of the other: :data:`OVERLAP_DECODE` of the
          shorter of the two is hidden;
        * ``single_batch`` (SGLang SBO): the combine runs under the experts' GEMMs:
          :data:`OVERLAP_DECODE` of the shorter of the two is hidden."""
        mem = self.weights + self.kv
        comp = self.gemm + self.attn
        comm = self.dispatch + self.combine + self.allreduce
        work = max(mem, comp)
        if overlap == "two_batch":
            work = max(2 * self.weights + self.kv, comp)
            hidden = OVERLAP_DECODE * min(work, comm)
        elif overlap == "single_batch":
            hidden = OVERLAP_DECODE * min(self.combine, self.moe_gemm)
        else:
            hidden = 0.0
        bound = "decode HBM bandwidth" if mem >= comp else "decode compute"
        if comm > work:
            bound = "expert all-to-all network" if self.dispatch else "tensor all-reduce"
        return work + comm - hidden + self.latency + self.draft + STEP_OVERHEAD_S, bound


def decode_terms(m: ModelShape, gpu: Gpu, *, batch: int, tensor: int, data: int, expert: bool,
                 nonexpert_bytes: float, local_experts_per_layer: float, ctx: float,
                 gpus_per_node: int, inter_gbps: float, draft: int, bf16: bool,
                 attn_fp8: bool = False) -> StepTerms:
    """The terms of one decode step of one DP rank holding ``batch`` sequences of mean context
    ``ctx`` tokens, with ``draft`` MTP tokens per sequence (bytes and FLOPs per the module
    docstring). ``attn_fp8``: the attention kernel computes in FP8 (FP8 KV cache with FP8
    FlashMLA), else BF16."""
    tokens_rank = batch * (1 + draft)                       # tokens this rank computes
    if expert:
        routed = tokens_rank * data                         # all ranks' tokens share the experts
        hit = _hit_fraction(routed, m.topk, m.experts)
        expert_read = m.moe_layers * local_experts_per_layer * hit * m.expert_bytes
        expert_tokens = routed * m.topk / m.experts * local_experts_per_layer
    else:
        hit = _hit_fraction(tokens_rank, m.topk, m.experts)
        expert_read = m.moe_layers * m.experts * hit * m.expert_bytes / tensor
        expert_tokens = tokens_rank * m.topk / tensor
    hbm = gpu.hbm_gbps * 1e9 * ETA_HBM
    kv_read = batch * ctx * m.kv_bytes_per_token
    dense_flops = 2 * (m.active_params - m.topk * m.moe_layers * m.expert_params) \
        * tokens_rank / tensor
    moe_flops = 2 * m.moe_layers * expert_tokens * m.expert_params
    attn_flops = 2 * m.layers * (m.heads / tensor) * tokens_rank * m.attended(ctx) * 2 * m.latent
    peak = (gpu.bf16_tflops if bf16 else gpu.fp8_tflops) * 1e12 * ETA_DECODE_COMPUTE
    attn_peak = (gpu.fp8_tflops if attn_fp8 else gpu.bf16_tflops) * 1e12 * ETA_ATTN
    dispatch = combine = latency = allreduce = 0.0
    if expert:
        ep = tensor * data
        copies = m.moe_layers * tokens_rank * m.topk / tensor * m.hidden   # elements per step
        remote = max(0, ep - gpus_per_node) / ep if ep > 1 else 0.0
        rate = 1 / (remote / (inter_gbps / 8 * 1e9 * ETA_A2A)
                    + (1 - remote) / (gpu.nvlink_gbps * 1e9 * ETA_NVLINK))
        dispatch = copies * 1 / rate                      # FP8 activations
        combine = copies * 2 / rate                       # BF16 outputs
        latency += 2 * m.moe_layers * A2A_LATENCY_S
    if tensor > 1:
        ar = 2 * m.layers * 2 * tokens_rank * m.hidden * 2 * (tensor - 1) / tensor
        allreduce = ar / _tp_link(gpu, tensor, gpus_per_node, inter_gbps)
        latency += 2 * m.layers * ALLREDUCE_LATENCY_S
    draft_s = 0.0
    if draft:
        # One pass of the MTP module per draft token over the batch: one decoder layer (its
        # share of the non-expert weights and experts; its own all-to-all) and the LM head.
        layer = (nonexpert_bytes / m.layers + expert_read / max(m.moe_layers, 1)
                 + m.lm_head_bytes / tensor) / hbm
        one = max(layer, (dense_flops + moe_flops) / tokens_rank * batch / m.layers / peak)
        a2a = (2 * A2A_LATENCY_S + (dispatch + combine) / max(m.moe_layers, 1) / (1 + draft)) \
            if expert else 0.0
        draft_s = draft * (one + a2a + DRAFT_PASS_S)
    return StepTerms(weights=(nonexpert_bytes + expert_read) / hbm, kv=kv_read / hbm,
                     gemm=(dense_flops + moe_flops) / peak, moe_gemm=moe_flops / peak,
                     attn=attn_flops / attn_peak, dispatch=dispatch, combine=combine,
                     latency=latency, allreduce=allreduce, draft=draft_s)


def decode_step(m: ModelShape, gpu: Gpu, *, overlap: str | None = None, **kw) -> tuple[float, str]:
    """Time of one decode step of one DP rank (seconds) and the binding term's name
    (:func:`decode_terms` for the arguments, :meth:`StepTerms.total` for ``overlap``)."""
    return decode_terms(m, gpu, **kw).total(overlap)


def _tp_link(gpu: Gpu, tensor: int, gpus_per_node: int, inter_gbps: float) -> float:
    """Bytes/s of a TP all-reduce ring: NVLink within a node, the RDMA network across nodes."""
    if tensor > gpus_per_node:
        return inter_gbps / 8 * 1e9 * ETA_NET
    return gpu.nvlink_gbps * 1e9 * ETA_NVLINK


@dataclass(frozen=True)
class PrefillEstimate:
    """Prefill of one request on one instance: latency (s), throughput (requests/s) and the term
    that binds it (``prefill compute``, ``prefill expert all-to-all network``, ``prefill tensor
    all-reduce``)."""

    latency_s: float
    requests_per_s: float
    bound: str = "prefill compute"


def prefill(m: ModelShape, gpu: Gpu, *, isl: int, tensor: int, data: int, pipeline: int,
            expert: bool, gpus_per_node: int, inter_gbps: float, weights_bytes: float,
            bf16: bool, overlap: str | None = None) -> PrefillEstimate:
    """Prefill of ``isl`` tokens on an instance of tensor x data x pipeline GPUs.

    One request runs on one data-parallel rank (attention, dense layers) while its MoE layers
    spread over the expert-parallel group; pipeline stages overlap the chunks of a long prompt.
    GPU time per request: GEMMs (dense + routed experts, 2 x active parameters x isl) at the FP8
    (BF16) peak x :data:`ETA_PREFILL`, causal attention at the BF16 peak x :data:`ETA_ATTN`, TP
    all-reduces over NVLink (or RDMA), and the expert all-to-all across nodes: DeepEP's normal
    kernels send a token once to each remote node holding one of its experts (:func:`_nodes_hit`)
    then forward over NVLink, FP8 out and BF16 back, at the RDMA rate x :data:`ETA_A2A`.
    Throughput keeps every GPU busy: GPUs / GPU time per request, where ``two_batch`` overlap
    hides :data:`OVERLAP_PREFILL` of the shorter of computation and all-to-all. Latency is one request on
    its rank, at least one read of the GPU's weights.
    """
    gemm_peak = (gpu.bf16_tflops if bf16 else gpu.fp8_tflops) * 1e12 \
        * ETA_PREFILL_BY_GPU.get(gpu.id, ETA_PREFILL)
    attn_peak = gpu.bf16_tflops * 1e12 * ETA_ATTN
    moe = 2 * m.topk * m.moe_layers * m.expert_params * isl
    dense = 2 * m.active_params * isl - moe
    attn = 2 * m.layers * m.heads * m.causal_pairs(isl) * (m.qk_head + m.v_head)
    rank_gpus = tensor * pipeline
    moe_gpus = rank_gpus * (data if expert else 1)
    moe_peak = gemm_peak * (DEQUANT_4BIT_PREFILL if m.expert_bits == 4 and not gpu.fp4 else 1.0)
    compute = dense / gemm_peak + moe / moe_peak + attn / attn_peak    # GPU-seconds per request
    allreduce = a2a = 0.0                                           # GPU-seconds per request
    if tensor > 1:
        per_gpu = 2 * m.layers / pipeline * isl * m.hidden * 2 * 2 * (tensor - 1) / tensor
        allreduce = rank_gpus * per_gpu / _tp_link(gpu, tensor, gpus_per_node, inter_gbps)
    nodes = -(-tensor * data // gpus_per_node)
    if expert and nodes > 1:
        remote = _nodes_hit(m, nodes) * (nodes - 1) / nodes
        a2a = isl * m.moe_layers * remote * m.hidden * 3 / (inter_gbps / 8 * 1e9 * ETA_A2A)
    comm = allreduce + a2a
    rank_t = (dense / gemm_peak + attn / attn_peak) / rank_gpus + moe / (moe_gpus * moe_peak) \
        + comm / rank_gpus
    rank_t = max(rank_t, weights_bytes / (gpu.hbm_gbps * 1e9 * ETA_HBM))
    gpus = tensor * data * pipeline
    busy = compute + comm - (OVERLAP_PREFILL * min(compute, comm) if overlap == "two_batch"
                             else 0.0)
    bound = "prefill compute" if compute >= comm else \
        "prefill expert all-to-all network" if a2a >= allreduce else "prefill tensor all-reduce"
    return PrefillEstimate(rank_t, gpus / busy, bound)


def kv_transfer_time(isl: int, kv_bytes_per_token: float, inter_gbps: float) -> float:
    """Seconds to move one request's KV cache from prefill to decode over the network."""
    return isl * kv_bytes_per_token / (inter_gbps / 8 * 1e9 * ETA_NET)
