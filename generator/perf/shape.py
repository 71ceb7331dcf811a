"""The performance model's view of a model (:class:`ModelShape`), a decode operating point
(:class:`DecodeEstimate`) and the routing arithmetic both phases share: how many experts a step's
tokens hit, how many nodes one token's experts live on, the tokens a speculative step yields.
Re-exported by perf/terms.py. Units: bytes, FLOPs, seconds."""

from __future__ import annotations

import math
from dataclasses import dataclass


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
        latent: MLA decode query-key width per head (kv_lora + rope; DeepSeek-V4: head_dim, which
            includes the rope dims), for attention FLOPs.
        attn_window: tokens one query attends to in sparse attention (V3.2/V4: the indexer's
            top-k + the sliding window), None for dense attention over the whole context.
        n_group, topk_group: group-limited routing (config ``n_group``, ``topk_group``; 0: none).
        lm_head_bytes: bytes of the LM head (vocabulary x hidden, BF16), read per MTP draft pass.
        expert_bits: bits per routed-expert weight of the checkpoint format (4: w4a8, MXFP4).
        latent_v: MLA decode value width per head (kv_lora_rank; DeepSeek-V4: head_dim).
        sparse_mla: DeepSeek-V3.2's sparse attention (a lightning indexer of ``indexer_heads``
            x ``indexer_dim`` picks ``attn_window`` keys per query; MLA in latent form); False
            for dense MLA and for DeepSeek-V4's compressed attention.
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
    latent_v: int = 512
    sparse_mla: bool = False
    indexer_heads: int = 0
    indexer_dim: int = 0
    compressed: bool = False

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
