"""The fixed costs of the performance model: what does not scale with bytes or FLOPs, per GPU
family (:class:`FixedCosts`, :data:`FIXED_COSTS`), DeepSeek-V3.2's sparse-attention kernels per
layer, and how a prefill step's kernel launches overlap its GPU work (:func:`step_time`). Every
constant names the published figures it is fitted to (bench/fit_constants.py over the
development split of bench/published_cases.yaml). Seconds."""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import Gpu

#: Fixed cost of a decode step of a 61-layer model on Hopper, s (scheduler, sampler, kernel
#: launches under CUDA graphs): the Hopper row of :data:`FIXED_COSTS` (``decode_layer_s`` x 61).
STEP_OVERHEAD_S = 0.003
#: Latency of one TP all-reduce of a decode step (one-shot custom all-reduce over NVLink), s,
#: and of one DeepEP low-latency dispatch or combine, s. Two of each per layer. Calibrated with
#: seed 002's batch-1 TP8 (271 tokens/s) and DP16-EP16 (27.4 ms TPOT) figures.
ALLREDUCE_LATENCY_S = 15e-6
A2A_LATENCY_S = 25e-6


@dataclass(frozen=True)
class FixedCosts:
    """The fixed costs of serving on one GPU family: what does not scale with bytes or FLOPs.
    Seconds.

    Attributes:
        decode_layer_s: per decoder layer of a decode step: the step's kernel chain under CUDA
            graphs (launch gaps, kernel tails, the scheduler and sampler spread over the layers).
        prefill_layer_s: per decoder layer of a prefill step: a prefill forward runs outside the
            captured decode graphs (SGLang and vLLM capture decode batches only by default), so
            each of the layer's kernels is launched from Python.
        request_s: per request, off the GPU: the HTTP server, tokenization, the scheduler's
            receive and the first streamed chunk (detokenizer, SSE).
        moe_slice_s: per routed-expert slice a decode step reads (per layer and hit expert: the
            whole expert under expert parallelism, a 1/TP column slice under tensor
            parallelism), on top of its bytes at terms.ETA_HBM: the grouped GEMM's tile
            prologue and epilogue, which a short slice does not amortize. The MoE's bandwidth
            efficiency as a function of the slice each GPU reads: bytes / (bytes / (BW x
            ETA_HBM) + moe_slice_s).
        allreduce_latency_s, a2a_latency_s: one TP all-reduce / one expert all-to-all (dispatch
            or combine) of a decode step.
        hbm_eta: fraction of the HBM bandwidth decode reaches (None: terms.ETA_HBM).
        prefill_eta: fraction of the FP8 (BF16) peak prefill GEMMs reach (None:
            terms.ETA_PREFILL, fitted on Hopper; Blackwell's and AMD's are fitted to their
            own figures, :data:`FIXED_COSTS`).
        gather_latency_s: one token gather or scatter of a decode step under expert parallelism
            without an all-to-all kernel, or of MoE tensor parallelism under attention DP (two
            per MoE layer): SGLang's attention-DP MoE gathers every rank's
            tokens and scatters the outputs back (layers/dp_attention.py ``dp_gather_partial``
            / ``dp_scatter``, all-reduces of the padded global batch); vLLM's
            ``allgather_reducescatter`` all-gathers and reduce-scatters them. DeepEP's
            dispatch and combine take :attr:`a2a_latency_s` instead.
        dp_sync_layer_s: per decoder layer of a prefill step under attention DP, on top of
            ``prefill_layer_s``: every rank joins the step (ranks without work run a dummy
            batch, none of them from a captured graph) and the MoE gathers all ranks' tokens
            and scatters them back, two collectives launched eagerly.
        ep_moe_layer_s: per MoE layer of an SGLang decode step under attention DP with expert
            parallelism and no all-to-all kernel (the token gather path), on top of its two
            :attr:`gather_latency_s`: that path's own fixed cost where a family's figures show
            one (AMD; 0 elsewhere).
        persistent_decode_layer_s: per decoder layer of a decode step whose MLA runs AITER's
            persistent ASM kernel on ROCm (decode.persistent_mla: SGLang's AITER attention
            backend with an FP8 KV cache, or BF16 at head counts other than 16 and 128), in
            place of ``decode_layer_s`` (None: the family has one kernel path).
    """

    decode_layer_s: float
    prefill_layer_s: float
    request_s: float
    moe_slice_s: float
    allreduce_latency_s: float = ALLREDUCE_LATENCY_S
    a2a_latency_s: float = A2A_LATENCY_S
    hbm_eta: float | None = None
    prefill_eta: float | None = None
    dp_sync_layer_s: float = 0.0
    gather_latency_s: float = A2A_LATENCY_S
    persistent_decode_layer_s: float | None = None
    ep_moe_layer_s: float = 0.0

    def decode_layer(self, persistent_mla: bool = False) -> float:
        """The per-layer fixed cost of a decode step, s: :attr:`persistent_decode_layer_s` when
        the step's MLA runs the persistent kernel and the family has that cost, else
        :attr:`decode_layer_s`."""
        if persistent_mla and self.persistent_decode_layer_s is not None:
            return self.persistent_decode_layer_s
        return self.decode_layer_s


#: :class:`FixedCosts` per GPU family (vendor, generation). Each constant names the published
#: figures it is fitted to (bench/published_cases.yaml, development split; bench/fit_constants.py
#: fits them group by group):
#:
#: * Blackwell: ``decode_layer_s``, ``moe_slice_s``, ``prefill_layer_s`` and ``request_s``
#:   (jointly with terms.ETA_PREFILL, the H20 prefill efficiency and
#:   :data:`PREFILL_LAUNCH_EXPOSED`) to the SGLang cookbook's R1 TP8 on 8 x B200, 1K/1K at
#:   concurrency 1 / 14 / 92 (TPOT per token 9.16 / 17.02 / 39.37 ms, TTFT median 141 / 132 /
#:   148 ms, 795 / 2,283 output tokens/s), with lmsys.org's EP32 prefill on H100 and Ant Group's
#:   TP8 prefill on H20-96G; lmsys.org 2025-06-16 (GB200 part I): small batches on a single B200
#:   node "have not been optimized yet". ``prefill_eta`` to vLLM's R1-NVFP4 prefill on GB300
#:   (22,476 tokens/s per GPU) and GB200 (26.2K). ``dp_sync_layer_s`` and ``gather_latency_s``
#:   (with :data:`SPARSE_DECODE_LAYER_S` / :data:`SPARSE_PREFILL_LAYER_S`) to the cookbook's
#:   Kimi-K2 DP4 at concurrency 1 (TPOT per token 15.84 ms, TTFT median 158 ms) and
#:   DeepSeek-V3.2 DP8-EP8 at concurrency 88 (TPOT per token 100.1 ms, 860 output tokens/s,
#:   TTFT median 444 ms) on 8 x B200. (TPOT per token: (mean E2E - mean TTFT) / (mean output
#:   - 1) of the published run, bench/published_cases.yaml ``stat: token-weighted``.)
#: * Hopper: ``decode_layer_s`` = :data:`STEP_OVERHEAD_S` / 61 (fitted with the EP decode
#:   figures: lmsys.org EP72 on H100, Ant Group EP16 on H20); the other terms as Blackwell:
#:   no Hopper TTFT, small-batch TP or unified attention-DP figure is in the development set.
#: * AMD (CDNA3/CDNA4): ``decode_layer_s`` (AITER's non-persistent MLA decode: BF16 KV cache at
#:   16 heads per GPU), ``persistent_decode_layer_s`` (its persistent kernel: FP8 KV cache;
#:   decode.persistent_mla), ``prefill_layer_s``, ``request_s`` and ``prefill_eta`` fitted
#:   together to the cookbook's DeepSeek-V3.1 TP8 on 8 x MI300X (SGLang 0.5.7, KV cache auto:
#:   BF16), 1K/1K at concurrency 1 / 14 / 91 (TPOT per token 23.90 / 35.10 / 73.30 ms, TTFT
#:   median 214 / 191 / 237 ms), and SemiAnalysis InferenceX's DeepSeek-R1 TP8 on 8 x MI325X
#:   (the MI300X's compute die; SGLang 0.5.19, FP8 KV cache), 8K/1K: TTFT at concurrency 4 / 8
#:   / 16 / 32 / 64 (mean 1,025 / 1,027 / 1,163 / 1,363 / 1,918 ms), TPOT 18.53 / 66.55 ms and
#:   24.9 / 114.9 output tokens/s per GPU at 4 / 64 (SemiAnalysisAI/InferenceX#3318). The
#:   persistent path costs 0.147 ms per layer against 0.344 (9.0 against 21.0 ms per 61-layer
#:   step), as SemiAnalysisAI/InferenceX PR #865 found for DeepSeek-R1 FP8 on MI355X ("the main
#:   factor for performance improvement: --kv-cache-dtype fp8_e4m3"); the one sweep it is fitted
#:   to also differs from the cookbook's in release (0.5.19 against 0.5.7), GPU and flags
#:   (--num-continuous-decode-steps 4), which it carries too. The 1K prompts pin the
#:   per-request and per-layer costs, the 7K prompts the prefill's compute rate:
#:   ``prefill_eta`` 0.038 of the 2,615 TFLOPS FP8 peak (~99 TFLOPS per GPU, against 0.386 on
#:   Hopper), SGLang's TP8 prefill on ROCm: block-scaled FP8 GEMMs through AITER's
#:   ``gemm_a8w8_blockscale`` on gfx942 (sgl-project/sglang#14043) and the fused-MoE expert
#:   GEMMs of 1/8 column slices with ~230 tokens per expert for one 7K-token prompt.
#:   ``moe_slice_s`` is set to 0: the fit drove it toward 0 on these figures. The TP all-reduce
#:   latency and the token gather are NVIDIA's (no AMD figure separates them from
#:   ``decode_layer_s`` and ``ep_moe_layer_s``). ``dp_sync_layer_s`` and ``ep_moe_layer_s`` to
#:   the cookbook's DeepSeek-V3 DP8-EP8 on 8 x MI300X at concurrency 88 (SGLang 0.5.7: TPOT per
#:   token 181.6 ms, 464 output tokens/s, TTFT median 477 ms), the only public figures of
#:   attention DP with expert parallelism on AMD: 0.93 ms per MoE layer for SGLang's EP path
#:   without DeepEP, which the same server's MoE-TP run under attention DP (EAGLE, held out) does
#:   not pay.
FIXED_COSTS = {
    ("nvidia", "hopper"): FixedCosts(decode_layer_s=STEP_OVERHEAD_S / 61,
                                     prefill_layer_s=1.363e-3, request_s=0.2547,
                                     moe_slice_s=0.349e-6, dp_sync_layer_s=0.559e-3,
                                     gather_latency_s=36.8e-6),
    ("nvidia", "blackwell"): FixedCosts(decode_layer_s=0.0967e-3, prefill_layer_s=1.06e-3,
                                        request_s=0.057, moe_slice_s=0.349e-6,
                                        prefill_eta=0.417, dp_sync_layer_s=0.559e-3,
                                        gather_latency_s=36.8e-6),
    ("amd", "*"): FixedCosts(decode_layer_s=0.344e-3, persistent_decode_layer_s=0.147e-3,
                             prefill_layer_s=2.13e-3, request_s=0.043, moe_slice_s=0.0,
                             prefill_eta=0.0380, dp_sync_layer_s=1.59e-3,
                             gather_latency_s=36.8e-6, ep_moe_layer_s=0.93e-3),
}


def fixed_costs(gpu: Gpu) -> FixedCosts:
    """The :class:`FixedCosts` of ``gpu``'s family (:data:`FIXED_COSTS`; NVIDIA GPUs other than
    Blackwell take the Hopper row)."""
    if gpu.vendor == "amd":
        return FIXED_COSTS[("amd", "*")]
    return FIXED_COSTS.get((gpu.vendor, gpu.generation), FIXED_COSTS[("nvidia", "hopper")])


#: Per decoder layer of a decode step, the fixed cost DeepSeek-V3.2's sparse attention adds: the
#: indexer's projections, its FP8 logits kernel, the top-k selection and the sparse MLA kernel,
#: each launched per layer (kernel tails that short contexts do not amortize). Fitted to the
#: SGLang cookbook's V3.2-Exp TP8 + EAGLE run on 8 x B200 at concurrency 1 (9.34 ms per token
#: at accept length 2.46).
SPARSE_DECODE_LAYER_S = 0.143e-3
#: The same per layer of a prefill step (its kernels launched from Python, as the rest of the
#: prefill step: :attr:`FixedCosts.prefill_layer_s`). Fitted to the same run's TTFT (median
#: 191 ms) and the cookbook's V3.2-Exp DP8-EP8 run on 8 x B200 (100.1 ms per token, TTFT median
#: 444 ms, 860 output tokens/s at concurrency 88).
SPARSE_PREFILL_LAYER_S = 1.15e-3
#: Per decoder layer of a prefill step run eagerly, the fixed cost DeepSeek-V4's compressed
#: attention adds: each layer launches the KV compressor (ratio-4 and ratio-128 layers), the
#: ratio-4 layers' indexer and its top-k, the sparse attention over compressed + window keys and
#: the hyper-connection mixing around attention and MoE from Python. Fitted to the SGLang
#: DeepSeek-V4 table's prefill-bound cells (published-dev-4 v02 / v04 / v05:
#: bench/fit_constants.py).
COMPRESSED_PREFILL_LAYER_S = 0.835e-3


#: Share of the shorter of a prefill step's kernel launches and its GPU work that the other
#: does not hide: launches hide behind kernels longer than a launch, short kernels (norms,
#: quantization, routing, the small GEMMs of a short prompt) wait for theirs. Fitted with the
#: prefill costs (bench/fit_constants.py): the SGLang cookbook's R1 TP8 TTFT on B200 and the
#: H100 / H20 prefill throughputs.
PREFILL_LAUNCH_EXPOSED = 0.325


def step_time(launches: float, work: float) -> float:
    """A prefill step of ``launches`` s of kernel launches from Python and ``work`` s of GPU
    time: the longer of the two plus :data:`PREFILL_LAUNCH_EXPOSED` of the shorter."""
    return max(launches, work) + PREFILL_LAUNCH_EXPOSED * min(launches, work)
