"""Facts of DeepEP, the expert-parallel all-to-all both engines use (deepseek-ai/DeepEP).

* Hidden sizes and rank counts its kernels are compiled for: csrc/kernels/legacy/launch.cuh at
  commit 0b32c55 (``SWITCH_HIDDEN``; ``SWITCH_RANKS`` intranode, ``SWITCH_RDMA_RANKS`` = ranks / 8
  NVLink peers internode, for the normal / high-throughput kernels; the low-latency kernels take
  any rank count).
* Low-latency dispatch capacity: at most 1,024 tokens per rank (SGLang
  python/sglang/srt/layers/moe/token_dispatcher/deepep.py asserts it; DeepEP#165).
* Low-latency buffer: ~ 4 x experts x tokens per rank x 2 x hidden bytes (DeepEP
  ``get_low_latency_rdma_size_hint``, csrc/config.hpp ``LowLatencyLayout``: 1.8 GiB at 128
  tokens, 7.1 GiB at 512 for 256 experts and hidden 7168).
"""

from __future__ import annotations

HIDDEN_SIZES = (2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192)
NORMAL_INTRANODE_RANKS = (2, 4, 8)
NORMAL_NODES = (2, 3, 4, 6, 8, 12, 16, 18, 20)
NVL_PEERS = 8
LL_MAX_TOKENS = 1024
#: The V1 buffer groups ranks into NVLink "nodes" of NVL_PEERS (rdma_rank = rank / 8): it asserts
#: ``num_ranks < 8 or num_ranks % 8 == 0`` in every mode, and the normal (high-throughput)
#: kernels take the 8 consecutive ranks of such a group as NVLink peers (csrc/legacy/buffer.hpp
#: :113-120, csrc/kernels/legacy/internode.cu:25 EP_STATIC_ASSERT(LEGACY_NUM_MAX_NVL_PEERS == 8),
#: compiled.cuh:5-6, at dd758ca). Pools with fewer GPUs per node: deepseek-ai/DeepEP#50, #477,
#: #392 ("normal kernels limit the number of GPUs per node to 8, the normal mode doesn't support
#: GB200 yet").


#: vLLM pads a layer's hidden size for DeepEP before it builds the buffers: the high-throughput
#: kernels to 512-byte units, the low-latency ones to the next of its supported sizes, up to
#: 8,192 (vllm/model_executor/layers/fused_moe/deepep_ll_prepare_finalize.py
#: maybe_roundup_layer_hidden_size: gpt-oss's 2,880 runs at 3,072; vllm-project/vllm#24588,
#: deepseek-ai/DeepEP#458). Read in the wheels: 0.11.0 pads for the high-throughput kernels
#: only (the low-latency ones assert 2048, 2560, 4096, 5120, 6144, 7168), 0.12.0 for both
#: (and 0.13.0, 0.14.0, 0.29.0, 0.30.0 alike).
VLLM_LL_PADDED_SINCE = (0, 12, 0)
VLLM_LL_SIZES_BEFORE = (2048, 2560, 4096, 5120, 6144, 7168)
VLLM_LL_MAX_HIDDEN = 8192


def vllm_runs_hidden(hidden: int, all2all: str, release: tuple[int, ...]) -> bool:
    """vLLM at ``release`` runs DeepEP ``all2all`` (``deepep_low_latency`` or
    ``deepep_high_throughput``) for a model of ``hidden`` size, padding it as above."""
    if all2all == "deepep_high_throughput":
        return True
    if release and release < VLLM_LL_PADDED_SINCE:
        return hidden in VLLM_LL_SIZES_BEFORE
    return hidden <= VLLM_LL_MAX_HIDDEN


def normal_rank_counts(limit: int = 256) -> list[int]:
    """Expert-parallel sizes DeepEP's normal kernels accept, up to ``limit``."""
    return sorted({*NORMAL_INTRANODE_RANKS, *(n * NVL_PEERS for n in NORMAL_NODES)}
                  & set(range(limit + 1)))


def ll_buffer_bytes(experts: int, tokens: int, hidden: int) -> int:
    """DeepEP low-latency RDMA buffer of one rank, bytes (``experts`` physical experts,
    ``tokens`` dispatch tokens per rank)."""
    return 4 * experts * tokens * 2 * hidden


#: NVSHMEM_QP_DEPTH DeepEP leaves in place (deep_ep/buffers/legacy.py:113-114, dd758ca), and the
#: low-latency dispatch's check against it: depth >= (num_max_dispatch_tokens_per_rank + 1) x 2
#: (legacy.py:609 and :665, since deepseek-ai/DeepEP PR#430, d981409 2025-09-25): from 512 dispatch
#: tokens the default fails at the first dispatch unless the engine raises it (SGLang does from
#: 0.5.19, token_dispatcher/deepep.py _set_nvshmem_qp_depth; vLLM 0.33.0 does not).
QP_DEPTH_DEFAULT = 1024


def qp_depth(tokens: int) -> int | None:
    """The NVSHMEM_QP_DEPTH a low-latency dispatch of ``tokens`` per rank needs, or None when
    DeepEP's default holds it."""
    need = 2 * (tokens + 1)
    return need if need > QP_DEPTH_DEFAULT else None
