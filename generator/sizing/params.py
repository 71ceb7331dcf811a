"""Parameter inventory of a model, tensor by tensor, from its HF ``config.json``.

Every weight tensor of the checkpoint is listed once per layer kind with its shape (out, in),
the component it belongs to, whether the checkpoint stores it in the quantized format, and how
tensor parallelism treats it in vLLM. Bytes are computed from this inventory by
``sizing/weights.py``; nothing here knows about GPUs.

Shapes for the MLA + MoE families (DeepSeek-V2/V3/R1/V3.1, Kimi-K2 and V3.2) follow the model
code of vLLM 0.33 ``vllm/model_executor/models/deepseek_v2.py`` and the HF checkpoints:

* attention (per layer): ``q_a_proj`` hidden->q_lora_rank (or ``q_proj`` hidden->heads x qk_head
  when q_lora_rank is null, DeepSeek-V2-Lite), ``q_b_proj`` q_lora->heads x (nope + rope),
  ``kv_a_proj_with_mqa`` hidden->kv_lora + rope, ``kv_b_proj`` kv_lora->heads x (nope + v),
  ``o_proj`` heads x v->hidden, and the q_a/kv_a layernorms. vLLM replicates q_a/kv_a
  (``ReplicatedLinear``/fused qkv_a) and shards q_b/kv_b/o.
* V3.2 adds the sparse-attention indexer per layer: ``wq_b`` q_lora->index_heads x index_dim,
  ``wk`` hidden->index_dim, ``k_norm`` (weight + bias), ``weights_proj`` hidden->index_heads
  (BF16); vLLM replicates the indexer.
* dense MLP (first ``first_k_dense_replace`` layers): gate/up hidden->intermediate, down back.
* MoE layers: ``n_routed_experts`` experts of gate/up/down at ``moe_intermediate_size``, shared
  experts at ``n_shared_experts x moe_intermediate_size``, router ``gate`` (BF16) and its fp32
  ``e_score_correction_bias`` (noaux_tc models).
* embedding and ``lm_head`` (vocab x hidden, BF16, vocab-parallel), final norm.
* MTP (``num_nextn_predict_layers``): a full MoE decoder layer plus ``eh_proj`` 2 x hidden->hidden
  and the enorm/hnorm/shared-head norms; it shares the target's embedding and head in vLLM
  (vllm/model_executor/models/deepseek_mtp.py).

The GQA families (Qwen3-MoE, GLM-4.5/4.6/4.7, gpt-oss, Llama-4, MiniMax-M2; vLLM 0.33
``qwen3_moe.py``, ``glm4_moe.py``, ``gpt_oss.py``, ``llama4.py``, ``minimax_m2.py``):

* attention: ``q_proj`` hidden->heads x head_dim, ``k_proj``/``v_proj`` hidden->kv_heads x
  head_dim (``QKVParallelLinear``: sharded over at most kv_heads ranks, replicated beyond), with
  their biases where the config has them (GLM-4.5 ``attention_bias``, gpt-oss), ``o_proj``
  heads x head_dim->hidden (gpt-oss with a bias); q/k norms (per head: Qwen3, GLM-4.5; over all
  heads: MiniMax-M2); gpt-oss's attention sinks, one per head.
* MoE: routed experts (gpt-oss with gate_up/down biases), a shared expert (Llama-4, GLM-4.5), the
  router (gpt-oss with a bias; GLM-4.5 and MiniMax-M2 with an FP32 correction bias); dense MLP
  layers (Llama-4 ``intermediate_size_mlp``; GLM-4.5's first layers).
* Llama-4's vision tower (``vision_config``: q/k/v/o and the MLP per ViT layer, and the
  projector to the text width), BF16 and tensor-parallel, as one ``vision`` tensor.
* the LM head is the embedding when ``tie_word_embeddings`` (one tensor).

Which tensors a layer has comes from the model's capabilities (``catalog/capabilities.py``),
never from the config itself.

DeepSeek-V4 (Pro/Flash; shapes from DeepSeek's reference ``inference/model.py`` and vLLM
``vllm/model_executor/models/deepseek_v4.py``, ``layers/deepseek_v4_attention.py``,
``layers/deepseek_compressor.py``): per layer ``wq_a`` d->q_lora and ``wkv`` d->head_dim (one
KV head, replicated), ``wq_b`` q_lora->heads x head_dim and the grouped output projection
``wo_a`` (o_groups x o_lora) / ``wo_b`` (sharded), FP32 ``attn_sink``; a compressor (``ape``
FP32, ``wkv``/``wgate`` BF16 at 2 x head_dim for ratio 4, 1 x for ratio 128) on compressed
layers and, on ratio-4 layers, the indexer (``wq_b`` FP8, ``weights_proj`` BF16 and its own
compressor), all replicated; hyper-connection weights (hc_mult, (2 + hc) x hc mixes, FP32);
the router with an FP32 bias, or the ``tid2eid`` int32 table on the first ``num_hash_layers``
hash-routed layers; experts and a shared expert at ``moe_intermediate_size``. The MTP layer is a
window-only block plus ``e_proj``/``h_proj`` and its own hc head; embedding and head are shared.
"""

from __future__ import annotations

from functools import lru_cache

from ..catalog import ModelArch
from .params_v4 import v4_inventory
from .tensors import Inventory, Tensor

__all__ = ["Inventory", "Tensor", "inventory"]


def _mla_attention(a: ModelArch, index: bool) -> list[Tensor]:
    at = a.attention
    h, heads = a.hidden_size, at.heads
    nope, rope, v = at.qk_nope_head_dim, at.qk_rope_head_dim, at.v_head_dim
    kv_lora, q_lora = at.kv_lora_rank, at.q_lora_rank
    out = []
    if q_lora:
        out += [Tensor("attn.q_a_proj", "attention", q_lora, h, True, "replicate"),
                Tensor("attn.q_a_layernorm", "attention", q_lora, 1, False, "replicate"),
                Tensor("attn.q_b_proj", "attention", heads * (nope + rope), q_lora, True, "shard")]
    else:
        out.append(Tensor("attn.q_proj", "attention", heads * (nope + rope), h, True, "shard"))
    out += [
        Tensor("attn.kv_a_proj_with_mqa", "attention", kv_lora + rope, h, True, "replicate"),
        Tensor("attn.kv_a_layernorm", "attention", kv_lora, 1, False, "replicate"),
        Tensor("attn.kv_b_proj", "attention", heads * (nope + v), kv_lora, True, "shard"),
        Tensor("attn.o_proj", "attention", h, heads * v, True, "shard", split="in"),
    ]
    if index and at.index is not None:   # DeepSeek-V3.2 / GLM-5 sparse-attention indexer
        ih, idim = at.index.heads, at.index.dim
        out += [
            Tensor("indexer.wq_b", "indexer", ih * idim, q_lora, True, "replicate"),
            Tensor("indexer.wk", "indexer", idim, h, True, "replicate"),
            Tensor("indexer.k_norm", "indexer", 2 * idim, 1, False, "replicate"),
            Tensor("indexer.weights_proj", "indexer", ih, h, False, "replicate"),
        ]
    return out


def _gqa_attention(a: ModelArch) -> list[Tensor]:
    at = a.attention
    h, heads, kv, hd, v = a.hidden_size, at.heads, at.kv_heads, at.head_dim, at.v_head_dim
    out = [Tensor("attn.q_proj", "attention", heads * hd, h, True, "shard"),
           Tensor("attn.k_proj", "attention", kv * hd, h, True, "shard", shard_limit=kv),
           Tensor("attn.v_proj", "attention", kv * v, h, True, "shard", shard_limit=kv),
           Tensor("attn.o_proj", "attention", h, heads * v, True, "shard", split="in")]
    if at.qkv_bias:
        out += [Tensor("attn.q_bias", "attention", heads * hd, 1, False, "shard"),
                Tensor("attn.kv_bias", "attention", kv * (hd + v), 1, False, "shard",
                       shard_limit=kv)]
    if at.o_bias:
        out.append(Tensor("attn.o_bias", "attention", h, 1, False, "replicate"))
    if at.qk_norm == "head":
        out.append(Tensor("attn.qk_norm", "attention", 2 * hd, 1, False, "replicate"))
    elif at.qk_norm == "all":
        out.append(Tensor("attn.qk_norm", "attention", (heads + kv) * hd, 1, False, "shard"))
    if at.sinks:
        out.append(Tensor("attn.sinks", "attention", heads, 1, False, "shard"))
    return out


def _layer_norms(h: int) -> list[Tensor]:
    return [Tensor("input_layernorm", "norms", h, 1, False, "replicate"),
            Tensor("post_attention_layernorm", "norms", h, 1, False, "replicate")]


def _moe(a: ModelArch) -> list[Tensor]:
    m, h = a.moe, a.hidden_size
    inter, experts = m.expert_intermediate, m.experts
    out = [
        Tensor("mlp.experts.gate_up", "routed_experts", 2 * inter, h, True, "shard", experts,
               parts=2),
        Tensor("mlp.experts.down", "routed_experts", h, inter, True, "shard", experts, split="in"),
        Tensor("mlp.gate", "router", experts, h, False, "replicate"),
    ]
    if m.expert_bias:
        out += [Tensor("mlp.experts.gate_up_bias", "routed_experts", 2 * inter, 1, False,
                       "shard", experts, parts=2),
                Tensor("mlp.experts.down_bias", "routed_experts", h, 1, False, "shard", experts,
                       split="in")]
    if m.router_bias == "correction":
        out.append(Tensor("mlp.gate.e_score_correction_bias", "router", experts, 1, False,
                          "replicate", elem_bytes=4))
    elif m.router_bias == "linear":
        out.append(Tensor("mlp.gate.bias", "router", experts, 1, False, "replicate"))
    shared = m.shared_intermediate
    if shared:
        out += [Tensor("mlp.shared_experts.gate_up", "shared_experts", 2 * shared, h, True, "shard",
                       parts=2),
                Tensor("mlp.shared_experts.down", "shared_experts", h, shared, True, "shard",
                       split="in")]
    return out


def _dense(a: ModelArch) -> list[Tensor]:
    h, inter = a.hidden_size, a.moe.dense_intermediate
    return [Tensor("mlp.gate_up", "dense_mlp", 2 * inter, h, True, "shard", parts=2),
            Tensor("mlp.down", "dense_mlp", h, inter, True, "shard", split="in")]


@lru_cache(maxsize=64)
def inventory(arch: ModelArch) -> Inventory:
    """Tensor inventory of a model from its capabilities (see the module docstring); built
    once per model (the planner sizes thousands of layouts of one).

    Raises:
        KeyError: the config lacks a field the inventory needs (``arch.missing``).
    """
    if arch.missing:
        raise KeyError(arch.missing)
    if arch.compressed_attention:
        return v4_inventory(arch)
    h = arch.hidden_size
    at = arch.attention
    index = at.index.layers if at.index is not None else (False,) * arch.num_layers
    layer_kinds, kinds = [], {}
    for i, moe in enumerate(arch.moe.moe_layers):
        kind = ("moe" if moe else "dense") + ("" if index[i] or at.index is None
                                               else "+noindex")
        if kind not in kinds:
            attn = (_mla_attention(arch, index[i]) if at.kind == "mla"
                    else _gqa_attention(arch)) + _layer_norms(h)
            kinds[kind] = tuple(attn + (_moe(arch) if moe else _dense(arch)))
        layer_kinds.append(kind)
    vocab = arch.vocab_size
    outer = [Tensor("embed_tokens", "embedding", vocab, h, False, "shard"),
             Tensor("norm", "norms", h, 1, False, "replicate")]
    if not arch.tie_embeddings:
        outer.append(Tensor("lm_head", "lm_head", vocab, h, False, "shard"))
    if arch.vision_params:
        outer.append(Tensor("vision", "vision", arch.vision_params, 1, False, "shard"))
    mtp: tuple[Tensor, ...] = ()
    if arch.mtp_layers:
        attn = (_mla_attention(arch, True) if at.kind == "mla" else _gqa_attention(arch)) \
            + _layer_norms(h)
        mtp = tuple(attn + _moe(arch)) + (
            Tensor("mtp.eh_proj", "mtp", h, 2 * h, True, "replicate"),
            Tensor("mtp.enorm", "mtp", h, 1, False, "replicate"),
            Tensor("mtp.hnorm", "mtp", h, 1, False, "replicate"),
            Tensor("mtp.shared_head.norm", "mtp", h, 1, False, "replicate"),
        )
    return Inventory(kinds=kinds, layer_kinds=tuple(layer_kinds), outer=tuple(outer),
                     mtp_layer=mtp, mtp_layers=arch.mtp_layers)
