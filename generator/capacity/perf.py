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

from dataclasses import dataclass

from ..catalog import Gpu

#: Fraction of HBM bandwidth a decode step achieves (weights + KV streaming). Typical for
#: large-batch GEMV/grouped-GEMM decode kernels on Hopper (DeepGEMM / FlashMLA reach 70-85 %).
ETA_HBM = 0.75
#: Fraction of dense FP8 peak a decode step's GEMMs reach (small M, grouped MoE GEMMs).
ETA_DECODE_COMPUTE = 0.45
#: Fraction of dense FP8 peak a prefill reaches (MLA MHA prefill + grouped MoE GEMMs), fitted to
#: seed 000's 16 x H20 production figure (QPM 212 at 3.5K/1.2K = 15,800 tokens/s with one TP8
#: prefill node): see tests/test_planner.py.
ETA_PREFILL = 0.45
#: Fraction of the per-GPU RDMA line rate all-to-all achieves; of NVLink bandwidth.
ETA_NET, ETA_NVLINK = 0.6, 0.7
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


def decode_step(m: ModelShape, gpu: Gpu, *, batch: int, tensor: int, data: int, expert: bool,
                nonexpert_bytes: float, local_experts_per_layer: float, ctx: float,
                gpus_per_node: int, inter_gbps: float, draft: int, bf16: bool) -> tuple[float, str]:
    """Time of one decode step of one DP rank (seconds) and the binding term's name."""
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
    kv_read = batch * ctx * m.kv_bytes_per_token
    t_mem = (nonexpert_bytes + expert_read + kv_read) / (gpu.hbm_gbps * 1e9 * ETA_HBM)
    dense_flops = 2 * (m.active_params - m.topk * m.moe_layers * m.expert_params) \
        * tokens_rank / tensor
    moe_flops = 2 * m.moe_layers * expert_tokens * m.expert_params
    attn_flops = 2 * m.layers * (m.heads / tensor) * tokens_rank * m.attended(ctx) * 2 * m.latent
    peak = (gpu.bf16_tflops if bf16 else gpu.fp8_tflops) * 1e12 * ETA_DECODE_COMPUTE
    t_compute = (dense_flops + moe_flops + attn_flops) / peak
    t_comm = 0.0
    if expert:
        ep = tensor * data
        per_gpu_copies = tokens_rank * m.topk / tensor
        bytes_step = m.moe_layers * per_gpu_copies * m.hidden * 3     # FP8 dispatch + BF16 combine
        remote = max(0, ep - gpus_per_node) / ep if ep > 1 else 0.0
        t_comm += bytes_step * remote / (inter_gbps / 8 * 1e9 * ETA_NET) if remote else 0.0
        t_comm += bytes_step * (1 - remote) / (gpu.nvlink_gbps * 1e9 * ETA_NVLINK)
        t_comm += 2 * m.moe_layers * A2A_LATENCY_S
    if tensor > 1:
        allreduce = 2 * m.layers * 2 * tokens_rank * m.hidden * 2 * (tensor - 1) / tensor
        t_comm += allreduce / _tp_link(gpu, tensor, gpus_per_node, inter_gbps)
        t_comm += 2 * m.layers * ALLREDUCE_LATENCY_S
    bound = "decode HBM bandwidth" if t_mem >= t_compute else "decode compute"
    if t_comm > max(t_mem, t_compute):
        bound = "expert all-to-all network" if expert else "tensor all-reduce"
    return max(t_mem, t_compute) + t_comm + STEP_OVERHEAD_S, bound


def _tp_link(gpu: Gpu, tensor: int, gpus_per_node: int, inter_gbps: float) -> float:
    """Bytes/s of a TP all-reduce ring: NVLink within a node, the RDMA network across nodes."""
    if tensor > gpus_per_node:
        return inter_gbps / 8 * 1e9 * ETA_NET
    return gpu.nvlink_gbps * 1e9 * ETA_NVLINK


@dataclass(frozen=True)
class PrefillEstimate:
    """Prefill of one request on one instance: latency (s) and throughput (requests/s)."""

    latency_s: float
    requests_per_s: float


def prefill(m: ModelShape, gpu: Gpu, *, isl: int, tensor: int, data: int, pipeline: int,
            expert: bool, gpus_per_node: int, inter_gbps: float, weights_bytes: float,
            bf16: bool) -> PrefillEstimate:
    """Prefill of ``isl`` tokens on an instance of tensor x data x pipeline GPUs.

    One request runs on one data-parallel rank (attention, dense layers) while its MoE layers
    spread over the expert-parallel group; pipeline stages overlap the chunks of a long prompt.
    Latency = (dense + attention FLOPs) / (TP x PP GPUs) + MoE FLOPs / (MoE GPUs), at least one
    read of the GPU's weights, plus TP all-reduce and EP all-to-all traffic. Throughput keeps
    every GPU busy: instance GPUs x peak / FLOPs per request.
    """
    peak = (gpu.bf16_tflops if bf16 else gpu.fp8_tflops) * 1e12 * ETA_PREFILL
    moe = 2 * m.topk * m.moe_layers * m.expert_params * isl
    dense = 2 * m.active_params * isl - moe
    attn = 2 * m.layers * m.heads * m.causal_pairs(isl) * (m.qk_head + m.v_head)
    rank_gpus = tensor * pipeline
    moe_gpus = rank_gpus * (data if expert else 1)
    t = (dense + attn) / (rank_gpus * peak) + moe / (moe_gpus * peak)
    t = max(t, weights_bytes / (gpu.hbm_gbps * 1e9 * ETA_HBM))
    if tensor > 1:
        t += 2 * m.layers * isl * m.hidden * 2 * 2 * (tensor - 1) / tensor / \
            _tp_link(gpu, tensor, gpus_per_node, inter_gbps) / pipeline
    if expert and tensor * data > gpus_per_node:
        remote = (tensor * data - gpus_per_node) / (tensor * data)
        per_gpu = isl * m.topk * m.hidden * 3 * m.moe_layers / moe_gpus
        t += per_gpu * remote / (inter_gbps / 8 * 1e9 * ETA_NET)
    gpus = tensor * data * pipeline
    total = dense + attn + moe
    return PrefillEstimate(t, gpus * peak / total)


def kv_transfer_time(isl: int, kv_bytes_per_token: float, inter_gbps: float) -> float:
    """Seconds to move one request's KV cache from prefill to decode over the network."""
    return isl * kv_bytes_per_token / (inter_gbps / 8 * 1e9 * ETA_NET)
