"""vLLM's memory budget for one GPU, and what it leaves for the KV cache.

vLLM V1 (vllm-project/vllm@v0.33.0:vllm/v1/worker/gpu_worker.py:641 ``determine_available_memory``,
vllm-project/vllm@v0.33.0:vllm/utils/mem_utils.py; docs/design.md §5)::

    requested     = total x gpu_memory_utilization
    available_kv  = requested - (weights + torch activation peak + non-torch increase
                                 [+ CUDA-graph estimate when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS])
    kv_tokens     = available_kv // kv_bytes_per_token        ("GPU KV cache size: N tokens")

and start-up fails when one ``max_model_len`` request does not fit
(vllm-project/vllm@v0.33.0:vllm/v1/core/kv_cache_planning.py:151 ``check_enough_kv_cache_memory``).

The terms moegen estimates (each a named constant with its source; residuals against the
engine-printed numbers are printed by ``bench/sizing_residuals.py``):

* activation peak: the profile run pushes ``max_num_batched_tokens`` tokens through the model;
  its peak grows with the token count and the hidden size.
  :data:`ACT_BYTES_PER_TOKEN_HIDDEN` bytes per token per hidden unit, fitted to the TP8
  DeepSeek-R1/V3.2/Kimi start-up logs collected in
  ashishkamra/vllm-memory-estimator@8b0e21d1:test_data/validation_db.json (H200/B200, 8192 tokens: 4.4-7.3 GiB of
  activation + non-torch memory; replayed by bench/sizing_residuals.py); the MoE's share of it
  (:data:`ACT_MOE_BYTES_PER_TOKEN_HIDDEN`) stops growing at vLLM's fused-MoE chunk
  (:data:`FUSED_MOE_CHUNK_TOKENS`), so the peak is not linear beyond it.
* non-torch memory created after vLLM's start snapshot (NCCL communicators and their buffers,
  custom all-reduce IPC buffers, cuBLAS workspaces): :data:`NON_TORCH_GIB`.
* CUDA graphs: subtracted before KV sizing only when the release estimates them
  (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1 from 0.20.0, vllm/envs.py);
  :data:`CUDA_GRAPH_GIB` is the mean of the estimates vLLM printed (0.51-2.52 GiB).
  Earlier releases capture graphs after sizing, out of the (1 - utilization) headroom.
* all-to-all buffers, which vLLM allocates outside the torch allocator: DeepEP low-latency
  ~ 4 x experts x tokens x 2 x hidden bytes (deepseek-ai/DeepEP@v1.2.1:csrc/config.hpp:185
  ``get_low_latency_rdma_size_hint``: 1.8 GiB at 128 tokens for 256 experts and hidden 7168) with the tokens per
  dispatch = max_num_batched_tokens (0.20+) or VLLM_MOE_DP_CHUNK_SIZE 256 (earlier);
  DeepEP high-throughput: 2 x VLLM_DEEPEP_BUFFER_SIZE_MB (NVLink + RDMA buffers, 1024 MB each).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import Gpu, ModelArch
from ..facts import deepep
from ..facts.versions import parse_version
from ..roles import RoleInput, engine_switch
from ..roles import max_len as role_max_len
from .kv import HybridCache, V4Cache
from .result import GIB, RoleSizing
from .stages import worst_stage
from .weights import Placement, StageWeights

#: Activation peak per token of the profile batch per hidden unit, bytes (about 44 BF16
#: hidden-sized tensors live at the peak: residual, norms, MLA up-projections, MoE dispatch and
#: combine buffers, the sampler's share). Fitted to the TP8 start-up logs of
#: ashishkamra/vllm-memory-estimator@8b0e21d1:test_data/validation_db.json at 8192
#: tokens (R1 H200 0.11.2 / 0.18.0, R1 B200 0.18.0, V3.2 H200 0.16.0): residuals -1.7 % to +3.3 %
#: in KV tokens (bench/sizing_residuals.py).
ACT_BYTES_PER_TOKEN_HIDDEN = 88
#: The part of :data:`ACT_BYTES_PER_TOKEN_HIDDEN` that lives in the fused MoE (gate/up outputs,
#: the activation, the expert-sorted copies), which vLLM computes ``VLLM_FUSED_MOE_CHUNK_SIZE``
#: tokens at a time (:data:`FUSED_MOE_CHUNK_TOKENS`): bytes per token of one chunk per hidden
#: unit. Fitted to vLLM's R1-NVFP4 DP2-EP2 prefill on GB200 at 65,536 batched tokens
#: (minosfuture/vllm runs/DS-R1/fp4/report/prefill-2000in/prefill-master-pd.log: 0.85 x 184.31
#: GiB - 112.62 GiB resident weights - 19.53 GiB KV = 24.5 GiB of activation + non-torch),
#: with the 8,192-token fit: 88 = 44 per token + 44 per chunk token.
ACT_MOE_BYTES_PER_TOKEN_HIDDEN = 44
#: vllm/envs.py ``VLLM_FUSED_MOE_CHUNK_SIZE`` default (16 * 1024 tokens), with
#: ``VLLM_ENABLE_FUSED_MOE_ACTIVATION_CHUNKING`` on by default.
FUSED_MOE_CHUNK_TOKENS = 16 * 1024
#: Non-torch memory that appears after vLLM's start snapshot, GiB: NCCL communicator buffers and
#: custom all-reduce (TP > 1; ~0.55 GiB at TP2 and growing with TP) and cuBLAS/attention
#: workspaces (0.13 GiB at TP1): llm-d's H100 measurements,
#: llm-d/llm-d-benchmark@v0.5.2:config_explorer/empirical-vllm-memory-results.md:37.
NON_TORCH_GIB = {1: 0.3, 2: 0.6, 4: 0.9, 8: 1.3}
#: CUDA-graph memory, GiB, when the release subtracts its estimate before KV sizing.
CUDA_GRAPH_GIB = 1.7
#: VLLM_DEEPEP_BUFFER_SIZE_MB default (vllm/envs.py, every release 0.11-0.33).
DEEPEP_HT_BUFFER_MB = 1024
#: VLLM_MOE_DP_CHUNK_SIZE before 0.20.0 (tokens per DeepEP low-latency dispatch).
MOE_DP_CHUNK = 256
#: DeepSeek-V4 prefill gather buffer, bytes: 4 x (ceil(max_model_len / 4) + 128 +
#: max_num_batched_tokens) x 512 x 2 (BF16), vLLM deepseek_v4_attention.py.
#: DeepSeek-V4 kernel workspaces beyond that (sparse FlashMLA, DeepGEMM/MoE), GiB: fitted to the
#: one V4 start-up log in ashishkamra/vllm-memory-estimator@8b0e21d1:test_data/validation_db.json
#: (V4-Pro TP8/EP8 on H200, vLLM 0.20.2: 7.4 GiB of
#: activation + non-torch memory at 512 batched tokens); a single-case calibration.
V4_WORKSPACE_GIB = 5.0


#: First vLLM release that packs DeepSeek-V4's KV cache groups side by side in one block of the
#: widest group (v1/core/kv_cache_utils.py ``_get_packed_kv_cache_groups``: present in the 0.29.0
#: wheel, absent in 0.28.0, whose ``_get_kv_cache_groups_uniform_groups`` pads every page to the
#: full group's): kv.V4Cache ``planned`` from here, ``packed`` before.
V4_PLANNED_SINCE = (0, 29, 0)


def v4_gather_gib(max_model_len: int, batched_tokens: int) -> float:
    """The V4 prefill gather buffer, GiB (see :data:`V4_WORKSPACE_GIB`)."""
    return 4 * (-(-max_model_len // 4) + 128 + batched_tokens) * 512 * 2 / GIB


#: Bytes of one element of the rotary cos/sin cache. vLLM builds one cache per distinct rotary
#: embedding (``get_rope`` shares it across layers through ``_ROPE_DICT``) of
#: ``max_position_embeddings`` x rotary width elements, cast to the model dtype (BF16) on the GPU
#: while the model is built, so "Model loading took" counts it (``RotaryEmbedding.__init__``:
#: vLLM 0.8.3 model_executor/layers/rotary_embedding.py, 0.28.0 and 0.33.0
#: model_executor/layers/rotary_embedding/base.py). Llama-4 Scout's 10,485,760 positions x 128:
#: 2.5 GiB per GPU, replicated (bench/engine_memory_figures.yaml: vllm-project/vllm#16177).
ROPE_CACHE_ELEMENT_BYTES = 2
#: Sparse MLA (DeepSeek-V3.2, GLM-5) on vLLM: ``DeepseekV2Model`` (and each MTP layer,
#: deepseek_mtp.py) allocates a top-k index buffer of max_num_batched_tokens x ``index_topk``
#: int32 while it is built (model_executor/models/deepseek_v2.py, read in the 0.11.0, 0.13.0,
#: 0.16.0, 0.28.0 and 0.33.0 wheels).
TOPK_INDEX_BYTES = 4
#: FlashMLA-sparse, vLLM's sparse-MLA backend for an FP8 (``fp8_ds_mla``) cache on Hopper
#: (platforms/cuda.py: FLASH_ATTN_MLA_SPARSE takes BF16 caches only, FLASHINFER_MLA_SPARSE_SM90
#: 512-wide heads), reserves the shared workspace (v1/worker/workspace.py: one buffer, grown to
#: the largest request) in its attention impl's ``__init__``, inside ``load_model``, so "Model
#: loading took" counts it. v1/attention/backends/mla/flashmla_sparse.py
#: ``FlashMLASparseImpl.__init__``, read in the wheels of 0.11.0 and 0.12.0 (nothing at load),
#: 0.13.0, 0.16.0, 0.17.0 (the prefill workspace: 5 x max_model_len rows of kv_lora_rank +
#: qk_rope_head_dim BF16), 0.18.0, 0.19.0, 0.20.0, 0.24.0, 0.28.0, 0.29.0, 0.30.0 (+ the query
#: concat: max_num_batched_tokens x local heads x the row), 0.31.0 (+ max_num_batched_tokens x
#: heads padded to 64 x (row + kv_lora_rank) + max_num_batched_tokens x heads x kv_lora_rank),
#: 0.32.0 and 0.33.0 (factor 2 instead of 5 when max_model_len > 256 Ki: config/vllm.py).
#: Left out: a BF16 cache's query concat alone (0.18.0-0.27.x, <= 0.15 GiB at 8,192 tokens;
#: FLASH_ATTN_MLA_SPARSE from 0.28.0 reserves nothing at load) and Blackwell, whose FP8 sparse
#: backend is FLASHINFER_MLA_SPARSE (0.28.0, 0.33.0: nothing at load).
SPARSE_MLA_PREFILL_SINCE = (0, 13, 0)
SPARSE_MLA_Q_CONCAT_SINCE = (0, 18, 0)
SPARSE_MLA_PREFILL_QUERY_SINCE = (0, 31, 0)
SPARSE_MLA_SHORT_FACTOR_SINCE = (0, 32, 0)
#: Rows of the prefill workspace per max_model_len token (vLLM ``get_prefill_workspace_size``),
#: and from :data:`SPARSE_MLA_SHORT_FACTOR_SINCE` above :data:`SPARSE_MLA_LONG_LEN` tokens.
SPARSE_MLA_FACTOR, SPARSE_MLA_LONG_FACTOR, SPARSE_MLA_LONG_LEN = 5, 2, 256 * 1024
#: Query heads the Hopper prefill kernel pads to (``prefill_padding``).
SPARSE_MLA_HEAD_PAD = 64


#: DeepSeek-V4 on vLLM keeps its caches in FP32 (``DeepseekV4ScalingRotaryEmbedding``: "cos_sin_cache
#: stored as fp32", vLLM 0.33.0 model_executor/layers/rotary_embedding/deepseek_scaling_rope.py),
#: one per distinct rope: the main layers' (compress ratio 0) and the compressed layers' (YaRN
#: with compress_rope_theta): V4-Pro 2 x 2^20 x 64 x 4 B = 0.5 GiB (a senior read ran it).
V4_ROPE_CACHE_ELEMENT_BYTES = 4
#: SGLang keeps every rotary cache in FP32 on CUDA/HIP ("cache needs to be in FP32 for numerical
#: stability": SGLang 0.5.23 srt/layers/rotary_embedding/base.py RotaryEmbedding.__init__), built
#: with the model, so the static pool holds it: Llama-4 Scout 10,485,760 x 128 x 4 B = 5 GiB.
SGLANG_ROPE_CACHE_ELEMENT_BYTES = 4


def rope_rows(arch: ModelArch) -> int:
    """Positions of a rotary cache: YaRN's is original_max_position_embeddings x factor rows
    (vLLM 0.33.0 yarn_scaling_rope.py / deepseek_scaling_rope.py, SGLang the same), every other
    ``max_position_embeddings`` (the two agree for every catalog config)."""
    rope = arch.rope_scaling
    if rope is not None and rope.kind in ("yarn", "deepseek_yarn") and rope.original \
            and rope.factor:
        return int(rope.original * rope.factor)
    return arch.max_position_embeddings


def rope_cache_gib(arch: ModelArch, element_bytes: int = ROPE_CACHE_ELEMENT_BYTES) -> float:
    """The rotary cos/sin caches vLLM holds on every GPU, GiB: one of :func:`rope_rows` x the
    rotary width (:data:`ROPE_CACHE_ELEMENT_BYTES`), or for DeepSeek-V4 one per distinct rope
    in FP32 (:data:`V4_ROPE_CACHE_ELEMENT_BYTES`). ``element_bytes``: another engine's."""
    comp = arch.attention.compressed
    if comp is not None:
        caches = len({bool(r) for r in comp.ratios} or {False})
        return caches * arch.max_position_embeddings * arch.attention.qk_rope_head_dim \
            * V4_ROPE_CACHE_ELEMENT_BYTES / GIB
    return rope_rows(arch) * arch.attention.rotary_dim * element_bytes / GIB


def sparse_mla_load_gib(version: tuple[int, int, int], arch: ModelArch, gpu: Gpu, fp8_kv: bool,
                        max_len: int, batched: int, tp: int, mtp_layers: int) -> float:
    """What vLLM allocates for sparse MLA while it loads the model, GiB: the top-k index
    buffers (:data:`TOPK_INDEX_BYTES`) and, with an FP8 cache on Hopper, FlashMLA-sparse's
    workspace (:data:`SPARSE_MLA_PREFILL_SINCE`); 0 for other attention."""
    if not arch.sparse_attention:
        return 0.0
    at = arch.attention
    assert at.index is not None
    total = (1 + mtp_layers) * batched * at.index.topk * TOPK_INDEX_BYTES
    hopper = gpu.vendor == "nvidia" and gpu.generation == "hopper"
    if fp8_kv and hopper and version >= SPARSE_MLA_PREFILL_SINCE:
        row, latent, heads = at.kv_lora_rank + at.qk_rope_head_dim, at.kv_lora_rank, at.heads // tp
        factor = SPARSE_MLA_LONG_FACTOR if (version >= SPARSE_MLA_SHORT_FACTOR_SINCE
                                            and max_len > SPARSE_MLA_LONG_LEN) \
            else SPARSE_MLA_FACTOR
        elements = factor * max_len * row
        if version >= SPARSE_MLA_Q_CONCAT_SINCE:
            elements += batched * heads * row
        if version >= SPARSE_MLA_PREFILL_QUERY_SINCE:
            padded = -(-heads // SPARSE_MLA_HEAD_PAD) * SPARSE_MLA_HEAD_PAD
            elements += batched * (padded * (row + latent) + heads * latent)
        total += 2 * elements   # BF16
    return total / GIB


#: CUDA context + memory held before vLLM's start snapshot, GiB: outside the budget, it must fit in
#: the (1 - utilization) headroom: moegen's allowance for the CUDA context, docs/design.md §5.
CUDA_CONTEXT_GIB = 0.5


def activation_gib(batched_tokens: int, hidden: int) -> float:
    """The profile run's activation peak, GiB: ``batched_tokens`` x hidden x
    (:data:`ACT_BYTES_PER_TOKEN_HIDDEN` - :data:`ACT_MOE_BYTES_PER_TOKEN_HIDDEN`) for the
    per-token tensors + min(batched_tokens, :data:`FUSED_MOE_CHUNK_TOKENS`) x hidden x
    :data:`ACT_MOE_BYTES_PER_TOKEN_HIDDEN` for the chunked MoE."""
    per_token = ACT_BYTES_PER_TOKEN_HIDDEN - ACT_MOE_BYTES_PER_TOKEN_HIDDEN
    moe = min(batched_tokens, FUSED_MOE_CHUNK_TOKENS) * ACT_MOE_BYTES_PER_TOKEN_HIDDEN
    return (batched_tokens * per_token + moe) * hidden / GIB


def default_max_num_batched_tokens(version: tuple[int, int, int], gpu_total_gib: float,
                                   all2all: str | None, expert: bool, data: int) -> int:
    """vLLM's ``max_num_batched_tokens`` when the flag is not given (``vllm serve``).

    Source: vllm/engine/arg_utils.py (default tiers; every release's own parser, extracted by tools/extract_vllm_dialects.py):
    256 with deepep_low_latency/nixl_ep + EP + DP > 1 (>= 0.20.0); 16384 on GPUs >= 160 GiB
    (>= 0.28.0); 8192 on GPUs >= 70 GiB; otherwise 2048.
    """
    if version >= (0, 20, 0) and all2all in ("deepep_low_latency", "nixl_ep") and expert and data > 1:
        return 256
    if version >= (0, 28, 0) and gpu_total_gib >= 160:
        return 16384
    if gpu_total_gib >= 70:
        return 8192
    return 2048


@dataclass(frozen=True)
class VllmBudget:
    """The vLLM budget of one GPU, GiB.

    Attributes:
        total: torch-visible device memory; budget: total x utilization.
        activation: activation peak of the profile run; overhead: non-torch + CUDA graphs
            (when estimated) + all-to-all buffers; comm: the all-to-all part of ``overhead``.
        cuda_graph_outside: CUDA-graph memory taken from the headroom (releases < 0.20).
        batched_tokens: the profile batch used for the activation estimate.
    """

    total: float
    budget: float
    activation: float
    overhead: float
    comm: float
    cuda_graph_outside: float
    batched_tokens: int


def vllm_budget(version: tuple[int, int, int], total_gib: float, utilization: float, tp: int,
                hidden: int, experts: int, batched_tokens: int, all2all: str | None,
                expert: bool, enforce_eager: bool, extra_activation: float = 0.0) -> VllmBudget:
    """Estimate the non-KV terms of vLLM's budget for one GPU (see the module docstring).

    ``extra_activation``: model-specific workspaces, GiB (DeepSeek-V4's gather buffer and
    kernel workspaces).
    """
    activation = activation_gib(batched_tokens, hidden) + extra_activation
    non_torch = NON_TORCH_GIB.get(tp, NON_TORCH_GIB[8])
    estimates_graphs = version >= (0, 20, 0)
    graphs = 0.0 if enforce_eager else CUDA_GRAPH_GIB
    comm = 0.0
    if expert and all2all in ("deepep_low_latency",):
        tokens = batched_tokens if version >= (0, 20, 0) else MOE_DP_CHUNK
        comm = deepep.ll_buffer_bytes(experts, tokens, hidden) / GIB
    elif expert and all2all in ("deepep_high_throughput", "deepep_v2"):
        comm = 2 * DEEPEP_HT_BUFFER_MB / 1024
    overhead = non_torch + comm + (graphs if estimates_graphs else 0.0)
    return VllmBudget(total=total_gib, budget=total_gib * utilization, activation=activation,
                      overhead=overhead, comm=comm,
                      cuda_graph_outside=0.0 if estimates_graphs else graphs,
                      batched_tokens=batched_tokens)


#: First vLLM release whose hybrid KV cache manager stays on next to a KV connector that
#: supports it (vllm/config/vllm.py: 0.11.0-0.21.0 turn it off for any --kv-transfer-config;
#: 0.22.0 keeps it where the connector class subclasses SupportsHMA), read in the wheels.
HMA_WITH_CONNECTOR = (0, 22, 0)
#: moegen's connectors whose vLLM class subclasses SupportsHMA from :data:`HMA_WITH_CONNECTOR`
#: (v1/nixl/connector.py NixlBaseConnector, v1/mooncake/mooncake_connector.py MooncakeConnector;
#: LMCacheConnectorV1 does not, through 0.33.0).
HMA_CONNECTORS = frozenset({"nixl", "mooncake"})
#: First vLLM release whose VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to 1
#: (vllm/envs.py: "0" in 0.11.0-0.13.0, "1" from 0.14.0): before it vLLM turns the hybrid
#: manager off for chunked local attention (Llama-4), "a latency regression" (vllm PR#21761).
CHUNKED_HMA_DEFAULT_ON = (0, 14, 0)
#: The variable itself, read as ``bool(int(value))`` in every release (vLLM 0.12.0 and 0.28.0
#: vllm/envs.py); set in the role's env it overrides the release's default.
CHUNKED_HMA_ENV = "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE"
#: Speculative methods vLLM's SpeculativeConfig.use_eagle() counts (eagle, eagle3, mtp): with
#: chunked local attention they turn the hybrid manager off in every release 0.11.0-0.33.0.
EAGLE_LIKE = frozenset({"eagle", "eagle3", "mtp"})


def _chunked_hma(version: tuple[int, int, int], role: RoleInput) -> bool:
    """VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE as the role's engine reads it: the
    value its env sets (an integer; anything else leaves the release's default), else
    :data:`CHUNKED_HMA_DEFAULT_ON`."""
    value = (role.env_value(CHUNKED_HMA_ENV) or "").strip()
    if value.lstrip("+-").isdigit():
        return int(value) != 0
    return version >= CHUNKED_HMA_DEFAULT_ON


#: vLLM schedules step k+1 before it processes step k's output (asynchronous scheduling) by
#: default from this release unless an option is incompatible: pipeline parallelism on the V1
#: model runner, a drafter that is not EAGLE-like (MTP is), a pooling model (vLLM 0.33.0
#: vllm/config/vllm.py ``__post_init__``: ``async_scheduling`` None -> True; the V1 engine's
#: batch queue, vllm/v1/engine/core.py ``step_with_batch_queue``).
ASYNC_SCHEDULING_SINCE = (0, 26, 0)


def async_scheduling(version: tuple[int, int, int], pipeline: int) -> bool:
    """vLLM at ``version`` schedules asynchronously for a role of ``pipeline`` stages
    (:data:`ASYNC_SCHEDULING_SINCE`)."""
    return version >= ASYNC_SCHEDULING_SINCE and pipeline == 1


def hybrid_manager(version: tuple[int, int, int], role: RoleInput) -> bool:
    """vLLM keeps its hybrid KV cache manager on for ``role`` (vllm/config/vllm.py
    ``__post_init__``, "Hybrid KV cache manager (HMA) runtime rules"): off for chunked local
    attention with an EAGLE-like drafter or when :data:`CHUNKED_HMA_ENV` is off
    (:func:`_chunked_hma`), and off next to a KV connector before :data:`HMA_WITH_CONNECTOR`
    or one without SupportsHMA. Off, every
    sliding / chunked layer caches the whole sequence, as a full one does
    (vLLM 0.33.0 vllm/v1/core/kv_cache_planning.py ``unify_hybrid_kv_cache_specs``).
    ``--disable-hybrid-kv-cache-manager`` in engineArgs turns it off (vllm/config/vllm.py: an
    explicit value overrides the automatic choice)."""
    if engine_switch(role.engine_args, "--disable-hybrid-kv-cache-manager",
                     "--no-disable-hybrid-kv-cache-manager"):
        return False
    if "chunked" in role.arch.attention.layer_types:
        spec = role.speculative
        if (spec is not None and spec.method in EAGLE_LIKE) or not _chunked_hma(version, role):
            return False
    kv = role.kv_transfer
    if kv is not None and (version < HMA_WITH_CONNECTOR or kv.connector not in HMA_CONNECTORS):
        return False
    return True


def size_vllm(role: RoleInput, gpu: Gpu, version: str, default_utilization: float,
              inv, arch: ModelArch, stages: list[StageWeights], place: Placement) -> RoleSizing:
    """vLLM's budget for one GPU of ``role`` and the KV capacity it leaves (see the module
    docstring); ``default_utilization``: the release's ``--gpu-memory-utilization`` default."""
    lay, s, moe = role.layout, role.serving, role.moe
    v = parse_version(version)
    max_len = role_max_len(role, "vllm")
    util = s.gpuMemoryUtilization or default_utilization
    all2all = moe.all2all if moe else None
    batched = s.maxNumBatchedTokens or default_max_num_batched_tokens(
        v, gpu.torch_total_gib, all2all, lay.expert_parallel, lay.data)
    physical_experts = arch.moe.experts + place.redundant
    v4 = arch.compressed_attention
    extra = v4_gather_gib(max_len, batched) + V4_WORKSPACE_GIB if v4 else 0.0
    budget = vllm_budget(v, gpu.torch_total_gib, util, lay.tensor, arch.hidden_size,
                         physical_experts, batched, all2all, lay.expert_parallel,
                         bool(s.enforceEager), extra)
    # Buffers the model holds from load_model on ("Model loading took" counts them).
    load = rope_cache_gib(arch) + sparse_mla_load_gib(
        v, arch, gpu, s.kvCacheDtype == "fp8", max_len, batched, lay.tensor,
        inv.mtp_layers if place.mtp else 0)
    # The most constrained stage decides capacity (vLLM: min over PP ranks).
    # Window groups cover the tokens in flight: one batch, two with async scheduling (the
    # default from 0.26.0 unless pipeline parallelism turns it off: VllmConfig
    # max_in_flight_tokens); the pool layout changed in 0.29.0 (kv.V4Cache).
    in_flight = batched * (2 if async_scheduling(v, lay.pipeline) else 1)
    scheme = "planned" if v >= V4_PLANNED_SINCE else "packed"

    def v4_cache(ratios: list[int], mtp: int) -> V4Cache:
        return V4Cache("vllm", scheme, ratios.count(4), ratios.count(128), len(ratios) + mtp,
                       in_flight=in_flight)

    def hybrid_cache(per_layer: int, full: int, sliding: int, chunked: int) -> HybridCache:
        at = arch.attention
        if not hybrid_manager(v, role):   # every layer a full one
            return HybridCache("vllm", per_layer, full + sliding + chunked)
        return HybridCache("vllm", per_layer, full, sliding, chunked, at.window, at.chunk,
                           in_flight)

    def kv_gib(w: float) -> float:
        """The KV cache next to ``w`` GiB of weights: the utilization budget's remainder, or
        serving.kvCacheMemoryBytes (--kv-cache-memory-bytes: vllm/v1/worker/gpu_worker.py
        ``determine_available_memory`` returns it unprofiled, whatever the utilization),
        negative by the shortfall when the GPU cannot hold it next to the rest."""
        if not s.kvCacheMemoryBytes:
            return budget.budget - w - load - budget.activation - budget.overhead
        want = s.kvCacheMemoryBytes / GIB
        free = gpu.torch_total_gib - CUDA_CONTEXT_GIB - w - load - budget.activation \
            - budget.overhead
        return want if free >= want else free - want

    st, weights, kv, tokens, per_token, sequences, seq_layout = worst_stage(
        stages, inv, arch, place, s.kvCacheDtype, max_len, kv_gib, v4_cache, hybrid_cache)
    return RoleSizing(
        name=role.name, gpu=gpu.id, engine="vllm", gpu_memory=gpu.torch_total_gib,
        budget=budget.budget, weights=weights, load_buffers=load, activation=budget.activation,
        overhead=budget.overhead, kv_cache=kv,
        weights_by_component={k: b / GIB for k, b in st.by_component.items()},
        kv_bytes_per_token=per_token, kv_tokens_per_rank=tokens, max_model_len=max_len,
        max_concurrency=sequences, required_concurrency=role.concurrency,
        per_rank_required=-(-role.concurrency // lay.data), data=lay.data,
        batched_tokens=batched, comm=budget.comm,
        cuda_graph_outside=budget.cuda_graph_outside, utilization=util, seq_layout=seq_layout)
