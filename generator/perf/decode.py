"""The decode side of the performance model: a decoding role's operating point and its curve.

:func:`decode_estimate` times one decode step of a sized role with :mod:`terms`
(``decode_step``) at the batch its load implies; :class:`DecodeCurve` gives TPOT as a function of
the batch per rank, padded to the engine's CUDA-graph capture sizes; :func:`model_shape` is the
model config as the performance model sees it. Times in seconds unless named ``_ms``.
"""

from __future__ import annotations

import bisect
import functools
import math

from ..catalog import GPUS, ModelArch
from ..engines.options import option_flags, option_value
from ..roles import RoleInput
from ..sizing import RoleSizing
from ..sizing.params import inventory
from ..sizing.weights import tensor_bytes
from ..spec.request import PlanRequest, Speculation
from . import terms as perf
from .kernels import moe_kernel

#: Upper bound of the decode batch per DP rank the search considers (SGLang/vLLM graph sizes).
MAX_BATCH_PER_RANK = 512


#: SGLang attention backends whose MLA decode computes in FP8 with an FP8 KV cache (q quantized
#: to FP8: python/sglang/srt/layers/attention/flashmla_backend.py, 0.5.1-0.5.23). SGLang's
#: default for MLA on Hopper is fa3, which upcasts the FP8 cache to BF16
#: (layers/attention/flashattention_backend.py ``get_key_buffer(...).to(q.dtype)``).
SGLANG_FP8_MLA_BACKENDS = frozenset({"flashmla"})


def attention_fp8(engine: str, kv_cache_dtype: str | None, sparse: bool,
                  engine_args: list[str] | tuple = ()) -> bool:
    """Decode attention runs at the FP8 rate: an FP8 KV cache with a dense-MLA kernel that
    computes in FP8. vLLM: FlashMLA, its MLA backend on Hopper, quantizes q to FP8 with an FP8
    cache in every supported release (vllm/v1/attention/backends/mla/common.py
    ``scaled_fp8_quant``, 0.11.0; ``flash_mla_with_kvcache_fp8`` from 0.16.0). SGLang: only with
    ``--attention-backend`` / ``--decode-attention-backend`` flashmla in the role's engineArgs
    (:data:`SGLANG_FP8_MLA_BACKENDS`). Sparse attention (DeepSeek-V3.2/V4) dequantizes its FP8
    cache and computes in BF16 (FlashMLA's sparse FP8 kernels) in both engines."""
    if not (kv_cache_dtype or "").startswith("fp8") or sparse:
        return False
    if engine == "vllm":
        return True
    return decode_attention_backend(engine_args) in SGLANG_FP8_MLA_BACKENDS


def decode_attention_backend(engine_args: list[str] | tuple) -> str | None:
    """The SGLang attention backend a role's decode runs, from its engineArgs:
    ``--decode-attention-backend`` over ``--attention-backend`` (python/sglang/srt/arg_groups,
    0.5.23: the decode backend defaults to the attention backend); None: the engine's default."""
    chosen = {}
    args = list(engine_args)
    for j, a in option_flags(args):
        flag = a.partition("=")[0]
        if flag in ("--attention-backend", "--decode-attention-backend"):
            chosen[flag] = option_value(args, j)
    return chosen.get("--decode-attention-backend", chosen.get("--attention-backend"))


#: Heads per GPU at which SGLang's ROCm MLA decode keeps AITER's non-persistent kernel with a
#: BF16 KV cache (python/sglang/srt/layers/attention/aiter_backend.py, AiterAttnBackend
#: ``__init__``, 0.5.23: "only use mla_ps_kernel when fp8 kv_cache; for non-fp8 kv_cache on tp8,
#: use non-persistent kernel to avoid performance degradation"; 16 is DeepSeek's 128 heads at
#: TP8, 128 at attention TP1; fewer than 16 heads are padded to 16). SGLang picks the AITER
#: backend for MLA on ROCm only when the KV heads over ``--tp`` are one of these too, else
#: triton (python/sglang/srt/arg_groups/model_override_base.py, the MLA branch of the default
#: attention backend, 0.5.23: "current aiter only support head number 16 or 128").
AITER_MLA_HEADS = frozenset({16, 128})


def kv_heads_of(arch: ModelArch) -> int:
    """The config's ``num_key_value_heads`` as SGLang reads it for its attention-backend choice:
    MLA configs state the query heads, GQA its KV heads, DeepSeek-V4 its one KV head."""
    return arch.attention.heads if arch.attention.kind == "mla" else arch.attention.kv_heads


def persistent_mla(engine: str, gpu, kv_cache_dtype: str | None, heads_per_gpu: int,
                   kv_heads_per_tp: int | None = None, engine_args: list[str] | tuple = ()
                   ) -> bool:
    """A decode step's MLA runs AITER's persistent ASM kernel (``mla_decode_fwd`` with a
    persistent work plan, ``SGLANG_AITER_MLA_PERSIST`` on by default): SGLang on an AMD GPU whose
    attention backend is AITER (the default when ``kv_heads_per_tp``, the model's KV heads over
    SGLang's ``--tp`` = tensor x data, is 16 or 128; ``--attention-backend`` or
    ``--decode-attention-backend`` aiter in ``engine_args``), with an FP8 KV cache, or with a
    BF16 one at a head count per GPU (``heads_per_gpu`` = heads / attention TP, padded to at
    least 16) outside :data:`AITER_MLA_HEADS`. Its per-layer fixed cost is
    :attr:`fixed.FixedCosts.persistent_decode_layer_s`. vLLM on ROCm and NVIDIA GPUs: False.
    Not modelled: AITER's zero-padded head counts (12 per GPU run persistent with BF16) and
    decode context parallelism (persistent always). The rule is read from 0.5.23; the runs the
    persistent cost is fitted to are 0.5.19 and (the non-persistent one) 0.5.7, whose backends
    keep the same 16/128 head choice."""
    if engine != "sglang" or gpu.vendor != "amd":
        return False
    backend = decode_attention_backend(engine_args)
    if backend is None:
        backend = "aiter" if kv_heads_per_tp is None or kv_heads_per_tp in AITER_MLA_HEADS \
            else "triton"
    if backend != "aiter":
        return False
    if (kv_cache_dtype or "").startswith("fp8"):
        return True
    return max(16, heads_per_gpu) not in AITER_MLA_HEADS


#: vLLM's dual-batch overlap engages only above these tokens per rank per step
#: (ParallelConfig.dbo_decode_token_threshold / dbo_prefill_token_threshold defaults,
#: vllm/config/parallel.py; vllm/v1/worker/ubatch_utils.py).
VLLM_DBO_DECODE_TOKENS = 32


def effective_overlap(engine: str, role: RoleInput, tokens_per_rank: int) -> str | None:
    """The overlap a decode step actually runs with: ``moe.overlap``, except where the engine
    silently skips it: vLLM DBO below :data:`VLLM_DBO_DECODE_TOKENS` tokens per rank, SGLang
    TBO on DeepSeek-V4 decode (prefill-only there: models/deepseek_v4.py ``_can_run_tbo``,
    0.5.23)."""
    mode = role.moe.overlap if role.moe is not None else None
    if mode == "two_batch":
        if engine == "vllm" and tokens_per_rank < VLLM_DBO_DECODE_TOKENS:
            return None
        if engine == "sglang" and role.arch.compressed_attention:
            return None
    return mode


@functools.lru_cache(maxsize=256)
def model_shape(arch: ModelArch, fmt: str, kv_bytes_per_token: float) -> perf.ModelShape:
    """The performance model's view of a model in checkpoint format ``fmt`` with
    ``kv_bytes_per_token`` of KV per token per GPU (from its capabilities; memoized).

    Attention widths: MLA decodes in latent form (query-key over kv_lora + rope, value over
    kv_lora) and prefills over nope + rope / v; GQA and DeepSeek-V4 over head_dim both ways.
    Sparse attention (DeepSeek-V3.2, GLM-5, V4) attends to the indexer's top-k (+ V4's
    window)."""
    inv = inventory(arch)
    at, moe = arch.attention, arch.moe
    moe_tensors = [t for t in inv.kinds[inv.layer_kinds[-1]] if t.component == "routed_experts"]
    expert_params = sum(t.out_dim * t.in_dim for t in moe_tensors)
    expert_bytes = sum(tensor_bytes(t, fmt) / t.experts for t in moe_tensors)
    total = inv.total_params()
    routed = inv.component_params().get("routed_experts", 0)
    moe_layers = sum(n for k, n in inv.kind_counts().items()
                     if any(t.component == "routed_experts" for t in inv.kinds[k]))
    active = total - routed + moe_layers * moe.top_k * expert_params
    if at.kind == "mla":
        latent, latent_v = at.kv_lora_rank + at.qk_rope_head_dim, at.kv_lora_rank
    else:
        latent = latent_v = at.head_dim
    window = at.index.topk + at.window if at.index is not None else None
    return perf.ModelShape(active_params=active, layers=arch.num_layers,
                           moe_layers=moe_layers, hidden=arch.hidden_size, heads=at.heads,
                           topk=moe.top_k, experts=moe.experts, expert_bytes=expert_bytes,
                           expert_params=expert_params, kv_bytes_per_token=kv_bytes_per_token,
                           qk_head=at.head_dim, v_head=at.v_head_dim, latent=latent,
                           attn_window=window, n_group=moe.groups, topk_group=moe.topk_group,
                           lm_head_bytes=2.0 * arch.vocab_size * arch.hidden_size,
                           expert_bits=4 if fmt in ("w4a8", "mxfp4", "nvfp4", "nvfp4-v2",
                                                    "w4a16")
                           else 16 if fmt == "bf16"
                           else 8, latent_v=latent_v,
                           sparse_mla=arch.sparse_attention,
                           compressed=arch.compressed_attention,
                           indexer_heads=at.index.heads if at.index is not None else 0,
                           indexer_dim=at.index.dim if at.index is not None else 0)


#: Checkpoint formats whose GEMMs run in BF16: unquantized, and weight-only 4-bit (``w4a16``:
#: BF16 activations, the INT4 experts dequantized in the Marlin/Humming/Triton W4A16 kernels,
#: every other tensor BF16; generator/sizing/formats.py).
BF16_COMPUTE = ("bf16", "w4a16")


def bf16_compute(weights: str) -> bool:
    """Whether the perf model times ``weights``' GEMMs at the BF16 peak (else the FP8 one)."""
    return weights in BF16_COMPUTE


def draft_tokens(req: PlanRequest, role: RoleInput) -> int:
    """MTP draft tokens per step of a decoding role: the role's own speculative config, else
    the request's (0 without MTP layers or for prefill)."""
    if role.mode == "prefill" or not role.arch.mtp_layers:
        return 0
    if role.speculative is not None:
        return role.speculative.numSpeculativeTokens
    return req.spec.speculative.numSpeculativeTokens if req.spec.speculative else 0


#: The smallest maxModelLen the spec takes (docs/spec.md §2 ``serving.maxModelLen`` >= 16).
MIN_MODEL_LEN = 16


def workload_max_len(arch, wl) -> int:
    """The maxModelLen a request shape needs: input + output tokens, within the model's context
    and at least :data:`MIN_MODEL_LEN`."""
    return max(MIN_MODEL_LEN, min(arch.max_position_embeddings, wl.inputTokens + wl.outputTokens))


def drafter(req: PlanRequest) -> str:
    """The draft-pass pattern of the decoding roles (:func:`perf.decode_terms`): ``dspark`` when the
    request plans DSpark (for every decoding role; PLN004 limits it to SGLang), else the
    engine's MTP loop."""
    spec = req.spec.speculative
    if spec is not None and spec.method == "dspark":
        return "dspark"
    return "sglang_mtp" if req.spec.engine.name == "sglang" else "vllm_mtp"


def decode_estimate(req: PlanRequest, role: RoleInput, z: RoleSizing, pool,
                    per_rank_needed: int | None, ranks: int = 1,
                    engine_args: list[str] | tuple = ()) -> perf.DecodeEstimate | None:
    """Decode operating point of a sized role over ``ranks`` DP ranks in total (``engine_args``:
    the role's engineArgs, for the attention backend).

    * concurrency given: ``per_rank_needed`` sequences per rank (None if they do not fit the KV
      cache at maxModelLen, the validator's rule);
    * requestsPerSecond given: the batch Little's law implies (rate x output tokens x TPOT over
      the ranks), solved by fixed-point iteration, capped by the KV cache;
    * neither: the largest batch within the TPOT SLO and the KV cache (saturation).
    """
    s = req.spec
    wl = s.workload
    ctx_avg = wl.inputTokens + wl.outputTokens / 2
    k = draft_tokens(req, role)
    # A role with MTP in a request without spec.speculative: the request's default acceptance.
    acceptance = (s.speculative or Speculation()).acceptance
    accepted = perf.accepted_per_step(k, acceptance) if k else 1.0
    gpu = GPUS[pool.gpu]
    shape = model_shape(role.arch, s.model.weights, z.kv_bytes_per_token)
    nonexpert = (z.weights - z.weights_by_component.get("routed_experts", 0)) * 2**30
    local = (z.weights_by_component.get("routed_experts", 0) * 2**30) / \
        max(shape.expert_bytes * shape.moe_layers, 1)
    cap_b = max(0, min(int(z.kv_tokens_per_rank // ctx_avg), MAX_BATCH_PER_RANK))
    lay = role.layout
    pp = lay.pipeline

    fp8_attn = attention_fp8(s.engine.name, role.serving.kvCacheDtype,
                             shape.attn_window is not None, engine_args)
    persistent = persistent_mla(s.engine.name, gpu, role.serving.kvCacheDtype,
                                shape.heads // max(lay.tensor, 1),
                                kv_heads_of(role.arch) // max(lay.tensor * lay.data, 1),
                                engine_args)

    moe = moe_kernel(s.engine.name, gpu, s.model.weights,
                     role.moe.all2all if role.moe else None, engine_args)

    def step(b):
        overlap = effective_overlap(s.engine.name, role, b * (1 + k))
        return perf.decode_step(shape, gpu, overlap=overlap, batch=b, tensor=lay.tensor,
                                data=lay.data, expert=lay.expert_parallel,
                                nonexpert_bytes=nonexpert,
                                local_experts_per_layer=local if lay.expert_parallel else 0,
                                ctx=ctx_avg, gpus_per_node=pool.gpusPerNode,
                                inter_gbps=s.network.interNodeGbps, draft=k,
                                bf16=bf16_compute(s.model.weights), attn_fp8=fp8_attn,
                                drafter=drafter(req), mnnvl=s.network.mnnvl,
                                all2all=role.moe.all2all if role.moe else None,
                                persistent_mla=persistent, engine=s.engine.name, moe=moe)
    if cap_b < 1:
        return None
    if per_rank_needed is not None:
        b = per_rank_needed
        # The validator's rule (SIZ003): the required sequences fit at the workload's mean
        # context (input + output / 2, within maxModelLen).
        if not z.holds(b, min(z.max_model_len, wl.inputTokens + wl.outputTokens // 2)):
            return None
    elif wl.requestsPerSecond:
        b = 1
        for _ in range(40):
            tpot = step(b)[0] * pp / accepted
            need = max(1, math.ceil(wl.requestsPerSecond * wl.outputTokens * tpot / (ranks * pp)))
            nb = min(need, cap_b)
            if nb == b:
                break
            b = nb
    else:
        b = cap_b
        if s.slo.tpotMs:
            while b > 1 and step(b)[0] * pp / accepted * 1000 > s.slo.tpotMs:
                b = int(b * 0.8)
    t, bound = step(b)
    tpot = t * pp / accepted
    return perf.DecodeEstimate(b, t, tpot, b * pp * accepted / (t * pp), bound)


#: Decode batch sizes the engines capture CUDA graphs for, below 256: vLLM
#: vllm/config/vllm.py default cudagraph_capture_sizes ``[1, 2, 4] + range(8, 256, 8)`` (0.33);
#: SGLang python/sglang/srt/arg_groups/cuda_graph_hook.py
#: ``generate_decode_cuda_graph_batch_sizes`` (0.5.23), finer with speculative decoding.
GRAPH_BATCHES = {
    "vllm": [1, 2, 4, *range(8, 256, 8)],
    "sglang": [1, 2, 4, 8, 12, *range(16, 257, 8)],
    "sglang-spec": [*range(1, 9), *range(10, 33, 2), *range(40, 65, 4), *range(72, 257, 8)],
}


@functools.lru_cache(maxsize=None)
def _graph_sequences(engine: str, draft: int) -> tuple[int, ...]:
    """The decode batches (sequences per step) the engine captures CUDA graphs for, below 256
    (:data:`GRAPH_BATCHES`): a step of b sequences runs at the next one. vLLM captures tokens:
    with ``draft`` speculative tokens a step of b sequences is b x (1 + draft) tokens, padded to
    the next capture size rounded up to a multiple of 1 + draft (vllm/config/compilation.py
    ``adjust_cudagraph_sizes_for_spec_decode``); SGLang captures sequences, from its finer list
    when it drafts."""
    if engine == "vllm" and draft:
        q = 1 + draft
        return tuple(sorted({-(-s // q) for s in GRAPH_BATCHES["vllm"]}))
    return tuple(GRAPH_BATCHES["sglang-spec" if engine == "sglang" and draft else engine])


class DecodeCurve:
    """TPOT of a decode role as a function of its batch per rank: affine between batch 1 and
    the sized batch B (the step is weights + per-sequence KV and compute; both ends are timed
    by the performance model), the batch padded up to the engine's next CUDA-graph size.
    ``ranks``: DP ranks x pipeline stages holding sequences. (A plain class with its slope and
    capture sizes precomputed: the planner evaluates it ~10^5 times per search.)"""

    __slots__ = ("t1", "tb", "b_max", "ranks", "slope", "sizes")

    def __init__(self, t1: float, tb: float, b_max: int, ranks: int, engine: str, draft: int):
        self.t1, self.tb, self.b_max, self.ranks = t1, tb, b_max, ranks
        self.slope = (tb - t1) / (b_max - 1) if b_max > 1 else 0.0
        self.sizes = _graph_sequences(engine, draft)

    def tpot(self, b: int) -> float:
        """TPOT (s) at ``b`` sequences per rank."""
        return self.t1 + self.slope * (b - 1) if self.b_max > 1 else self.tb

    def fed(self, rate: float, osl: int, stretch: float = 1.0) -> int | None:
        """The batch per rank that keeps ``rate`` requests/s decoding (Little's law: rate x OSL
        x TPOT(b) x stretch = ranks x b), padded to the next capture size, or None beyond the
        sized batch. ``stretch``: TPOT's slowdown by interleaved prefill (unified roles)."""
        a = rate * osl * stretch / self.ranks
        if self.b_max > 1:
            if a * self.slope >= 1:
                return None
            b = a * (self.t1 - self.slope) / (1 - a * self.slope)
        else:
            b = a * self.tb
        if b > self.b_max * (1 + 1e-9):
            return None
        n = math.ceil(b - 1e-9) if b > 1 else 1
        i = bisect.bisect_left(self.sizes, n)
        return min(self.sizes[i] if i < len(self.sizes) else n, self.b_max)


def decode_curve(req: PlanRequest, est: perf.DecodeEstimate, ranks: int, retime,
                 draft: int = 0) -> DecodeCurve:
    """The :class:`DecodeCurve` of a decode operating point ``est`` (its sized batch) over
    ``ranks``, ``draft`` speculative tokens per step; ``retime(batch)`` times batch 1 (None: a
    flat curve at ``est``)."""
    one = retime(1) if retime is not None and est.batch_per_rank > 1 else None
    return DecodeCurve(one.tpot_s if one else est.tpot_s, est.tpot_s, est.batch_per_rank,
                       ranks, req.spec.engine.name, draft)
