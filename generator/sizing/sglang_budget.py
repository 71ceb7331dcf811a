"""SGLang's memory budget for one GPU (0.5.x).

SGLang splits device memory with ``mem_fraction_static`` (mfs): weights + the KV pool live in
mfs x (free memory at start); activations, CUDA graphs and communication buffers live in the
rest (python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py ``profile_max_num_token``;
shared/research/anchors-planner.md §4.2)::

    pre          = free memory after distributed init  (torch total - CUDA context - NCCL)
    kv_pool      = pre x mfs - weights
    max_tokens   = kv_pool // cell_size                 (MLA latent x layers, + the draft's layers)

When mfs is not given, SGLang derives it from a reserve (server_args.py
``_handle_gpu_memory_settings``, 0.5.x), by GPU memory tier:

    reserve_mb = 512 + 1.5 x max(chunked_prefill, 2048) + 2 x cuda_graph_max_bs + 1024 x tp x pp / 8
                 [+ 3 x cgmbs x dp with DP attention, + 1.5 x cgmbs x dp more when cgmbs > 300]
                 [+ 2048 with EAGLE/MTP]; at least 10,240 MB on GPUs > 60 GB
    mfs        = round((gpu_mem_mb - reserve_mb) / gpu_mem_mb, 3)

moegen renders ``--mem-fraction-static`` explicitly: SGLang's own default when
``gpuMemoryUtilization`` is not set, else the fraction that leaves utilization x total for the
engine after the memory outside the pool (activation, CUDA graphs, DeepEP buffers).
"""

from __future__ import annotations

GIB = 2**30

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
