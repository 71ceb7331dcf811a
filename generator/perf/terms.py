"""Performance model of the planner: decode and prefill time per GPU from first principles.

Every estimate is a sum of physical costs divided by a named efficiency, plus named fixed costs
of the engine on a GPU family (:class:`FixedCosts`, :data:`FIXED_COSTS`); the efficiencies and
fixed costs are the only fitted numbers, each fitted to named published figures of the
development split of bench/published_cases.yaml (bench/fit_constants.py; held-out figures are
never fitted). bench/planner_residuals.py reports the error per regime (perf/regimes.py).
Units: bytes, FLOPs, seconds.

Decode step of one data-parallel rank holding ``b`` sequences (and its GPUs), :class:`StepTerms`:

* memory: the weights the step reads (every non-expert tensor of the GPU, and the local
  experts that at least one token of the step is routed to: with T tokens routed top-k over E
  experts, a given expert is hit with probability 1 - (1 - 1/E)^(T x k)) plus the KV cache of the
  rank's sequences (MLA latent, replicated per TP rank), at HBM bandwidth x :data:`ETA_HBM`
  (per family), plus :attr:`FixedCosts.moe_slice_s` per routed-expert slice read (a whole
  expert under EP, a 1/TP column slice under TP: the MoE's efficiency by slice);
* compute: 2 x active parameters per token at the GPU's dense FP8 (or BF16) peak x
  :data:`ETA_DECODE_COMPUTE` (per GPU family), plus absorbed-MLA attention over the context (or
  the sparse-attention window of V3.2/V4) at the BF16 peak x :data:`ETA_ATTN`, x
  :data:`ATTN_FP8_SPEEDUP` where the kernel computes in FP8;
* communication: expert-parallel dispatch (FP8) + combine (BF16) of every token's top-k copies,
  the inter-node share over RDMA x :data:`ETA_A2A` and the rest over one NVLink direction x
  :data:`ETA_NVLINK` (the NVLink domain is the node, or the rack on NVL72); TP all-reduces (two
  per layer); a latency floor per collective (per family: DeepEP's dispatch / combine, the
  token gather / scatter of EP without DeepEP, the TP all-reduce);
* speculative decoding: the draft passes (MTP: SGLang's draft extend + k, vLLM k; DeepSeek-V4
  DSpark: one forward of :data:`DSPARK_LAYERS` layers), each one layer's weights and the LM head;
* a fixed per-step cost, :attr:`FixedCosts.decode_layer_s` per layer (scheduling, sampling,
  the kernel chain under CUDA graphs; DeepSeek-V3.2 adds :data:`fixed.SPARSE_DECODE_LAYER_S`);
* step = max(memory, compute) + communication + latencies + drafts + overhead, where two-batch
  overlap (SGLang TBO, vLLM DBO) hides :data:`OVERLAP_TWO_BATCH` of the shorter of work and
  all-to-all and single-batch overlap (SGLang SBO) :data:`OVERLAP_SINGLE_BATCH` of the combine;
  with k draft tokens at acceptance a a step yields 1 + a + ... + a^k tokens per sequence, so
  TPOT = step / that.

Prefill of one request of ``isl`` tokens on an instance (:func:`prefill`): dense and expert GEMMs
at the FP8 (BF16) peak x :data:`ETA_PREFILL` (per GPU family; 4-bit experts on GPUs without FP4
at :data:`DEQUANT_4BIT_PREFILL` of it), causal attention at the BF16 peak x :data:`ETA_ATTN`, TP
all-reduce and DeepEP's node-deduplicated all-to-all (DeepSeek-V3.2: its indexer and the
latent-form sparse MLA at :data:`ETA_SPARSE_PREFILL`); the step's kernel launches
(:attr:`FixedCosts.prefill_layer_s` per layer, + ``dp_sync_layer_s`` under attention DP) partly
hidden behind that work (:func:`step_time`). TTFT = the per-request cost off the GPU
(:attr:`FixedCosts.request_s`) + the prefill steps (one per chunk of the prompt) + its queue + the
KV transfer to the decode side over one prefill GPU's NIC (:func:`kv_transfer_time`,
:func:`kv_readers`) + the decode instance's way to the first token (perf/loop.py
``decode_first_token``); on a unified role also the rest of the decode step
running when the request arrives (perf/loop.py ``unified_candidate``). One role serving both phases interleaves prefill
steps with decode (:func:`generator.perf.interleave.interleaved`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..catalog import Gpu
from . import fixed
from .kernels import MoeKernel
from .shape import (  # noqa: F401 (re-exported: the model's view of a model and its results)
    DecodeEstimate,
    ModelShape,
    _hit_fraction,
    _nodes_hit,
    accepted_per_step,
)
from .fixed import (  # noqa: F401 (re-exported: the fixed costs are part of the model's terms)
    A2A_LATENCY_S,
    ALLREDUCE_LATENCY_S,
    FIXED_COSTS,
    STEP_OVERHEAD_S,
    FixedCosts,
    fixed_costs,
    step_time,
)

#: Fraction of HBM bandwidth a decode step achieves (weights + KV streaming). Typical for
#: large-batch GEMV/grouped-GEMM decode kernels on Hopper (DeepGEMM / FlashMLA reach 70-85 %).
ETA_HBM = 0.75
#: Fraction of the dense FP8 (BF16) peak decode GEMMs reach (small M, grouped MoE GEMMs), per GPU
#: family: the H20's tensor cores are 15 % of an H100's, fed by a faster memory system (4.0 vs
#: 3.35 TB/s), so its GEMMs run nearer their peak. H20: fitted to Ant Group's EP16 decode on
#: H20-96G (lmsys.org 2025-09-26: 714 and 675 output tokens/s per GPU at batch 48 and 32); other
#: GPUs: to lmsys.org 2025-05-05's EP72 decode on H100 with and without two-batch overlap
#: (22,310 and 22,310 / 1.255 tokens/s per node). bench/published_cases.yaml.
ETA_DECODE_COMPUTE = 0.32
ETA_DECODE_COMPUTE_BY_GPU = {"H20-96GB": 0.45, "H20-141GB": 0.45}
#: Fraction of the dense FP8 (BF16) peak prefill GEMMs reach (dense + grouped MoE GEMMs), per
#: GPU family as above (Blackwell and AMD: fixed.FIXED_COSTS ``prefill_eta``). H20: fitted to Ant
#: Group's TP8 prefill on H20-96G (16.5k input tokens/s per node at 4,096 tokens, with the TP
#: all-reduce at one NVLink direction x ETA_NVLINK); other GPUs: to lmsys.org 2025-05-05's EP32
#: prefill on H100 (57.7k / 54.5k / 50.3k input tokens/s per node at 1K / 2K / 4K tokens,
#: default EPLB: the constant absorbs its expert imbalance); both with the prefill step's
#: exposed launches (fixed.PREFILL_LAUNCH_EXPOSED, bench/fit_constants.py).
ETA_PREFILL = 0.386
ETA_PREFILL_BY_GPU = {"H20-96GB": 0.866, "H20-141GB": 0.866}
#: Rate of compute-bound expert GEMMs with 4-bit weights (w4a8, MXFP4) on a GPU without FP4
#: tensor cores, relative to FP8 weights: the kernels dequantize to FP8 in the main loop. Not
#: applied to weight-only ``w4a16`` (BF16 activations), whose GEMMs are timed at the BF16 peak
#: (perf/decode.py ``bf16_compute``): its W4A16 kernels dequantize to BF16. Fitted
#: to two independent H20 figures: seed 000 (vLLM, w4a8, 16 x H20: 15,800 tokens/s) and seed 002
#: (SGLang, DeepSeek-V4-Pro MXFP4 experts, PP2-CP8-TP8 prefill: 8.45k tokens/s per node).
#: Prefill only: decode's small-M expert GEMMs are bandwidth-bound.
DEQUANT_4BIT_PREFILL = 0.5
#: Rate of a weight-only W4A16 grouped GEMM (Marlin; FlashInfer's SM90 mixed-input GEMM; Humming
#: with BF16 activations: perf/kernels.py) at prefill batch sizes, relative to a BF16 GEMM at
#: :data:`ETA_PREFILL`: the kernels dequantize the 4-bit weights to BF16 in the main loop and tile
#: for decode-sized batches. Fitted to the SGLang DeepSeek-V4 table's V4-Flash on 4 x H200 with
#: ``--moe-runner-backend marlin`` (high-throughput cell: TPOT 126.81 ms, 4,473 total tokens/s
#: per GPU at 8K / 1K, ~252 running; published-dev-4 v02, bench/fit_constants.py).
W4A16_PREFILL = 0.219
#: Fraction of the per-GPU RDMA line rate a KV transfer or a TP all-reduce across nodes
#: achieves.
ETA_NET = 0.6
#: Fraction of the per-direction NVLink bandwidth (the catalog's figure counts both directions)
#: all-to-all and all-reduce reach: deepseek-ai/DeepEP docs/legacy.md measures 153-158 GB/s of
#: H800's 200 GB/s per direction for its intranode kernels (0.77-0.79); the DeepEP V2 README
#: 726 GB/s of B200's 900 (0.81).
ETA_NVLINK = 0.78
#: Fraction of the per-GPU RDMA line rate DeepEP's expert all-to-all reaches across nodes:
#: deepseek-ai/DeepEP docs/legacy.md (H800, ConnectX-7 400 Gbit/s = 50 GB/s per GPU): normal
#: kernels 43-58 GB/s, low-latency kernels 39-46 GB/s at EP 64-256 (63-98 GB/s at EP 8-16, where
#: part of the traffic stays within the node).
ETA_A2A = 0.8
#: Fraction of the peak DeepSeek-V3.2's sparse prefill kernels reach (the lightning indexer's
#: FP8 logits, top-k selection and the latent-form sparse MLA), relative to the FP8 / BF16 peak:
#: fitted to vLLM's V3.2-NVFP4 TP2 prefill-only ceiling on 2 x GB300 (7,360 tokens/s per GPU
#: at 2K input, vllm-project.github.io _posts/2026-02-13-gb300-deepseek.md: "R1's prefill
#: throughput capability is ~3x that of DeepSeek V3.2" on the same GPUs).
ETA_SPARSE_PREFILL = 0.0814
#: Fraction of the BF16 peak MLA attention reaches: FlashMLA README (2025-04-22) 660 TFLOPS on
#: H800 SXM5 (989 dense BF16) in the compute-bound decode regime = 0.67; FA3 prefill attention is
#: of the same order (FlashAttention-3 paper: 600-740 TFLOPS BF16 on H100).
ETA_ATTN = 0.67
#: Speed of FP8 MLA decode attention (FP8 Q and KV, FlashMLA's FP8 kernel) over BF16: Ant Group
#: measured ~70 % at the kernel level on H20 (lmsys.org 2025-09-26, FlashMLA-FP8).
ATTN_FP8_SPEEDUP = 1.7
#: Fixed cost of one MTP draft pass (its own kernels, sampling, under CUDA graphs), s.
DRAFT_PASS_S = 0.0005
#: Decoder layers of DeepSeek-V4's DSpark drafter, run once per step for the whole block: "a
#: three-stage MTP stack with a Markov head" (sgl-project/sglang#29538).
DSPARK_LAYERS = 3
#: Share of the shorter of computation and expert all-to-all that two-batch overlap (SGLang TBO,
#: vLLM DBO) hides; the rest is lost to the micro-batches' imbalance, the SMs the communication
#: kernels take and half-size GEMMs, and each micro-batch pays its own collective latencies.
#: lmsys.org 2025-05-05 (96 H100): TBO raises prefill throughput 27-35 % and EP72 decode 25.5 %
#: (22,310 tokens/s per node at 256 tokens per GPU); 0.5 reproduces both with this model.
OVERLAP_TWO_BATCH = 0.5
#: Share of the combine that single-batch overlap (SGLang SBO: the combine under the experts'
#: down-projection GEMMs) hides: Ant Group measured SBO +8-10 % at batch 20-56 on H20 EP16
#: (lmsys.org 2025-09-26).
OVERLAP_SINGLE_BATCH = 0.7


@dataclass(frozen=True)
class StepTerms:
    """The parts of one decode step of one DP rank, seconds (see the module docstring).

    Attributes:
        weights, kv: HBM reads of the weights (non-expert + hit local experts) and the KV cache.
        weights_half: the weights one of two micro-batches reads (half the tokens hit fewer
            experts).
        gemm, attn, moe_gemm: compute of the GEMMs (of which the routed experts') and attention.
        dispatch, combine: expert all-to-all transfer time (bandwidth part).
        latency: collective latency floors (all-to-all and all-reduce).
        allreduce: TP all-reduce transfer time.
        draft: the MTP draft passes.
        slices: the routed-expert slices' fixed cost (:attr:`FixedCosts.moe_slice_s` x slices
            read), on the memory side.
        fixed: the step's fixed cost (:attr:`FixedCosts.decode_layer_s` x layers).
    """

    weights: float
    kv: float
    weights_half: float
    gemm: float
    moe_gemm: float
    attn: float
    dispatch: float
    combine: float
    latency: float
    allreduce: float
    draft: float
    slices: float = 0.0
    fixed: float = STEP_OVERHEAD_S

    def total(self, overlap: str | None) -> tuple[float, str]:
        """Step time (s) and the binding term's name under ``overlap``:

        * none: max(memory, compute) + communication + latencies;
        * ``two_batch`` (SGLang TBO, vLLM DBO): two micro-batches, each reading its weights and
          paying its collective latencies; :data:`OVERLAP_TWO_BATCH` of the shorter of
          computation and all-to-all is hidden;
        * ``single_batch`` (SGLang SBO): :data:`OVERLAP_SINGLE_BATCH` of the combine, up to the
          experts' GEMMs, is hidden."""
        mem = self.weights + self.kv + self.slices
        comp = self.gemm + self.attn
        a2a = self.dispatch + self.combine
        comm = a2a + self.allreduce
        work = max(mem, comp)
        latency = self.latency
        if overlap == "two_batch" and a2a:
            work = max(2 * self.weights_half + self.kv + self.slices, comp)
            hidden = OVERLAP_TWO_BATCH * min(work, a2a)
            latency = 2 * self.latency
        elif overlap == "single_batch" and a2a:
            hidden = OVERLAP_SINGLE_BATCH * min(self.combine, self.moe_gemm)
        else:
            hidden = 0.0
        bound = "decode HBM bandwidth" if mem >= comp else "decode compute"
        if comm > work:
            bound = "expert all-to-all network" if self.dispatch else "tensor all-reduce"
        return work + comm - hidden + latency + self.draft + self.fixed, bound


#: Expert-parallel backends without an all-to-all kernel: the tokens are gathered to every
#: rank and scattered back (SGLang without --moe-a2a-backend: python/sglang/srt/layers/
#: dp_attention.py ``dp_gather_partial`` / ``dp_scatter``, 0.5.23; vLLM ``naive`` and
#: ``allgather_reducescatter``: vllm/distributed/device_communicators/all2all.py
#: NaiveAll2AllManager / AgRsAll2AllManager, 0.33.0); every other backend (DeepEP, pplx,
#: FlashInfer, NIXL-EP, MoRI) dispatches and combines with its kernel.
GATHER_BACKENDS = frozenset({None, "naive", "allgather_reducescatter"})


def decode_terms(m: ModelShape, gpu: Gpu, *, batch: int, tensor: int, data: int, expert: bool,
                 nonexpert_bytes: float, local_experts_per_layer: float, ctx: float,
                 gpus_per_node: int, inter_gbps: float, draft: int, bf16: bool,
                 attn_fp8: bool = False, drafter: str = "sglang_mtp",
                 mnnvl: bool = True, all2all: str | None = None,
                 persistent_mla: bool = False, engine: str = "sglang",
                 moe: MoeKernel | None = None) -> StepTerms:
    """The terms of one decode step of one DP rank holding ``batch`` sequences of mean context
    ``ctx`` tokens, with ``draft`` MTP tokens per sequence (bytes and FLOPs per the module
    docstring). ``attn_fp8``: the attention kernel computes in FP8 (FP8 KV cache with FP8
    FlashMLA), else BF16. ``drafter``: ``sglang_mtp`` runs ``draft`` MTP passes after the draft
    extend, ``vllm_mtp`` ``draft - 1``, ``dspark`` one forward of :data:`DSPARK_LAYERS` layers
    over the block. Fixed costs, HBM efficiency and collective latencies are the GPU family's
    (:func:`fixed_costs`); ``all2all``: the expert all-to-all backend (an all-to-all kernel's
    dispatch and combine: :data:`GATHER_BACKENDS` aside, :attr:`FixedCosts.a2a_latency_s`; else
    a token gather and scatter: :attr:`FixedCosts.gather_latency_s`, and on SGLang
    (``engine``) under attention DP :attr:`FixedCosts.ep_moe_layer_s`);
    ``persistent_mla``: the step's MLA decode runs AITER's persistent kernel
    (decode.persistent_mla), whose per-layer fixed cost is
    :attr:`FixedCosts.persistent_decode_layer_s` where the family has one. ``bf16``: the
    non-expert GEMMs run at the BF16 peak (else FP8); ``moe``: the routed experts' kernel
    (perf/kernels.py ``moe_kernel``), whose GEMMs run at its own peak (None: the non-expert
    GEMMs' peak)."""
    costs = fixed_costs(gpu)
    tokens_rank = batch * (1 + draft)                       # tokens this rank computes

    # Without EP the routed experts are tensor-parallel over the whole tensor x data group
    # (SGLang's MoE TP under attention DP, vLLM's DP without EP: sizing.placement_for moe_tp),
    # and under attention DP the MoE runs on every rank's tokens, gathered (data > 1).
    moe_tp = tensor * data

    def expert_bytes(tokens: float) -> float:
        """Routed-expert bytes a step of ``tokens`` tokens per rank reads on one GPU."""
        if expert:   # all ranks' tokens share the experts
            return m.moe_layers * local_experts_per_layer * m.expert_bytes \
                * _hit_fraction(tokens * data, m.topk, m.experts)
        return m.moe_layers * m.experts * m.expert_bytes / moe_tp \
            * _hit_fraction(tokens * data, m.topk, m.experts)

    expert_read = expert_bytes(tokens_rank)
    # Expert slices this GPU reads per MoE layer: its local experts that a token hits (EP),
    # or its 1/(tensor x data) slice of every hit expert (TP).
    if expert:
        slices = local_experts_per_layer * _hit_fraction(tokens_rank * data, m.topk, m.experts)
    else:
        slices = m.experts * _hit_fraction(tokens_rank * data, m.topk, m.experts)
    if expert:
        expert_tokens = tokens_rank * data * m.topk / m.experts * local_experts_per_layer
    else:   # every rank's tokens, each GPU its 1/(tensor x data) slice
        expert_tokens = tokens_rank * data * m.topk / moe_tp
    hbm = gpu.hbm_gbps * 1e9 * (costs.hbm_eta or ETA_HBM)
    kv_read = batch * ctx * m.kv_bytes_per_token
    dense_flops = 2 * (m.active_params - m.topk * m.moe_layers * m.expert_params) \
        * tokens_rank / tensor
    moe_flops = 2 * m.moe_layers * expert_tokens * m.expert_params
    # Absorbed MLA: per query head and attended key, QK over the latent + rope dims, PV over
    # the latent dims (FlashMLA's FLOP count).
    attn_flops = 2 * m.layers * (m.heads / tensor) * tokens_rank * m.attended(ctx) \
        * (m.latent + m.latent_v)
    eta_decode = ETA_DECODE_COMPUTE_BY_GPU.get(gpu.id, ETA_DECODE_COMPUTE)
    peak = (gpu.bf16_tflops if bf16 else gpu.fp8_tflops) * 1e12 * eta_decode
    moe_bf16 = bf16 if moe is None else moe.bf16
    moe_peak = (gpu.bf16_tflops if moe_bf16 else gpu.fp8_tflops) * 1e12 * eta_decode
    attn_peak = gpu.bf16_tflops * 1e12 * ETA_ATTN * (ATTN_FP8_SPEEDUP if attn_fp8 else 1.0)
    domain = nvlink_domain(gpu, gpus_per_node, mnnvl)
    dispatch = combine = latency = allreduce = 0.0
    moe_latency = 0.0                    # per MoE layer: the token exchange's latency floors
    if expert:
        ep = tensor * data
        copies = m.moe_layers * tokens_rank * m.topk / tensor * m.hidden   # elements per step
        remote = max(0, ep - domain) / ep if ep > 1 else 0.0
        rate = 1 / (remote / (inter_gbps / 8 * 1e9 * ETA_A2A)
                    + (1 - remote) / (gpu.nvlink_gbps / 2 * 1e9 * ETA_NVLINK))
        dispatch = copies * 1 / rate                      # FP8 activations
        combine = copies * 2 / rate                       # BF16 outputs
        kernel = all2all not in GATHER_BACKENDS
        moe_latency = 2 * (costs.a2a_latency_s if kernel else costs.gather_latency_s)
        if not kernel and data > 1 and engine == "sglang":
            moe_latency += costs.ep_moe_layer_s
        latency += m.moe_layers * moe_latency
    elif data > 1:
        # MoE TP under attention DP: every GPU all-gathers the other ranks' tokens (BF16) and
        # reduce-scatters their outputs back, per MoE layer (SGLang dp_gather / dp_scatter,
        # vLLM's naive all-gather / reduce-scatter over DP).
        ep = tensor * data
        remote = max(0, ep - domain) / ep
        rate = 1 / (remote / (inter_gbps / 8 * 1e9 * ETA_A2A)
                    + (1 - remote) / (gpu.nvlink_gbps / 2 * 1e9 * ETA_NVLINK))
        moved = m.moe_layers * tokens_rank * (data - 1) * m.hidden * 2        # bytes each way
        dispatch = combine = moved / rate
        moe_latency = 2 * costs.gather_latency_s
        latency += m.moe_layers * moe_latency
    if tensor > 1:
        ar = 2 * m.layers * 2 * tokens_rank * m.hidden * 2 * (tensor - 1) / tensor
        allreduce = ar / _tp_link(gpu, tensor, gpus_per_node, inter_gbps, mnnvl)
        latency += 2 * m.layers * costs.allreduce_latency_s
    draft_s = 0.0
    if draft:
        draft_s = _draft_passes(
            m, drafter, batch, draft, tokens_rank,
            layer=(nonexpert_bytes / m.layers + expert_read / max(m.moe_layers, 1)) / hbm,
            head=m.lm_head_bytes / tensor / hbm,
            per_token=(dense_flops / peak + moe_flops / moe_peak) / tokens_rank / m.layers,
            a2a_token=(dispatch + combine) / max(m.moe_layers, 1) / tokens_rank,
            moe_latency=moe_latency)
    return StepTerms(weights=(nonexpert_bytes + expert_read) / hbm, kv=kv_read / hbm,
                     weights_half=(nonexpert_bytes + expert_bytes(tokens_rank / 2)) / hbm,
                     gemm=dense_flops / peak + moe_flops / moe_peak,
                     moe_gemm=moe_flops / moe_peak,
                     attn=attn_flops / attn_peak, dispatch=dispatch, combine=combine,
                     latency=latency, allreduce=allreduce, draft=draft_s,
                     slices=m.moe_layers * slices * costs.moe_slice_s,
                     fixed=m.layers * (costs.decode_layer(persistent_mla)
                                       + (fixed.SPARSE_DECODE_LAYER_S if m.sparse_mla
                                          else 0.0)))


def _draft_passes(m: ModelShape, drafter: str, batch: int, draft: int, tokens_rank: float, *,
                  layer: float, head: float, per_token: float, a2a_token: float,
                  moe_latency: float) -> float:
    """Seconds of a decode step's speculative draft passes. The MTP module's passes: one over
    the step's accepted and drafted tokens (SGLang's draft extend; vLLM's first propose step),
    then one per further draft token over the batch; each is one decoder layer (``layer``: its
    share of the weights read; ``per_token``: its GEMM time per token; ``a2a_token``: its
    all-to-all per token and ``moe_latency``) and the LM head (``head``). SGLang runs k draft
    passes after the extend (speculative/eagle_worker.py), vLLM k - 1 (v1/spec_decode/eagle.py
    propose). DSpark proposes the whole block in one forward of its layer stack
    (sgl-project/sglang#29538)."""
    if drafter == "dspark":
        passes = [(batch * draft, DSPARK_LAYERS)]
    else:
        passes = [(tokens_rank, 1)] + [(batch, 1)] * (
            draft if drafter == "sglang_mtp" else draft - 1)
    return sum(max(layers * layer + head, layers * per_token * tokens) + DRAFT_PASS_S
               + layers * (moe_latency + a2a_token * tokens) for tokens, layers in passes)


def decode_step(m: ModelShape, gpu: Gpu, *, overlap: str | None = None, **kw) -> tuple[float, str]:
    """Time of one decode step of one DP rank (seconds) and the binding term's name
    (:func:`decode_terms` for the arguments, :meth:`StepTerms.total` for ``overlap``)."""
    return decode_terms(m, gpu, **kw).total(overlap)


def nvlink_domain(gpu: Gpu, gpus_per_node: int, mnnvl: bool = True) -> int:
    """GPUs that reach each other over NVLink (or xGMI): the node, or the rack-scale domain of
    an NVL72 system (catalog ``scaleup_gpus``: 72 for GB200/GB300) when larger and the pods use
    it (``mnnvl``: they claim a ComputeDomain IMEX channel; without one NCCL and DeepEP cross
    trays over the NIC: vllm PR#16992, PR#27328, ai-dynamo/dynamo PR#6364)."""
    return max(gpus_per_node, gpu.scaleup_gpus if gpu.nvlink and mnnvl else 1)


def _tp_link(gpu: Gpu, tensor: int, gpus_per_node: int, inter_gbps: float,
             mnnvl: bool = True) -> float:
    """Bytes/s of a TP all-reduce ring: NVLink (one direction of it) within the NVLink domain,
    the RDMA network across it."""
    if tensor > nvlink_domain(gpu, gpus_per_node, mnnvl):
        return inter_gbps / 8 * 1e9 * ETA_NET
    return gpu.nvlink_gbps / 2 * 1e9 * ETA_NVLINK


@dataclass(frozen=True)
class PrefillEstimate:
    """Prefill of one request on one instance: latency (s), throughput (requests/s) and the term
    that binds it (``prefill compute``, ``prefill expert all-to-all network``, ``prefill tensor
    all-reduce``)."""

    latency_s: float
    requests_per_s: float
    bound: str = "prefill compute"
    #: The prefill step's fixed cost (:attr:`FixedCosts.prefill_layer_s` x layers), s, and one
    #: request's GPU time on its rank, s: latency_s = :func:`step_time` (step_s, work_s) (a GPU
    #: busy with longer kernels hides their launches).
    step_s: float = 0.0
    work_s: float = 0.0
    #: The per-request cost off the GPU (:attr:`FixedCosts.request_s`), part of TTFT, s.
    request_s: float = 0.0
    #: Prefill steps one request takes on its rank (its tokens over the per-rank chunk, at least
    #: one: :func:`prefill` ``chunk_tokens``); each pays ``step_s``.
    chunks: int = 1
    #: The request's tokens over the per-rank chunk, for batches of several requests per rank
    #: (perf/interleave.py).
    chunk_share: float = 0.0


def prefill(m: ModelShape, gpu: Gpu, *, isl: int, tensor: int, data: int, pipeline: int,
            expert: bool, gpus_per_node: int, inter_gbps: float, weights_bytes: float,
            bf16: bool, overlap: str | None = None, mnnvl: bool = True,
            batch_tokens: int = 8192, graphs: bool = False,
            moe: MoeKernel | None = None, chunk_tokens: int | None = None) -> PrefillEstimate:
    """Prefill of ``isl`` tokens on an instance of tensor x data x pipeline GPUs.

    One request runs on one data-parallel rank (attention, dense layers) while its MoE layers
    spread over the expert-parallel group; pipeline stages overlap the chunks of a long prompt.
    GPU time per request: GEMMs (dense + routed experts, 2 x active parameters x isl) at the FP8
    (BF16) peak x :data:`ETA_PREFILL` (per GPU family; 4-bit experts on GPUs without FP4 at
    :data:`DEQUANT_4BIT_PREFILL` of it), causal attention at the BF16 peak x :data:`ETA_ATTN`,
    TP all-reduces over NVLink (or RDMA), and the expert all-to-all: DeepEP's normal kernels
    send a token once to each remote node holding one of its experts (:func:`_nodes_hit`) at the
    RDMA rate x :data:`ETA_A2A`, and to each GPU holding one within the NVLink domain at the
    per-direction NVLink rate x :data:`ETA_NVLINK`, the two concurrently; FP8 out, BF16 back.
    Throughput keeps every GPU busy: GPUs / GPU time per request, where ``two_batch`` overlap
    hides :data:`OVERLAP_TWO_BATCH` of the shorter of computation and all-to-all. Latency is one
    request on its rank, at least one read of the GPU's weights, and at least the prefill step's
    fixed cost (:attr:`FixedCosts.prefill_layer_s` per layer, + ``dp_sync_layer_s`` under
    attention DP: the kernel launches from Python, which a GPU busy with longer kernels hides;
    with ``graphs``, a prefill step replayed from CUDA graphs as vLLM V1's piecewise graphs do
    unless enforce-eager, ``decode_layer_s`` per layer).

    Chunked prefill: a step of one DP rank carries at most ``chunk_tokens`` prompt tokens
    (:func:`prefill_chunk`; default ``batch_tokens``, the sizing's profile batch), and both
    engines fill it, cutting the last request that does not fit and carrying its rest to the
    next step (SGLang 0.5.23 python/sglang/srt/managers/schedule_policy.py ``add_one_req``:
    its admission is cut at ``rem_chunk_tokens``; vLLM 0.33.0 vllm/v1/core/sched/scheduler.py
    ``token_budget``). Latency (TTFT): the request's own chunks run one after another, one step
    each, ceil(isl / chunk) steps with their launches. Throughput: the chunks of different
    requests share steps, so a request takes isl / chunk steps' launches, a fraction of one
    step for a short prompt.

    DeepSeek-V3.2 (``m.sparse_mla``) prefills in the sparse path: its lightning indexer scores
    every earlier token (``indexer_heads`` x ``indexer_dim``, FP8) and MLA runs in the absorbed
    latent form (query-key over kv_lora + rope, value over kv_lora, as in decode) over at most
    the indexer's top-k keys, both at :data:`ETA_SPARSE_PREFILL` of the FP8 / BF16 peak.
    """
    costs = fixed_costs(gpu)
    gemm_peak = (gpu.bf16_tflops if bf16 else gpu.fp8_tflops) * 1e12 \
        * ETA_PREFILL_BY_GPU.get(gpu.id, costs.prefill_eta or ETA_PREFILL)
    attn_peak = gpu.bf16_tflops * 1e12 * ETA_ATTN
    moe_flops = 2 * m.topk * m.moe_layers * m.expert_params * isl
    dense = 2 * m.active_params * isl - moe_flops
    if m.sparse_mla:
        # Attention and indexer at the sparse kernels' rate, expressed at attn_peak.
        attn = (2 * m.layers * m.heads * m.causal_pairs(isl) * (m.latent + m.latent_v)
                + 2 * m.layers * m.indexer_heads * m.indexer_dim * isl * isl / 2
                * gpu.bf16_tflops / gpu.fp8_tflops) * ETA_ATTN / ETA_SPARSE_PREFILL
    else:
        attn = 2 * m.layers * m.heads * m.causal_pairs(isl) * (m.qk_head + m.v_head)
    rank_gpus = tensor * pipeline
    moe_gpus = rank_gpus * data      # EP, or MoE TP over the tensor x data group
    # The experts' kernel (perf/kernels.py): its own peak; 4-bit weights dequantized into an
    # FP8 loop at DEQUANT_4BIT_PREFILL of it; a weight-only W4A16 grouped GEMM at W4A16_PREFILL
    # of the BF16 peak.
    if moe is None:
        moe = MoeKernel("", bf16, dequant=m.expert_bits == 4 and not gpu.fp4 and not bf16)
    moe_peak = (gpu.bf16_tflops if moe.bf16 else gpu.fp8_tflops) * 1e12 \
        * ETA_PREFILL_BY_GPU.get(gpu.id, costs.prefill_eta or ETA_PREFILL) \
        * (DEQUANT_4BIT_PREFILL if moe.dequant else 1.0) * (W4A16_PREFILL if moe.w4a16 else 1.0)
    compute = dense / gemm_peak + moe_flops / moe_peak + attn / attn_peak    # GPU-seconds per request
    allreduce = a2a = 0.0                                           # GPU-seconds per request
    if tensor > 1:
        per_gpu = 2 * m.layers / pipeline * isl * m.hidden * 2 * 2 * (tensor - 1) / tensor
        allreduce = rank_gpus * per_gpu / _tp_link(gpu, tensor, gpus_per_node, inter_gbps,
                                                   mnnvl)
    ep = tensor * data if expert else 1
    if ep > 1:
        domain = nvlink_domain(gpu, gpus_per_node, mnnvl)
        nodes = -(-ep // domain)
        per_copy = isl * m.moe_layers * m.hidden * 3                # FP8 out + BF16 back
        rdma = per_copy * _nodes_hit(m, nodes) * (nodes - 1) / nodes \
            / (inter_gbps / 8 * 1e9 * ETA_A2A) if nodes > 1 else 0.0
        local = min(ep, domain)
        gpus_hit = local * (1 - (1 - 1 / local) ** m.topk)          # within the token's domain
        nvl = per_copy * gpus_hit * (1 - 1 / local) / (gpu.nvlink_gbps / 2 * 1e9 * ETA_NVLINK)
        a2a = max(rdma, nvl)
    comm = allreduce + a2a
    rank_t = (dense / gemm_peak + attn / attn_peak) / rank_gpus \
        + moe_flops / (moe_gpus * moe_peak) \
        + comm / rank_gpus
    rank_t = max(rank_t, weights_bytes / (gpu.hbm_gbps * 1e9 * (costs.hbm_eta or ETA_HBM)))
    eager = costs.prefill_layer_s + (costs.dp_sync_layer_s if data > 1 else 0.0)
    step_s = m.layers * ((costs.decode_layer_s if graphs else eager)
                         + (fixed.SPARSE_PREFILL_LAYER_S if m.sparse_mla else 0.0)
                         + (fixed.COMPRESSED_PREFILL_LAYER_S if m.compressed and not graphs
                            else 0.0))
    # Steps per request at full load: the request's share of the steps whose chunks it fills
    # (chunked prefill, the docstring).
    chunk = max(chunk_tokens or batch_tokens, 1)
    share = isl / chunk
    steps = share
    gpus = tensor * data * pipeline
    hidden = OVERLAP_TWO_BATCH * min(compute, a2a) if overlap == "two_batch" else 0.0
    work = compute + comm - hidden                           # GPU-seconds per request
    launches = step_s * rank_gpus * steps
    busy = step_time(launches, work)
    bound = "prefill compute" if compute >= comm else \
        "prefill expert all-to-all network" if a2a >= allreduce else "prefill tensor all-reduce"
    # Latency: a prompt longer than the per-rank chunk prefills in that many steps, each with
    # its own launches: c x step_time(step_s, rank_t / c) = step_time(c x step_s, rank_t).
    chunks = max(1, math.ceil(share - 1e-9))
    return PrefillEstimate(step_time(chunks * step_s, rank_t), gpus / busy, bound, step_s,
                           rank_t, costs.request_s, chunks, share)




def prefill_chunk(engine: str, batched_tokens: int, data: int) -> int:
    """The prompt tokens one prefill step of one DP rank carries (chunked prefill): SGLang's
    ``chunked_prefill_size`` (``batched_tokens``) divided by the attention-DP size
    (python/sglang/srt/arg_groups/parallel_hook.py, 0.5.23); vLLM's ``max_num_batched_tokens``,
    the budget of each DP rank's own engine core and scheduler (vllm/v1/core/sched/scheduler.py
    ``max_num_scheduled_tokens``, 0.33.0)."""
    if engine == "sglang" and data > 1:
        return max(1, batched_tokens // data)
    return max(1, batched_tokens)


def kv_transfer_time(isl: int, kv_bytes_per_token: float, inter_gbps: float,
                     readers: int = 1) -> float:
    """Seconds to move one request's KV cache from prefill to decode over the network: each
    decode GPU's share (``kv_bytes_per_token``, per decode GPU: MLA's latent whole on every TP
    rank) from one prefill GPU over that GPU's NIC (``inter_gbps``, per GPU), ``readers`` decode
    GPUs reading from the same prefill GPU (:func:`kv_readers`) sharing its NIC."""
    return readers * isl * kv_bytes_per_token / (inter_gbps / 8 * 1e9 * ETA_NET)


def kv_readers(prefill_tensor: int, decode_tensor: int) -> int:
    """Decode GPUs that pull their KV from one prefill GPU at once: decode TP / prefill TP
    when decode's attention TP is the larger, else 1. vLLM's NixlConnector maps decode TP rank
    r to prefill rank r x P / D, and for MLA reads one rank's replicated cache
    (vLLM 0.33.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/tp_mapping.py
    ``compute_tp_mapping``: "For MLA, we only need one remote since cache is duplicated"); a
    head-sharded (GQA) cache is read the same way, the D / P decode ranks each taking a slice
    of that prefill rank's heads. SGLang's Mooncake and NIXL backends resolve the same mapping
    (SGLang 0.5.23 python/sglang/srt/disaggregation/common/conn.py ``_resolve_rank_mapping``:
    one ``target_tp_rank`` per decode rank, ``required_dst_info_num`` = D / P decode ranks per
    prefill rank; its MLA KV sharding across prefill ranks, ``enable_kv_cache_sharding``, is not
    read). Either way the bytes a prefill GPU sends go through its own NIC, not the node's."""
    return max(1, decode_tensor // max(prefill_tensor, 1))
