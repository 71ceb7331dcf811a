"""The model as capabilities: what sizing, KV, rules, engine facts and performance terms know
of a model (:class:`ModelArch`: the attention kind and shape, the MoE shape, the MTP modules the
engines load, the checkpoint's own format, the class the engines dispatch on).

``catalog/readers.py`` is the one place that reads a Hugging Face ``config.json`` into these;
nothing else reads the config (its family name or a field; tests/test_capabilities.py greps).
"""

from __future__ import annotations

from dataclasses import dataclass

@dataclass(frozen=True)
class SparseIndex:
    """The sparse-attention indexer of DeepSeek-V3.2 / GLM-5 / DeepSeek-V4.

    Attributes:
        heads, dim: ``index_n_heads`` x ``index_head_dim``.
        topk: keys each query attends to (``index_topk``).
        layers: per main layer, whether it builds an indexer (its weights and its key cache);
            all True unless the config shares indexers across layers (IndexCache).
    """

    heads: int
    dim: int
    topk: int
    layers: tuple[bool, ...]


@dataclass(frozen=True)
class Compressed:
    """DeepSeek-V4's compressed attention (sizing/params.py, sizing/kv.py).

    Attributes:
        ratios: ``compress_ratios`` (every main layer, then the MTP layer).
        o_lora_rank, o_groups: the grouped output projection.
        rope_theta_compressed: ``compress_rope_theta`` is set (a second RoPE table).
    """

    ratios: tuple[int, ...]
    o_lora_rank: int
    o_groups: int
    rope_theta_compressed: bool = True


@dataclass(frozen=True)
class Attention:
    """How a layer attends and what it caches.

    Attributes:
        kind: ``mla`` (one latent per token: ``kv_lora_rank`` + ``qk_rope_head_dim``),
            ``gqa`` (``kv_heads`` keys and values per token; MHA when ``kv_heads == heads``),
            ``compressed`` (DeepSeek-V4, :attr:`compressed`).
        heads: query heads (``num_attention_heads``).
        kv_heads: KV heads of the cache: GQA ``num_key_value_heads``; 1 for MLA and
            compressed attention (one latent / one KV head, replicated on every TP rank).
        head_dim: query-key width per head (MLA: nope + rope).
        v_head_dim: value width per head.
        q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim: MLA's ranks (0 else;
            DeepSeek-V4 uses ``q_lora_rank`` and ``qk_rope_head_dim``).
        qkv_bias, o_bias: the projections carry biases.
        qk_norm: ``head`` (RMSNorm over each head: Qwen3, GLM-4.5), ``all`` (over all heads:
            MiniMax-M2) or "" (none, or without weights).
        sinks: one learned attention sink per head (gpt-oss).
        layer_types: per main layer ``full``, ``sliding`` (the last :attr:`window` tokens) or
            ``chunked`` (the current :attr:`chunk`-token chunk).
        window: sliding window, tokens (gpt-oss; DeepSeek-V4's window is in ``kv.py``).
        chunk: chunked local attention, tokens (Llama-4 ``attention_chunk_size``).
        index: the sparse indexer (None: dense attention).
        compressed: DeepSeek-V4's compressed attention (None otherwise).
        rope_dim: rotary width per head when only part of a GQA head rotates (GLM-4.x
            ``partial_rotary_factor``, MiniMax-M2 ``rotary_dim``); 0: the whole head (GQA) or
            ``qk_rope_head_dim`` (MLA, compressed). :attr:`rotary_dim` reads it.
    """

    kind: str
    heads: int
    kv_heads: int
    head_dim: int
    v_head_dim: int
    layer_types: tuple[str, ...]
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: str = ""
    sinks: bool = False
    window: int = 0
    chunk: int = 0
    index: SparseIndex | None = None
    compressed: Compressed | None = None
    rope_dim: int = 0

    @property
    def rotary_dim(self) -> int:
        """Columns of the engines' rotary cos/sin cache: :attr:`rope_dim`, else
        ``qk_rope_head_dim`` (MLA, compressed), else the whole head."""
        return self.rope_dim or self.qk_rope_head_dim or self.head_dim

    @property
    def local(self) -> bool:
        """Some layers attend to a window or a chunk only (the engines' hybrid KV pools)."""
        return any(t != "full" for t in self.layer_types)


@dataclass(frozen=True)
class MoeShape:
    """The feed-forward layers.

    Attributes:
        experts: routed experts (0: a dense model); top_k: experts per token.
        expert_intermediate: intermediate width of one routed expert.
        shared_intermediate: intermediate width of the shared expert(s) together (0: none).
        dense_intermediate: intermediate width of the dense MLP layers.
        moe_layers: per main layer, MoE (True) or dense MLP (False).
        groups, topk_group: group-limited routing (0: none).
        router_bias: ``correction`` (an FP32 score-correction bias per expert), ``linear`` (a
            BF16 bias of the router, gpt-oss) or "".
        expert_bias: every expert's projections carry biases (gpt-oss).
        hash_layers: the first layers route by token hash (DeepSeek-V4 ``num_hash_layers``).
    """

    experts: int
    top_k: int
    expert_intermediate: int
    shared_intermediate: int
    dense_intermediate: int
    moe_layers: tuple[bool, ...]
    groups: int = 0
    topk_group: int = 0
    router_bias: str = ""
    expert_bias: bool = False
    hash_layers: int = 0

    @property
    def first_dense(self) -> int:
        """Dense layers before the first MoE layer (DeepSeek ``first_k_dense_replace``)."""
        for i, moe in enumerate(self.moe_layers):
            if moe:
                return i
        return len(self.moe_layers)

    @property
    def moe_layer_count(self) -> int:
        """Main layers with routed experts."""
        return sum(self.moe_layers)


@dataclass(frozen=True)
class Checkpoint:
    """The checkpoint the config describes (its ``quantization_config``).

    Attributes:
        format: the ``spec.model.weights`` format it is (``bf16``, ``fp8``, ``mxfp4``,
            ``w4a16``); the user's ``model.weights`` may name another one.
        fp8_scale_bytes: bytes of one FP8 block scale: 4 (FP32) or 1 (``scale_fmt: ue8m0``).
        fp8_blocks: FP8 weights carry 128 x 128 block scales (DeepSeek block FP8); False for
            per-channel FP8 (``fbgemm_fp8``: Llama-4's FP8 release).
        bf16_rest: in this checkpoint's own 4-bit format only the routed experts are
            quantized, every other linear layer is BF16 (gpt-oss's MXFP4:
            ``modules_to_not_convert`` lists attention, router, embedding and head).
        remote_code_tokenizer: the tokenizer is custom code (Kimi-K2's ``tokenizer_config.json``
            ``auto_map`` -> ``tokenization_kimi.TikTokenTokenizer``): the engines load it only
            with ``--trust-remote-code`` (facts/requirements.py).
        fp8_release_blocks: for a config that is not FP8 itself, whether the FP8 checkpoint
            the model's maker publishes (what ``weights: fp8`` then names) carries 128 x 128
            block scales (DeepSeek, Qwen3, MiniMax-M2, GLM-5); False for a per-channel release
            (GLM-4.5/4.6/4.7-FP8: catalog/readers.py ``_glm4_moe``).
    """

    format: str = "bf16"
    fp8_scale_bytes: int = 4
    fp8_blocks: bool = True
    bf16_rest: bool = False
    remote_code_tokenizer: bool = False
    fp8_release_blocks: bool = True

    @property
    def fp8_block_scales(self) -> bool:
        """``weights: fp8`` of this model holds 128 x 128 blocks: this checkpoint's own FP8
        format when it is FP8, else the maker's FP8 release (:attr:`fp8_release_blocks`)."""
        return self.fp8_blocks if self.format == "fp8" else self.fp8_release_blocks


@dataclass(frozen=True)
class RopeScaling:
    """The config's ``rope_scaling`` (or ``rope_parameters``) as the engines' context derivation
    reads it (generator/roles.py ``context_limit``).

    Attributes:
        kind: ``rope_type`` (or the legacy ``type``): ``yarn``, ``llama3``, ``dynamic`` ...
        factor: ``factor`` (None when absent).
        original: ``original_max_position_embeddings`` (None when absent).
    """

    kind: str
    factor: float | None = None
    original: int | None = None

    def as_dict(self) -> dict:
        """The config's own keys."""
        out: dict = {"rope_type": self.kind}
        if self.factor is not None:
            out["factor"] = self.factor
        if self.original is not None:
            out["original_max_position_embeddings"] = self.original
        return out


@dataclass(frozen=True)
class ModelArch:
    """The model as capabilities (see the module docstring).

    Attributes:
        label: the family as users name it (``DeepSeek-V3.2``, ``Qwen3-MoE``), for messages.
        engine_class: ``architectures[0]``: the class the engines' model registries dispatch
            on (vLLM 0.33.0 vllm/model_executor/models/registry.py, SGLang's EntryClass); the
            key of per-release engine facts that are about one model implementation.
        hidden_size, num_layers, vocab_size, max_position_embeddings: as in the config.
        attention, moe: :class:`Attention`, :class:`MoeShape`.
        mtp_layers: MTP modules the engines load for speculative decoding (0: none).
        tie_embeddings: the LM head is the embedding (one tensor).
        hyper_connections: DeepSeek-V4 ``hc_mult`` (1 otherwise).
        rope_scaling: the language model's :class:`RopeScaling` (None without one).
        text_config: the config nests the language model under ``text_config`` (Llama-4): the
            engines derive the context there, and a flat config override does not reach it.
        vision_params: parameters of a vision tower the engine loads beside the language
            model (BF16, tensor-parallel; 0: none).
        checkpoint: :class:`Checkpoint`.
        missing: the first shape field the config lacks ("" when complete): the layout rules
            still run, the weight inventory cannot (SIZ005).
    """

    label: str
    engine_class: str
    hidden_size: int
    num_layers: int
    vocab_size: int
    max_position_embeddings: int
    attention: Attention
    moe: MoeShape
    mtp_layers: int = 0
    tie_embeddings: bool = False
    hyper_connections: int = 1
    text_config: bool = False
    rope_scaling: RopeScaling | None = None
    vision_params: int = 0
    checkpoint: Checkpoint = Checkpoint()
    missing: str = ""

    # Shorthands the layout rules read.
    @property
    def num_attention_heads(self) -> int:
        """Query heads."""
        return self.attention.heads

    @property
    def routed_experts(self) -> int:
        """Routed experts (0 for dense models)."""
        return self.moe.experts

    @property
    def experts_per_token(self) -> int:
        """Top-k."""
        return self.moe.top_k

    @property
    def compressed_attention(self) -> bool:
        """DeepSeek-V4's compressed attention (its own KV layout, checkpoint and kernels)."""
        return self.attention.compressed is not None

    @property
    def sparse_attention(self) -> bool:
        """Indexer-selected sparse MLA (DeepSeek-V3.2, GLM-5); not V4's compressed attention."""
        return self.attention.index is not None and not self.compressed_attention


#: The families as users name them, for messages (MOD002).
FAMILY_LABELS = ("DeepSeek-V2/V3/R1/V3.1/V3.2/V4, Kimi-K2, GLM-4.5/4.6/4.7, GLM-5, Qwen3-MoE, "
                 "gpt-oss, Llama-4, MiniMax-M2")
