"""DeepSeek-V4's tensor inventory (compressed attention; the shapes and sources are in
``sizing/params.py``'s docstring)."""

from __future__ import annotations

from ..catalog import ModelArch
from .tensors import Inventory, Tensor


def v4_ratios(arch: ModelArch) -> list[int]:
    """Compress ratio of every main layer (``compress_ratios`` lists the MTP layer last)."""
    comp = arch.attention.compressed
    return list(comp.ratios[: arch.num_layers]) if comp is not None else []


def _v4_layer(a: ModelArch, ratio: int, hashed: bool, mtp: bool = False) -> list[Tensor]:
    """One DeepSeek-V4 decoder layer."""
    at, m = a.attention, a.moe
    comp = at.compressed
    d, heads, dim = a.hidden_size, at.heads, at.head_dim
    q, o, groups = at.q_lora_rank, comp.o_lora_rank, comp.o_groups
    experts, inter = m.experts, m.expert_intermediate
    hc = a.hyper_connections
    mixes = (2 + hc) * hc
    shared = m.shared_intermediate
    out = [
        Tensor("attn.wq_a", "attention", q, d, True, "replicate"),
        Tensor("attn.q_norm", "attention", q, 1, False, "replicate"),
        Tensor("attn.wq_b", "attention", heads * dim, q, True, "shard"),
        Tensor("attn.wkv", "attention", dim, d, True, "replicate"),
        Tensor("attn.kv_norm", "attention", dim, 1, False, "replicate"),
        Tensor("attn.wo_a", "attention", groups * o, heads * dim // groups, True, "shard"),
        Tensor("attn.wo_b", "attention", d, groups * o, True, "shard", split="in"),
        Tensor("attn.attn_sink", "attention", heads, 1, False, "shard", elem_bytes=4),
        Tensor("hc.fn", "attention", 2 * mixes, hc * d, False, "replicate", elem_bytes=4),
        Tensor("hc.base_scale", "attention", 2 * (mixes + 3), 1, False, "replicate",
               elem_bytes=4),
        Tensor("attn_norm+ffn_norm", "norms", 2 * d, 1, False, "replicate"),
        Tensor("mlp.experts.gate_up", "routed_experts", 2 * inter, d, True, "shard", experts,
               parts=2),
        Tensor("mlp.experts.down", "routed_experts", d, inter, True, "shard", experts, split="in"),
        Tensor("mlp.gate", "router", experts, d, False, "replicate"),
    ]
    if ratio > 0:
        coff = 2 if ratio == 4 else 1
        out += [Tensor("compressor.ape", "attention", ratio, coff * dim, False, "replicate",
                       elem_bytes=4),
                Tensor("compressor.wkv+wgate", "attention", 2 * coff * dim, d, False, "replicate"),
                Tensor("compressor.norm", "attention", dim, 1, False, "replicate")]
    if ratio == 4:
        ih, idim = at.index.heads, at.index.dim
        out += [Tensor("indexer.wq_b", "indexer", ih * idim, q, True, "replicate"),
                Tensor("indexer.weights_proj", "indexer", ih, d, False, "replicate"),
                Tensor("indexer.compressor.ape", "indexer", 4, 2 * idim, False, "replicate",
                       elem_bytes=4),
                Tensor("indexer.compressor.wkv+wgate", "indexer", 4 * idim, d, False, "replicate"),
                Tensor("indexer.compressor.norm", "indexer", idim, 1, False, "replicate")]
    if hashed:
        out.append(Tensor("mlp.gate.tid2eid", "router", a.vocab_size, m.top_k, False,
                          "replicate", elem_bytes=4))
    else:
        out.append(Tensor("mlp.gate.bias", "router", experts, 1, False, "replicate", elem_bytes=4))
    if shared:
        out += [Tensor("mlp.shared_experts.gate_up", "shared_experts", 2 * shared, d, True, "shard",
                       parts=2),
                Tensor("mlp.shared_experts.down", "shared_experts", d, shared, True, "shard",
                       split="in")]
    if mtp:
        out += [Tensor("mtp.e_proj+h_proj", "mtp", 2 * d, d, True, "replicate"),
                Tensor("mtp.norms", "mtp", 3 * d, 1, False, "replicate"),
                Tensor("mtp.hc_head", "mtp", hc, hc * d + 2, False, "replicate", elem_bytes=4)]
    return out


def v4_inventory(a: ModelArch) -> Inventory:
    """The inventory of a DeepSeek-V4 model: layer kinds ``r<ratio>`` (``+hash`` for the
    hash-routed first layers)."""
    d, vocab, hc = a.hidden_size, a.vocab_size, a.hyper_connections
    hash_layers = a.moe.hash_layers
    kinds: dict[str, tuple[Tensor, ...]] = {}
    layer_kinds = []
    for i, ratio in enumerate(v4_ratios(a)):
        hashed = i < hash_layers
        kind = f"r{ratio}" + ("+hash" if hashed else "")
        kinds.setdefault(kind, tuple(_v4_layer(a, ratio, hashed)))
        layer_kinds.append(kind)
    outer = (
        Tensor("embed", "embedding", vocab, d, False, "shard"),
        Tensor("norm", "norms", d, 1, False, "replicate"),
        Tensor("hc_head", "norms", hc, hc * d + 2, False, "replicate", elem_bytes=4),
        Tensor("head", "lm_head", vocab, d, False, "shard"),
    )
    return Inventory(kinds=kinds, layer_kinds=tuple(layer_kinds), outer=outer,
                     mtp_layer=tuple(_v4_layer(a, 0, False, mtp=True)),
                     mtp_layers=a.mtp_layers)
