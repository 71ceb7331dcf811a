"""SGLang's memory budget for one GPU (0.5.x).

SGLang splits device memory with ``mem_fraction_static`` (mfs): weights + the KV pool live in
mfs x (free memory at start); activations, CUDA graphs and communication buffers live in the
rest (sgl-project/sglang@v0.5.23:python/sglang/srt/mem_cache/kv_cache_configurator.py:3038
``rest_memory``; docs/design.md §5)::

    pre          = free memory after distributed init  (torch total - CUDA context - NCCL)
    kv_pool      = pre x mfs - weights
    max_tokens   = kv_pool // cell_size                 (MLA latent x layers, + the draft's layers)

When mfs is not given, SGLang derives it from a reserve (``_handle_gpu_memory_settings`` of
server_args.py in 0.5.x; in 0.5.23 sgl-project/sglang@v0.5.23:python/sglang/srt/arg_groups/
memory_hook.py:47 ``handle_gpu_memory_settings``), by GPU memory tier:

    reserve_mb = 512 + 1.5 x max(chunked_prefill, 2048) + 2 x cuda_graph_max_bs + 1024 x tp x pp / 8
                 [+ 3 x cgmbs x dp with DP attention, + 1.5 x cgmbs x dp more when cgmbs > 300]
                 [+ 2048 with EAGLE/MTP]; at least 10,240 MB on GPUs > 60 GB
    mfs        = round((gpu_mem_mb - reserve_mb) / gpu_mem_mb, 3)

moegen renders ``--mem-fraction-static`` explicitly: SGLang's own default when
``gpuMemoryUtilization`` is not set, else the fraction that leaves utilization x total for the
engine after the memory outside the pool (activation, CUDA graphs, DeepEP buffers).
"""

from __future__ import annotations

import math

from ..catalog import Gpu, ModelArch
from ..facts import deepep
from ..facts.batches import cuda_graph_batch, deepep_dispatch_tokens
from ..facts.versions import parse_version
from ..roles import RoleInput, engine_switch
from ..roles import max_len as role_max_len
from .kv import SGLANG_SWA_RATIO, V4_SWA_RATIO, HybridCache, V4Cache
from .result import GIB, RoleSizing
from .stages import worst_stage
from .vllm_budget import SGLANG_ROPE_CACHE_ELEMENT_BYTES, rope_cache_gib
from .vllm_budget import ACT_BYTES_PER_TOKEN_HIDDEN, DEEPEP_HT_BUFFER_MB

#: (chunked_prefill_size, cuda_graph_max_bs for tp < 4, for tp >= 4) by GPU memory (MB), from
#: SGLang server_args.py (0.5.x): < 20 GB, < 35 GB, < 60 GB, < 90 GB, < 160 GB (H20, H200), else.
TIERS = [(20_000, 2048, 8, 8), (35_000, 2048, 24, 80), (60_000, 4096, 32, 160),
         (90_000, 8192, 256, 512), (160_000, 8192, 256, 512), (10**9, 16384, 512, 512)]
#: Reserve floor on GPUs above 60 GB, MB; extra reserve with EAGLE/MTP drafts, MB.
RESERVE_FLOOR_MB, SPEC_RESERVE_MB = 10_240, 2_048


def tier_defaults(gpu_mb: int, tp: int) -> tuple[int, int]:
    """SGLang's default (chunked_prefill_size, cuda_graph_max_bs) for a GPU and TP size."""
    for limit, chunked, small, large in TIERS:
        if gpu_mb < limit:
            return chunked, (small if tp < 4 else large)
    raise AssertionError("unreachable")  # pragma: no cover


def default_mem_fraction_static(gpu_mb: int, tp: int, pp: int, dp: int, dp_attention: bool,
                                chunked: int, cgmbs: int, speculative: bool) -> float:
    """SGLang's own mem_fraction_static for this layout (see the module docstring)."""
    reserve = 512 + 1.5 * max(chunked, 2048) + 2 * cgmbs + 1024 * tp * pp / 8
    if dp_attention:
        reserve += 3 * cgmbs * dp
        if cgmbs > 300:
            reserve += 1.5 * cgmbs * dp
    if speculative:
        reserve += SPEC_RESERVE_MB
    if gpu_mb > 60_000:
        reserve = max(reserve, RESERVE_FLOOR_MB)
    return round((gpu_mb - reserve) / gpu_mb, 3)


#: Memory taken before SGLang measures free memory (CUDA context + NCCL/custom all-reduce at init),
#: GiB; 1.8 reproduces the 2 x 8 H20 TP16 start-up log in SGLang's Kubernetes guide
#: (sgl-project/sglang@308122c9:docs/references/deploy_on_k8s.md: 712,400 tokens) to 0.6 %.
SGLANG_INIT_GIB = 1.8
#: CUDA graphs of a decode role, GiB (outside the static pool); SGLang disables them for
#: disaggregated prefill (server_args.py).
SGLANG_CUDA_GRAPH_GIB = 1.7
#: Graph memory per captured sequence per attention-DP rank with DP attention, MB, and the extra
#: above a graph batch of 300: SGLang's own reserve for it (0.5.23 python/sglang/srt/arg_groups/
#: memory_hook.py reserve_for_graph_mb: "DP attention needs more padding ... much more for large
#: cuda graph max bs": max_bs x attn_dp_size x 3, + x 1.5 when max_bs > 300). The gathered
#: buffers of a DP-attention graph hold the tokens of every DP rank, so the term grows with
#: batch x DP: sgl-project/sglang#24453 measured ~20 GB per rank captured at batch 128 x DP32
#: (Kimi-K2, DeepEP with 256 dispatch tokens), which this term + the base + DeepEP's low-latency
#: buffer reproduce (1.7 + 12.0 + 5.25 = 18.95 GiB; tests/test_sizing.py).
DP_ATTN_GRAPH_MB, DP_ATTN_GRAPH_LARGE_MB, DP_ATTN_GRAPH_LARGE_BS = 3.0, 1.5, 300
#: The first release the batch x DP term is applied to: the one sgl-project/sglang#24453 measured
#: it on (v0.5.10). Older releases keep the flat :data:`SGLANG_CUDA_GRAPH_GIB`: the LMSYS H20
#: deployment (examples/plan/h20-96-fixed-layout.yaml, 0.5.6.post1: DP16 decode at batch 48 with
#: mem-fraction-static 0.9) ran with less graph memory than the term gives.
DP_ATTN_GRAPH_SINCE = (0, 5, 10)


def cuda_graph_gib(graph_batch: int, attn_dp: int, version: str = "0.5.23") -> float:
    """Decode CUDA-graph memory of one GPU outside SGLang's static pool, GiB: the base
    :data:`SGLANG_CUDA_GRAPH_GIB` plus, with DP attention (``attn_dp`` > 1) on releases from
    :data:`DP_ATTN_GRAPH_SINCE`, the term that grows with graph batch x attention-DP ranks
    (:data:`DP_ATTN_GRAPH_MB`)."""
    extra = 0.0
    if attn_dp > 1 and parse_version(version) >= DP_ATTN_GRAPH_SINCE:
        extra = graph_batch * attn_dp * DP_ATTN_GRAPH_MB
        if graph_batch > DP_ATTN_GRAPH_LARGE_BS:
            extra += graph_batch * attn_dp * DP_ATTN_GRAPH_LARGE_MB
    return SGLANG_CUDA_GRAPH_GIB + extra / 1024


def v4_rope_tables_gib(arch: ModelArch) -> float:
    """GiB of DeepSeek-V4's RoPE tables SGLang keeps on each GPU beside the weights: each
    attention layer registers ``freqs_cis`` (complex64, ``max_position_embeddings`` x
    ``qk_rope_head_dim / 2``) from ``precompute_freqs_cis``, which is ``lru_cache``d, so one table
    per distinct RoPE: the sliding-window layers' (``rope_theta``, unscaled) and the compressed
    layers' (``compress_rope_theta`` with YaRN) (SGLang 0.5.23 srt/models/deepseek_v4.py
    ``DeepseekV4Attention.__init__``, kernels/ops/attention/dsv4/rope.py). V4-Pro: 2 x 2^20 x 32
    x 8 B = 0.5 GiB, loaded with the model, so inside the static pool."""
    comp = arch.attention.compressed
    if comp is None:
        return 0.0
    kinds = {bool(r) for r in comp.ratios} or {False}
    return len(kinds) * arch.max_position_embeddings * (arch.attention.qk_rope_head_dim // 2) \
        * 8 / GIB


#: SGLang's DeepSeek-V4 default of max_running_requests when the spec bounds nothing
#: (sglang/srt/arg_groups/deepseek_v4_hook.py: 256 per instance).
V4_DEFAULT_RUNNING = 256


#: SGLang's bounds of its own per-worker request cap, and its requests per context of KV tokens
#: (SGLang 0.5.23 python/sglang/srt/mem_cache/kv_cache_configurator.py resolve_max_num_reqs:
#: ``max(min(int(token_capacity / context_len * 512), 4096), 2048)``).
DEFAULT_RUNNING_MIN, DEFAULT_RUNNING_MAX, DEFAULT_RUNNING_PER_CONTEXT = 2048, 4096, 512


def default_running_requests(token_capacity: int, context_len: int, attn_dp: int,
                             v4: bool = False) -> int:
    """The requests one attention-DP worker admits when ``--max-running-requests`` is not given
    (``sizing.concurrency: engine-default``), from its KV pool.

    Args:
        token_capacity: KV tokens of one worker's pool (SGLang's ``max_total_num_tokens``).
        context_len: ``--context-length`` (else the model's), tokens.
        attn_dp: attention-DP workers of the instance.
        v4: DeepSeek-V4, whose hook sets ``max_running_requests`` to
            :data:`V4_DEFAULT_RUNNING` per instance (python/sglang/srt/arg_groups/
            deepseek_v4_hook.py), divided among the workers like a given value.

    SGLang 0.5.23 python/sglang/srt/mem_cache/kv_cache_configurator.py resolve_max_num_reqs:
    ``min(max(min(int(token_capacity / context_len * 512), 4096), 2048), token_capacity // 2)``;
    a given value ``max(1, value // attn_dp)`` is capped by ``token_capacity // 2`` too. The
    mamba-state cap of hybrid (linear-attention) models is not modelled (no catalog model has
    one). Returns at least 1."""
    if v4:
        return max(1, min(max(1, V4_DEFAULT_RUNNING // attn_dp), token_capacity // 2))
    estimated = int(token_capacity / max(context_len, 1) * DEFAULT_RUNNING_PER_CONTEXT)
    estimated = max(min(estimated, DEFAULT_RUNNING_MAX), DEFAULT_RUNNING_MIN)
    return max(1, min(estimated, token_capacity // 2))


#: First SGLang release that pools Llama-4's chunked layers as sliding-window ones
#: (configs/model_config.py ``is_hybrid_swa_model`` lists Llama4ForConditionalGeneration from
#: 0.5.8; 0.5.1-0.5.6 model_runner.py exclude "Llama4" from hybrid SWA and 0.5.7's
#: ``is_hybrid_model`` needs --hybrid-kvcache-ratio): before it every layer caches the whole
#: sequence. Read in the wheels.
SGLANG_CHUNKED_SWA_SINCE = (0, 5, 8)
#: The release whose sliding-window layers (gpt-oss) share the full pool: 0.5.7 derives hybrid
#: SWA from ``is_hybrid_model`` alone (MiMo-V2, or Llama-4 with --hybrid-kvcache-ratio);
#: 0.5.1-0.5.6 (model_runner.py, a sliding window on a non-Llama-4 model) and 0.5.8+
#: (``is_hybrid_swa_model``: GptOssForCausalLM) give them their own pool.
SGLANG_NO_SWA = (0, 5, 7)


def sglang_hybrid_swa(version: tuple[int, int, int], arch: ModelArch,
                      engine_args: tuple[str, ...] = ()) -> bool:
    """SGLang gives the window / chunk layers of ``arch`` their own smaller pool at
    ``version`` (:data:`SGLANG_CHUNKED_SWA_SINCE`, :data:`SGLANG_NO_SWA`), unless engineArgs
    has ``--disable-hybrid-swa-memory`` (SGLang 0.5.23 python/sglang/srt/configs/
    model_config.py ``_derive_hybrid_model``: ``is_hybrid_swa`` only without it)."""
    if engine_switch(engine_args, "--disable-hybrid-swa-memory"):
        return False
    if "chunked" in arch.attention.layer_types:
        return version >= SGLANG_CHUNKED_SWA_SINCE
    return version != SGLANG_NO_SWA


def size_sglang(role: RoleInput, gpu: Gpu, inv, arch: ModelArch, stages, place,
                dialect_version: str = "0.5.23") -> RoleSizing:
    """SGLang budget (sizing/sglang_budget.py): pool = pre x mfs - weights; DeepSeek-V4's pool
    in the layout of release ``dialect_version`` (:class:`~generator.sizing.kv.V4Cache`)."""
    lay = role.layout
    s = role.serving
    group = lay.tensor * lay.data
    chunked_default, cgmbs_default = tier_defaults(gpu.hbm_mib, group)
    chunked = s.maxNumBatchedTokens or chunked_default
    normal_deepep = role.moe is not None and role.moe.all2all == "deepep_high_throughput"
    graphs_on = not s.enforceEager and role.mode != "prefill" and not normal_deepep
    cgmbs = cuda_graph_batch(role) if graphs_on else 0
    pre = gpu.torch_total_gib - SGLANG_INIT_GIB
    hidden = arch.hidden_size
    activation = chunked * hidden * ACT_BYTES_PER_TOKEN_HIDDEN / GIB
    comm = 0.0
    moe = role.moe
    experts = arch.moe.experts + place.redundant
    if moe and moe.all2all == "deepep_low_latency" and lay.expert_parallel:
        tokens = deepep_dispatch_tokens(role)
        comm = deepep.ll_buffer_bytes(experts, tokens, hidden) / GIB
    elif moe and moe.all2all in ("deepep_high_throughput", "deepep_v2") and lay.expert_parallel:
        comm = 2 * DEEPEP_HT_BUFFER_MB / 1024
    overhead = comm + (cuda_graph_gib(cgmbs, lay.data, dialect_version) if graphs_on else 0.0)
    if s.memFractionStatic:
        mfs = s.memFractionStatic
    elif s.gpuMemoryUtilization:
        mfs = (s.gpuMemoryUtilization * gpu.torch_total_gib - SGLANG_INIT_GIB
               - activation - overhead) / pre
        mfs = round(mfs, 3)
    else:
        mfs = default_mem_fraction_static(gpu.hbm_mib, group, lay.pipeline, lay.data,
                                          lay.data > 1, chunked,
                                          cgmbs if graphs_on else cgmbs_default,
                                          role.speculative is not None)
    max_len = role_max_len(role, "sglang")
    v = parse_version(dialect_version)
    running = -(-(s.maxNumSeqs or role.admission or V4_DEFAULT_RUNNING) // lay.data)

    def v4_cache(ratios: list[int], mtp: int) -> V4Cache:
        ratio = s.swaFullTokensRatio or V4_SWA_RATIO
        if v < (0, 5, 15):   # the DSv4 pool of 0.5.12-0.5.14 (docs/v4-kv.md)
            return V4Cache("sglang", "full-state", ratios.count(4), ratios.count(128),
                           len(ratios) + mtp, entries=len(arch.attention.compressed.ratios),
                           swa_ratio=ratio)
        return V4Cache("sglang", "fixed-state", ratios.count(4), ratios.count(128),
                       len(ratios), running_per_rank=running, mtp=mtp > 0,
                       swa_ratio=ratio)

    # V4's own tables (counted with the weights), or the one FP32 rotary cache every other
    # model builds with its layers (a load buffer, as vLLM's): both leave the static pool.
    tables = v4_rope_tables_gib(arch)
    cache = 0.0 if tables else rope_cache_gib(arch, SGLANG_ROPE_CACHE_ELEMENT_BYTES)
    rope = tables + cache

    def hybrid_cache(per_layer: int, full: int, sliding: int, chunked: int) -> HybridCache:
        at = arch.attention
        if not sglang_hybrid_swa(v, arch, role.engine_args):   # every layer a full one
            return HybridCache("sglang", per_layer, full + sliding + chunked)
        return HybridCache("sglang", per_layer, full, sliding, chunked, at.window, at.chunk,
                           swa_ratio=s.swaFullTokensRatio or SGLANG_SWA_RATIO)

    def capped(pool_gib: float) -> float:
        """serving.kvCacheMemoryBytes renders --max-total-tokens (bytes / bytes per token),
        which caps the pool mem_fraction_static sizes (model_runner_kv_cache_mixin.py
        ``max_total_num_tokens = min(..., server_args.max_total_tokens)``)."""
        return min(pool_gib, s.kvCacheMemoryBytes / GIB) if s.kvCacheMemoryBytes else pool_gib

    st, weights, pool, tokens, per_token, sequences, seq_layout = worst_stage(
        stages, inv, arch, place, s.kvCacheDtype, max_len, lambda w: capped(pre * mfs - w - rope),
        v4_cache, hybrid_cache)
    by_component = {k: b / GIB for k, b in st.by_component.items()}
    if tables:
        weights += tables
        by_component["rope_tables"] = tables
    # engine-default: SGLang's own admission caps requests, it does not promise each its
    # context (it queues and retracts): the HBM guarantee stays one sequence, as when unset.
    required = 1 if role.engine_default else role.concurrency
    per_rank = -(-required // lay.data)
    return RoleSizing(
        name=role.name, gpu=gpu.id, engine="sglang", gpu_memory=gpu.torch_total_gib,
        budget=pre * mfs, weights=weights, load_buffers=cache, activation=activation,
        overhead=overhead,
        kv_cache=pool, weights_by_component=by_component,
        kv_bytes_per_token=per_token, kv_tokens_per_rank=tokens, max_model_len=max_len,
        max_concurrency=sequences, required_concurrency=required,
        per_rank_required=per_rank, data=lay.data, batched_tokens=chunked, comm=comm,
        cuda_graph_outside=0.0, utilization=mfs, outside_pool=pre * (1 - mfs),
        seq_layout=seq_layout)


def fraction_with_room(z: RoleSizing) -> float | None:
    """The largest ``mem_fraction_static`` that still leaves activations, CUDA graphs and buffers
    (+ 1 GiB) outside SGLang's static pool, if it is above the one ``z`` planned (``None``
    otherwise). Rounded down to 0.001. This is the value SIZ001/SIZ003 hint at and that
    ``gen plan`` pins for SGLang layouts its default formula would not fit."""
    pre = z.fraction_base
    best = math.floor((1 - (z.activation + z.overhead + 1.0) / pre) * 1000) / 1000
    return best if best > z.utilization + 0.005 else None

