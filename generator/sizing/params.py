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

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Tensor:
    """One weight tensor (per layer that has it).

    Attributes:
        name: e.g. ``attn.q_b_proj``.
        component: ``attention`` | ``indexer`` | ``dense_mlp`` | ``shared_experts`` |
            ``routed_experts`` | ``router`` | ``embedding`` | ``lm_head`` | ``norms`` | ``mtp``.
        out_dim, in_dim: matrix shape (a vector has in_dim 1).
        quantized: stored in the checkpoint's low-precision format (FP8 / 4-bit); False keeps
            BF16 (or FP32 for ``fp32``).
        tp: ``shard`` (divided by the tensor-parallel size) or ``replicate``.
        experts: how many experts the tensor is repeated for (routed experts only, else 1).
        elem_bytes: bytes per element when not quantized (2 = BF16; 4 = FP32/int32, e.g.
            ``e_score_correction_bias``, V4's hyper-connection weights and ``tid2eid``).
        split: which dimension tensor parallelism divides: ``out`` (column-parallel) or ``in``
            (row-parallel: ``o_proj``, ``down``, V4's ``wo_b``; vLLM ``RowParallelLinear``).
        parts: merged matrices along ``out`` that are split separately (2 for gate_up: vLLM
            ``MergedColumnParallelLinear`` output_partition_sizes).
    """

    name: str
    component: str
    out_dim: int
    in_dim: int
    quantized: bool
    tp: str
    experts: int = 1
    elem_bytes: int = 2
    split: str = "out"
    parts: int = 1

    @property
    def params(self) -> int:
        """Parameters of the tensor for all its experts."""
        return self.out_dim * self.in_dim * self.experts


@dataclass(frozen=True)
class Inventory:
    """The tensors of a model by layer kind.

    Attributes:
        kinds: tensors of one decoder layer of each kind (``dense``, ``moe``; DeepSeek-V4:
            ``r4``/``r128``/``r0`` by compress ratio, ``+hash`` for hash-routed layers).
        layer_kinds: the kind of every main layer, in order.
        outer: embedding, final norm(s) and lm_head (placed on the first/last pipeline stage).
        mtp_layer: tensors of one MTP module (empty when the model has none).
        mtp_layers: number of MTP modules.
    """

    kinds: dict[str, tuple[Tensor, ...]]
    layer_kinds: tuple[str, ...]
    outer: tuple[Tensor, ...]
    mtp_layer: tuple[Tensor, ...]
    mtp_layers: int

    def layer(self, i: int) -> tuple[Tensor, ...]:
        """Tensors of main layer ``i``."""
        return self.kinds[self.layer_kinds[i]]

    def total_params(self, with_mtp: bool = False) -> int:
        """All parameters of the main model (plus the MTP modules with ``with_mtp``)."""
        per = {k: sum(t.params for t in ts) for k, ts in self.kinds.items()}
        total = sum(per[k] for k in self.layer_kinds) + sum(t.params for t in self.outer)
        if with_mtp:
            total += self.mtp_layers * sum(t.params for t in self.mtp_layer)
        return total

    def kind_counts(self) -> dict[str, int]:
        """Number of main layers of each kind, kinds in order of first appearance."""
        return dict(self._kind_counts)

    @cached_property
    def _kind_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for kind in self.layer_kinds:
            counts[kind] = counts.get(kind, 0) + 1
        return counts

    def component_params(self) -> dict[str, int]:
        """Main-model parameters by component (MTP excluded)."""
        out: dict[str, int] = {}
        for kind, n in self._kind_counts.items():
            for t in self.kinds[kind]:
                out[t.component] = out.get(t.component, 0) + n * t.params
        for t in self.outer:
            out[t.component] = out.get(t.component, 0) + t.params
        return out


def _attention(c: dict) -> list[Tensor]:
    h = c["hidden_size"]
    heads = c["num_attention_heads"]
    nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    kv_lora = c["kv_lora_rank"]
    q_lora = c.get("q_lora_rank")
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
    if c.get("index_n_heads"):  # DeepSeek-V3.2 sparse-attention indexer
        ih, idim = c["index_n_heads"], c["index_head_dim"]
        out += [
            Tensor("indexer.wq_b", "indexer", ih * idim, q_lora, True, "replicate"),
            Tensor("indexer.wk", "indexer", idim, h, True, "replicate"),
            Tensor("indexer.k_norm", "indexer", 2 * idim, 1, False, "replicate"),
            Tensor("indexer.weights_proj", "indexer", ih, h, False, "replicate"),
        ]
    return out


def _layer_norms(h: int) -> list[Tensor]:
    return [Tensor("input_layernorm", "norms", h, 1, False, "replicate"),
            Tensor("post_attention_layernorm", "norms", h, 1, False, "replicate")]


def _moe(c: dict) -> list[Tensor]:
    h, inter = c["hidden_size"], c["moe_intermediate_size"]
    experts = c["n_routed_experts"]
    shared = (c.get("n_shared_experts") or 0) * inter
    out = [
        Tensor("mlp.experts.gate_up", "routed_experts", 2 * inter, h, True, "shard", experts,
               parts=2),
        Tensor("mlp.experts.down", "routed_experts", h, inter, True, "shard", experts, split="in"),
        Tensor("mlp.gate", "router", experts, h, False, "replicate"),
    ]
    if c.get("topk_method") == "noaux_tc":
        out.append(Tensor("mlp.gate.e_score_correction_bias", "router", experts, 1, False,
                          "replicate", elem_bytes=4))
    if shared:
        out += [Tensor("mlp.shared_experts.gate_up", "shared_experts", 2 * shared, h, True, "shard",
                       parts=2),
                Tensor("mlp.shared_experts.down", "shared_experts", h, shared, True, "shard",
                       split="in")]
    return out


def _dense(c: dict) -> list[Tensor]:
    h, inter = c["hidden_size"], c["intermediate_size"]
    return [Tensor("mlp.gate_up", "dense_mlp", 2 * inter, h, True, "shard", parts=2),
            Tensor("mlp.down", "dense_mlp", h, inter, True, "shard", split="in")]


#: Inventories of the configs seen last, by identity: ``id(config) -> (config, inventory)``.
#: The config is kept so its id cannot be reused while cached; configs are never mutated
#: (the catalog's are cached, a spec's ``config.json`` is read once).
_INVENTORIES: dict[int, tuple[dict, Inventory]] = {}


def inventory(config: dict) -> Inventory:
    """Tensor inventory of an MLA + MoE model (DeepSeek-V2/V3/V3.2 families, Kimi-K2).

    The planner sizes thousands of layouts of one model: the inventory of a config object is
    built once (the config must not be mutated afterwards).

    Raises:
        KeyError: a config field the inventory needs is missing.
    """
    hit = _INVENTORIES.get(id(config))
    if hit is not None and hit[0] is config:
        return hit[1]
    inv = _build_inventory(config)
    if len(_INVENTORIES) >= 16:
        _INVENTORIES.clear()
    _INVENTORIES[id(config)] = (config, inv)
    return inv


def _build_inventory(config: dict) -> Inventory:
    mt = config.get("model_type")
    if mt == "deepseek_v4":
        return _v4_inventory(config)
    h = config["hidden_size"]
    attn = _attention(config) + _layer_norms(h)
    layers = config["num_hidden_layers"]
    first_dense = config.get("first_k_dense_replace", 0)
    freq = config.get("moe_layer_freq", 1) or 1
    kinds = tuple("moe" if (i >= first_dense and i % freq == 0) else "dense" for i in range(layers))
    vocab = config["vocab_size"]
    outer = (
        Tensor("embed_tokens", "embedding", vocab, h, False, "shard"),
        Tensor("norm", "norms", h, 1, False, "replicate"),
        Tensor("lm_head", "lm_head", vocab, h, False, "shard"),
    )
    moe_layer = tuple(attn + _moe(config))
    mtp_extra = [
        Tensor("mtp.eh_proj", "mtp", h, 2 * h, True, "replicate"),
        Tensor("mtp.enorm", "mtp", h, 1, False, "replicate"),
        Tensor("mtp.hnorm", "mtp", h, 1, False, "replicate"),
        Tensor("mtp.shared_head.norm", "mtp", h, 1, False, "replicate"),
    ]
    mtp = tuple(moe_layer) + tuple(mtp_extra)
    return Inventory(
        kinds={"dense": tuple(attn + _dense(config)), "moe": moe_layer},
        layer_kinds=kinds,
        outer=outer,
        mtp_layer=mtp,
        mtp_layers=int(config.get("num_nextn_predict_layers") or 0),
    )


def _v4_layer(c: dict, ratio: int, hashed: bool, mtp: bool = False) -> list[Tensor]:
    """One DeepSeek-V4 decoder layer (see the module docstring for sources)."""
    d, heads, dim = c["hidden_size"], c["num_attention_heads"], c["head_dim"]
    q, o, groups = c["q_lora_rank"], c["o_lora_rank"], c["o_groups"]
    experts, inter = c["n_routed_experts"], c["moe_intermediate_size"]
    hc = c.get("hc_mult", 1)
    m = (2 + hc) * hc
    shared = (c.get("n_shared_experts") or 0) * inter
    out = [
        Tensor("attn.wq_a", "attention", q, d, True, "replicate"),
        Tensor("attn.q_norm", "attention", q, 1, False, "replicate"),
        Tensor("attn.wq_b", "attention", heads * dim, q, True, "shard"),
        Tensor("attn.wkv", "attention", dim, d, True, "replicate"),
        Tensor("attn.kv_norm", "attention", dim, 1, False, "replicate"),
        Tensor("attn.wo_a", "attention", groups * o, heads * dim // groups, True, "shard"),
        Tensor("attn.wo_b", "attention", d, groups * o, True, "shard", split="in"),
        Tensor("attn.attn_sink", "attention", heads, 1, False, "shard", elem_bytes=4),
        Tensor("hc.fn", "attention", 2 * m, hc * d, False, "replicate", elem_bytes=4),
        Tensor("hc.base_scale", "attention", 2 * (m + 3), 1, False, "replicate", elem_bytes=4),
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
        ih, idim = c["index_n_heads"], c["index_head_dim"]
        out += [Tensor("indexer.wq_b", "indexer", ih * idim, q, True, "replicate"),
                Tensor("indexer.weights_proj", "indexer", ih, d, False, "replicate"),
                Tensor("indexer.compressor.ape", "indexer", 4, 2 * idim, False, "replicate",
                       elem_bytes=4),
                Tensor("indexer.compressor.wkv+wgate", "indexer", 4 * idim, d, False, "replicate"),
                Tensor("indexer.compressor.norm", "indexer", idim, 1, False, "replicate")]
    if hashed:
        out.append(Tensor("mlp.gate.tid2eid", "router", c["vocab_size"],
                          c["num_experts_per_tok"], False, "replicate", elem_bytes=4))
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


def v4_ratios(config: dict) -> list[int]:
    """Compress ratio of every main layer (``compress_ratios`` lists the MTP layer last)."""
    return list(config["compress_ratios"][: config["num_hidden_layers"]])


def _v4_inventory(c: dict) -> Inventory:
    d, vocab, hc = c["hidden_size"], c["vocab_size"], c.get("hc_mult", 1)
    hash_layers = c.get("num_hash_layers") or 0
    kinds: dict[str, tuple[Tensor, ...]] = {}
    layer_kinds = []
    for i, ratio in enumerate(v4_ratios(c)):
        hashed = i < hash_layers
        kind = f"r{ratio}" + ("+hash" if hashed else "")
        kinds.setdefault(kind, tuple(_v4_layer(c, ratio, hashed)))
        layer_kinds.append(kind)
    outer = (
        Tensor("embed", "embedding", vocab, d, False, "shard"),
        Tensor("norm", "norms", d, 1, False, "replicate"),
        Tensor("hc_head", "norms", hc, hc * d + 2, False, "replicate", elem_bytes=4),
        Tensor("head", "lm_head", vocab, d, False, "shard"),
    )
    return Inventory(kinds=kinds, layer_kinds=tuple(layer_kinds), outer=outer,
                     mtp_layer=tuple(_v4_layer(c, 0, False, mtp=True)),
                     mtp_layers=int(c.get("num_nextn_predict_layers") or 0))
