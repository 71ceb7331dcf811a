"""Per-step batch facts of the engines that both the HBM sizing and the dialects use: SGLang's
decode CUDA-graph batch, the batch one DP rank admits, draft tokens per step and the DeepEP
low-latency dispatch tokens a decode role needs (sglang 0.5.23 sources cited per function)."""

from __future__ import annotations

from ..roles import RoleInput

#: SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK default (python/sglang/srt/environ.py); the
#: ceiling is DeepEP's (facts/deepep.py LL_MAX_TOKENS).
DEEPEP_LL_DEFAULT_TOKENS = 128


def cuda_graph_batch(role: RoleInput) -> int:
    """Decode CUDA-graph batch per DP rank: the role's per-rank concurrency, rounded up to a
    multiple of 8 (SGLang captures batch sizes in steps of 8), at least 8; with the engine's
    default admission (``role.graph_cap``) at most SGLang's default ``cuda_graph_max_bs``, which
    it captures up to unless its request pool is smaller (SGLang 0.5.23
    python/sglang/srt/model_executor/runner/base_cuda_graph_runner.py
    get_batch_sizes_to_capture)."""
    per_rank = -(-role.concurrency // role.layout.data)
    batch = max(8, -(-per_rank // 8) * 8)
    return min(batch, role.graph_cap) if role.graph_cap else batch


def admitted_per_rank(role: RoleInput) -> int:
    """Decode batch one DP rank can be given: max-running-requests over the DP ranks (SGLang
    divides it among DP-attention ranks), which moegen renders as the role's concurrency unless
    maxNumSeqs pins it."""
    cap = role.serving.maxNumSeqs or role.concurrency
    return -(-cap // role.layout.data)


def draft_tokens(role: RoleInput) -> int:
    """Tokens per request per decode step: 1, or num_steps + 1 with MTP/EAGLE and topk 1
    (sglang arg_groups/speculative_hook.py)."""
    return role.speculative.numSpeculativeTokens + 1 if role.speculative else 1


#: SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK default (python/sglang/srt/environ.py, 0.5.23).
DEEPEP_V2_DEFAULT_TOKENS = 128


def deepep_v2_dispatch_tokens(role: RoleInput, chunked: int) -> int:
    """DeepEP v2 dispatch tokens per rank a role needs, at least SGLang's default: its largest
    prefill chunk on one rank (``chunked`` = the role's chunked-prefill size, which SGLang divides
    by the attention-DP size: arg_groups/parallel_hook.py:327-335) unless it is a decode role, and
    its largest decode graph (graph batch x draft tokens) unless it is a prefill role. SGLang
    0.5.23 refuses to start below either (arg_groups/moe_hook.py:679-706
    validate_deepep_v2_dispatch_token_budget; sgl-project/sglang#35634)."""
    need = DEEPEP_V2_DEFAULT_TOKENS
    if role.mode != "decode":
        need = max(need, chunked // role.layout.data if role.layout.data > 1 else chunked)
    if role.mode != "prefill" and not role.serving.enforceEager:
        need = max(need, min(cuda_graph_batch(role), admitted_per_rank(role)) * draft_tokens(role))
    return need


def deepep_dispatch_tokens(role: RoleInput) -> int:
    """DeepEP low-latency dispatch tokens per rank a decode role needs: the largest batch a rank
    can run (graph batch, or what max-running-requests admits) x draft tokens, at least SGLang's
    default (the budget SGLang 0.5.23 checks for deepep_v2: python/sglang/srt/arg_groups/
    moe_hook.py validate_deepep_v2_dispatch_token_budget; deepseek-ai/DeepEP#165,
    sgl-project/sglang#6017)."""
    batch = max(cuda_graph_batch(role), admitted_per_rank(role))
    return max(DEEPEP_LL_DEFAULT_TOKENS, batch * draft_tokens(role))
