"""The one place that reads a Hugging Face ``config.json``: :func:`arch_from_config` maps a
config to the model's capabilities (``catalog/capabilities.py``: :class:`ModelArch`, the attention
kind and shape, the MoE shape, the MTP modules the engines load, the checkpoint's own format and
the class the engines dispatch on). Sizing, KV, rules, engine facts and the performance terms
read those; none of them reads ``model_type`` or a config field (tests/test_capabilities.py greps
for it). Adding a family is one reader here (:data:`READERS`) and a catalog entry.

Families and the config fields each reader takes (the engines' model code that gives each
field its meaning: vLLM 0.33.0 ``vllm/model_executor/models/<file>``, SGLang 0.5.23
``python/sglang/srt/models/<file>``):

================  =======================  ===================================================
model_type        engine model file        attention / MoE
================  =======================  ===================================================
deepseek_v2/v3,   deepseek_v2.py           MLA (``kv_lora_rank`` + ``qk_rope_head_dim`` latent);
kimi_k2                                    ``n_routed_experts`` at ``moe_intermediate_size``
                                           from layer ``first_k_dense_replace`` every
                                           ``moe_layer_freq``; ``n_shared_experts``; FP32
                                           correction bias with ``topk_method: noaux_tc``
deepseek_v32,     deepseek_v2.py,          MLA + the sparse indexer (``index_n_heads`` x
glm_moe_dsa       models/deepseek_v32      ``index_head_dim``, top ``index_topk``); GLM-5.2's
                                           IndexCache builds the indexer on the layers where
                                           max(i - ``index_skip_topk_offset`` + 1, 0) %
                                           ``index_topk_freq`` == 0 (deepseek_v2.py
                                           ``DeepseekV2MLAAttention``: the other layers reuse
                                           its top-k and have no indexer weights or key cache)
deepseek_v4       models/deepseek_v4       compressed attention (``compress_ratios``, one KV
                                           head, ``o_groups`` x ``o_lora_rank``, hyper-
                                           connections ``hc_mult``); hash-routed first
                                           ``num_hash_layers``
qwen3_moe         qwen3_moe.py             GQA (``num_key_value_heads`` x ``head_dim``), per-
                                           head q/k RMSNorm; ``num_experts``, MoE where
                                           (i + 1) % ``decoder_sparse_step`` == 0 and i not in
                                           ``mlp_only_layers``
glm4_moe          glm4_moe.py              GQA with q/k/v bias (``attention_bias``), per-head
                                           q/k norm with ``use_qk_norm``; DeepSeek-style MoE
                                           (``first_k_dense_replace``, ``n_shared_experts``,
                                           correction bias)
gpt_oss           gpt_oss.py               GQA with q/k/v/o bias and one attention sink per
                                           head; ``layer_types`` alternating sliding
                                           (``sliding_window``) / full; ``num_local_experts``
                                           with expert biases, a router with a bias
llama4            llama4.py, mllama4.py    GQA (``text_config``); chunked local attention
                                           (``attention_chunk_size``) on the RoPE layers, full
                                           attention on the NoPE ones (every 4th:
                                           ``no_rope_layers``); MoE on ``moe_layers`` (every
                                           ``interleave_moe_layer_step``) with one shared
                                           expert, dense MLP (``intermediate_size_mlp``)
                                           elsewhere; a vision tower
minimax_m2        minimax_m2.py            GQA with q/k RMSNorm over all heads;
                                           ``num_local_experts``, correction bias
                                           (``use_routing_bias``); its MTP modules are loaded
                                           by neither engine (no MiniMaxM2 MTP class in vLLM
                                           0.33.0's registry or SGLang 0.5.23's models)
================  =======================  ===================================================
"""

from __future__ import annotations

import builtins
from dataclasses import replace
from typing import Any, Callable

from .capabilities import (
    Attention,
    Checkpoint,
    Compressed,
    ModelArch,
    MoeShape,
    RopeScaling,
    SparseIndex,
)

#: A bound no real config reaches, so the arithmetic stays finite.
MAX_CONFIG_INT = 1 << 31


class UnknownArchitecture(ValueError):
    """The config's ``model_type`` is not a family moegen can size and render."""


#: Fields without which a config is not a model at all (MOD003); a missing shape field of a
#: family only keeps the roles from being sized (:attr:`ModelArch.missing`, SIZ005).
BASIC_FIELDS = frozenset({"hidden_size", "num_hidden_layers", "num_attention_heads",
                          "vocab_size", "max_position_embeddings"})


class _Reader:
    """Typed access to one config: every integer a count or width in range, named by its key
    in the error (:func:`config_problems`)."""

    def __init__(self, config: dict):
        self.c = config
        self.problems: list[str] = []
        self.missing: list[str] = []

    def int(self, key: str, default: int | None = None, low: int = 1) -> int:
        v = self.c.get(key)
        if v is None:
            if default is not None:
                return default
            if key in BASIC_FIELDS:
                raise KeyError(key)
            self.missing.append(key)
            return 1
        if isinstance(v, bool) or not isinstance(v, int):
            self.problems.append(f"{key} is {v!r}, not an integer")
            return default if default is not None else low
        if not low <= v < MAX_CONFIG_INT:
            self.problems.append(f"{key} is {v}, outside {low}..{MAX_CONFIG_INT - 1}")
            return default if default is not None else low
        return v

    def count(self, key: str, default: builtins.int = 0) -> builtins.int:
        """An integer where 0 is meaningful (no shared experts, no dense layers)."""
        return self.int(key, default, low=0)

    def flag(self, key: str, default: bool = False) -> bool:
        v = self.c.get(key)
        return default if v is None else bool(v)

    def ints(self, key: str) -> tuple[builtins.int, ...] | None:
        v = self.c.get(key)
        if v is None:
            return None
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                          for x in v):
            self.problems.append(f"{key} is {v!r}, not a list of integers")
            return None
        return tuple(v)


class UnreadQuantization(ValueError):
    """The config's ``quantization_config`` is a format moegen does not read (MOD003): sizing it
    as another would be a guess."""


def _bits(part: object) -> str:
    """A compressed-tensors weights / activations block as the config writes it."""
    if not isinstance(part, dict):
        return repr(part)
    strategy = f" (strategy {part['strategy']})" if part.get("strategy") else ""
    return f"{part.get('type')} {part.get('num_bits')}-bit{strategy}"


def _ct_kind(w: dict, act: object) -> str | None:
    """The moegen format of one compressed-tensors weights block, as vLLM 0.33.0
    model_executor/layers/quantization/compressed_tensors/compressed_tensors.py tells the
    schemes apart (None: none moegen sizes). Float 4-bit is NVFP4 only with strategy
    ``tensor_group`` and group 16 (``_is_nvfp4_format``), MXFP4 with strategy ``group`` and group
    32 (``_is_mxfp4``); float 8-bit with strategy ``group``, group 32 and uint8 (E8M0) scales is
    MXFP8 (``_is_mxfp8``), which moegen has no format for; other float 8-bit is FP8."""
    key = (w.get("type"), w.get("num_bits"))
    shape = (w.get("strategy"), w.get("group_size"), w.get("symmetric", True))
    if key == ("float", 8):
        mx = shape == ("group", 32, True) and \
            str(w.get("scale_dtype", "")).removeprefix("torch.") == "uint8"
        return None if mx else "fp8"
    if key == ("float", 4):
        fp4: dict[tuple, str] = {("tensor_group", 16, True): "nvfp4", ("group", 32, True): "mxfp4"}
        return fp4.get(shape)
    if key == ("int", 4) and not act:
        return "w4a16"
    return None


def _compressed_tensors(q: dict) -> Checkpoint:
    """llm-compressor's schemes (compressed-tensors QuantizationScheme), per :func:`_ct_kind`:
    8-bit float weights are FP8 (FP8_DYNAMIC: per channel; FP8_BLOCK: strategy "block"), NVFP4,
    MXFP4 (moegen's ``mxfp4``: routed experts E2M1 + E8M0 per 32; the other linear layers BF16
    where ``ignore`` names attention, as gpt-oss's MXFP4 leaves them, else sized at block FP8,
    above the MXFP4 the ``targets: [Linear]`` put them in), 4-bit int weights
    without quantized activations the INT4 weight-only W4A16 of Kimi-K2-Thinking. Anything else
    (INT8 W8A8 or W8A16, INT4 weights with INT8 activations, MXFP8, a 4-bit float of another
    group) has no format of its own in the spec, and neither has a config whose groups are of
    different formats (an FP8 group beside an NVFP4 one: which layers each holds is in its
    ``targets``, which moegen does not read): :class:`UnreadQuantization`."""
    cg = q.get("config_groups")
    groups = cg if isinstance(cg, dict) else {}
    kinds: dict[str, list] = {}
    for name, g in groups.items():
        g = g if isinstance(g, dict) else {}
        w, act = g.get("weights"), g.get("input_activations")
        w = w if isinstance(w, dict) else {}
        kind = _ct_kind(w, act)
        if kind is None:
            notes: dict[tuple, str] = {("float", 8): ", MXFP8",
                                       ("float", 4): f", group_size {w.get('group_size')}"}
            extra = notes.get((w.get("type"), w.get("num_bits")), "")
            raise UnreadQuantization(
                f"quantization_config: compressed-tensors config_groups.{name} weights "
                f"{_bits(g.get('weights'))}{extra}, input_activations {_bits(act)}")
        kinds.setdefault(kind, []).append((name, w))
    if not kinds:
        raise UnreadQuantization("quantization_config: compressed-tensors without "
                                 "config_groups weights")
    if len(kinds) > 1:
        raise UnreadQuantization("quantization_config: compressed-tensors config_groups mix " +
                                 " and ".join(f"{k} ({', '.join(n for n, _ in v)})"
                                              for k, v in kinds.items()))
    kind, members = next(iter(kinds.items()))
    if kind == "mxfp4":
        ignore = q.get("ignore")
        kept = ignore if isinstance(ignore, list) else []
        return Checkpoint("mxfp4", 4, bf16_rest=any("attn" in str(i) for i in kept))
    if kind == "fp8":
        return Checkpoint("fp8", 4, fp8_blocks=all(w.get("strategy") == "block"
                                                   for _, w in members))
    return Checkpoint(kind, 4)


def _checkpoint(c: dict) -> Checkpoint:
    """The format of the checkpoint's ``quantization_config`` (BF16 without one).

    Raises:
        UnreadQuantization: a ``quant_method`` (or a compressed-tensors scheme) moegen does not
            read: no format of ``spec.model.weights`` is known to hold it.
    """
    q = c.get("quantization_config") or {}
    if not isinstance(q, dict):
        raise UnreadQuantization(f"quantization_config is {q!r}, not an object")
    method = str(q.get("quant_method", "")).lower()
    ue8m0 = q.get("scale_fmt") == "ue8m0"
    if method == "fp8" and c.get("expert_dtype") == "fp4":   # DeepSeek-V4: FP4 experts
        return Checkpoint("mxfp4", 1 if ue8m0 else 4)
    if method == "fp8":
        return Checkpoint("fp8", 1 if ue8m0 else 4)
    if method == "fbgemm_fp8":
        return Checkpoint("fp8", 4, fp8_blocks=False)
    if method == "mxfp4":
        return Checkpoint("mxfp4", 1 if ue8m0 else 4, bf16_rest=True)
    if method == "compressed-tensors":
        return _compressed_tensors(q)
    if method == "modelopt_fp4" or q.get("quant_algo") == "NVFP4":
        return Checkpoint("nvfp4", 1 if ue8m0 else 4)
    if q:
        raise UnreadQuantization(
            f"quantization_config: quant_method {q.get('quant_method')!r}"
            + (f", quant_algo {q['quant_algo']!r}" if "quant_algo" in q else ""))
    return Checkpoint("bf16", 1 if ue8m0 else 4)


def _check_topk(r: _Reader, experts: int, topk: int, groups: int = 0, topk_group: int = 0,
                keys: tuple[str, str] = ("num_experts_per_tok", "n_routed_experts")) -> None:
    if not r.problems and experts and topk > experts:
        r.problems.append(f"{keys[0]} {topk} exceeds {keys[1]} {experts}")
    if not r.problems and groups and topk_group > groups:
        r.problems.append(f"topk_group {topk_group} exceeds n_group {groups}")


def _dense_width(r: _Reader, moe_layers: tuple[bool, ...], key: str = "intermediate_size") -> int:
    """The dense MLP's intermediate width, read only when some layer is dense."""
    return r.int(key) if not all(moe_layers) else r.int(key, 0, low=0)


def _deepseek(c: dict, label: str) -> ModelArch:
    """DeepSeek-V2/V3/R1/V3.1, Kimi-K2, DeepSeek-V3.2, GLM-5 (MLA + DeepSeek MoE)."""
    r = _Reader(c)
    layers = r.int("num_hidden_layers")
    experts = r.int("n_routed_experts", 0)
    first, freq = r.count("first_k_dense_replace"), r.int("moe_layer_freq", 1)
    moe_inter = r.int("moe_intermediate_size") if experts else 0
    index = None
    if c.get("index_n_heads"):
        freq_i = r.int("index_topk_freq", 1)
        offset = r.count("index_skip_topk_offset", 2)
        pattern = c.get("index_topk_pattern")
        if isinstance(pattern, (list, str)) and len(pattern) >= layers:
            built = tuple(pattern[i] != "S" for i in range(layers))
        else:
            built = tuple(max(i - offset + 1, 0) % freq_i == 0 for i in range(layers))
        index = SparseIndex(r.int("index_n_heads"), r.int("index_head_dim"),
                            r.int("index_topk", 2048), built)
    nope, rope = r.int("qk_nope_head_dim"), r.int("qk_rope_head_dim")
    att = Attention("mla", r.int("num_attention_heads"), 1, nope + rope, r.int("v_head_dim"),
                    ("full",) * layers, q_lora_rank=r.count("q_lora_rank"),
                    kv_lora_rank=r.int("kv_lora_rank"), qk_nope_head_dim=nope,
                    qk_rope_head_dim=rope, index=index)
    groups, topk_group, topk = r.int("n_group", 0), r.int("topk_group", 0), \
        r.int("num_experts_per_tok", 0)
    mask = tuple(bool(experts) and i >= first and i % freq == 0 for i in range(layers))
    moe = MoeShape(experts, topk, moe_inter, r.count("n_shared_experts") * moe_inter,
                   _dense_width(r, mask), mask, groups, topk_group,
                   "correction" if c.get("topk_method") == "noaux_tc" else "")
    _check_topk(r, experts, topk, groups, topk_group)
    return _done(r, c, label, att, moe, mtp=r.count("num_nextn_predict_layers"))


def _deepseek_v4(c: dict) -> ModelArch:
    """DeepSeek-V4 (Pro, Flash): compressed attention, hash-routed first layers."""
    r = _Reader(c)
    layers = r.int("num_hidden_layers")
    ratios = r.ints("compress_ratios") or (0,) * (layers + 1)
    if len(ratios) < layers:
        r.problems.append(f"compress_ratios has {len(ratios)} entries for {layers} layers")
        ratios = tuple(ratios) + (0,) * (layers - len(ratios))
    experts, topk = r.int("n_routed_experts", 0), r.int("num_experts_per_tok", 0)
    inter = r.int("moe_intermediate_size")
    head = r.int("head_dim")
    att = Attention("compressed", r.int("num_attention_heads"), 1, head, head,
                    ("full",) * layers, q_lora_rank=r.int("q_lora_rank"),
                    qk_rope_head_dim=r.int("qk_rope_head_dim"), window=r.count("sliding_window"),
                    index=SparseIndex(r.int("index_n_heads"), r.int("index_head_dim"),
                                      r.int("index_topk", 2048),
                                      tuple(x == 4 for x in ratios[:layers])),
                    compressed=Compressed(tuple(ratios), r.int("o_lora_rank"), r.int("o_groups"),
                                          bool(c.get("compress_rope_theta"))))
    moe = MoeShape(experts, topk, inter, r.count("n_shared_experts") * inter, 0,
                   (True,) * layers, r.int("n_group", 0), r.int("topk_group", 0), "correction",
                   hash_layers=r.count("num_hash_layers"))
    _check_topk(r, experts, topk, moe.groups, moe.topk_group)
    return _done(r, c, "DeepSeek-V4", att, moe, mtp=r.count("num_nextn_predict_layers"),
                 hyper=r.int("hc_mult", 1))


def _gqa(r: _Reader, layer_types: tuple[str, ...], **kw: Any) -> Attention:
    heads = r.int("num_attention_heads")
    kv = r.int("num_key_value_heads", heads)
    head_dim = r.int("head_dim", r.int("hidden_size") // heads)
    if heads % kv:
        r.problems.append(f"num_attention_heads {heads} is not a multiple of "
                          f"num_key_value_heads {kv}")
    return Attention("gqa", heads, kv, head_dim, head_dim, layer_types,
                     rope_dim=_rope_dim(r, head_dim), **kw)


def _rope_dim(r: _Reader, head_dim: int) -> int:
    """The rotary width of a GQA head when only part of it rotates: ``rotary_dim``
    (MiniMax-M2), else ``head_dim`` x ``partial_rotary_factor`` (GLM-4.x: 0.5), as vLLM 0.33.0
    model_executor/layers/rotary_embedding/__init__.py ``get_rope`` sizes its cache; 0: all."""
    if r.c.get("rotary_dim") is not None:
        return r.int("rotary_dim")
    factor = r.c.get("partial_rotary_factor")
    if isinstance(factor, (int, float)) and not isinstance(factor, bool) and 0 < factor < 1:
        return int(head_dim * factor)
    return 0


def _qwen3_moe(c: dict) -> ModelArch:
    """Qwen3-MoE (235B-A22B, 30B-A3B, Coder-480B-A35B)."""
    r = _Reader(c)
    layers = r.int("num_hidden_layers")
    experts, topk = r.int("num_experts", 0), r.int("num_experts_per_tok", 0)
    step = r.int("decoder_sparse_step", 1)
    dense = set(r.ints("mlp_only_layers") or ())
    att = _gqa(r, ("full",) * layers, qkv_bias=r.flag("attention_bias"), qk_norm="head")
    mask = tuple(bool(experts) and i not in dense and (i + 1) % step == 0
                 for i in range(layers))
    moe = MoeShape(experts, topk, r.int("moe_intermediate_size") if experts else 0,
                   r.count("shared_expert_intermediate_size"), _dense_width(r, mask), mask)
    _check_topk(r, experts, topk, keys=("num_experts_per_tok", "num_experts"))
    return _done(r, c, "Qwen3-MoE", att, moe)


def _glm4_moe(c: dict) -> ModelArch:
    """GLM-4.5 / 4.6 / 4.7 (GQA + DeepSeek-style MoE, MTP)."""
    r = _Reader(c)
    layers = r.int("num_hidden_layers")
    experts, topk = r.int("n_routed_experts", 0), r.int("num_experts_per_tok", 0)
    inter = r.int("moe_intermediate_size") if experts else 0
    first = r.count("first_k_dense_replace")
    att = _gqa(r, ("full",) * layers, qkv_bias=r.flag("attention_bias"),
               qk_norm="head" if r.flag("use_qk_norm") else "")
    mask = tuple(bool(experts) and i >= first for i in range(layers))
    moe = MoeShape(experts, topk, inter, r.count("n_shared_experts") * inter,
                   _dense_width(r, mask), mask, r.int("n_group", 0), r.int("topk_group", 0), "correction")
    _check_topk(r, experts, topk, moe.groups, moe.topk_group)
    arch = _done(r, c, "GLM-4.5", att, moe, mtp=r.count("num_nextn_predict_layers"))
    # Zhipu's GLM-4.5/4.6/4.7-FP8 releases are compressed-tensors FP8 without 128 x 128 blocks:
    # they load through compressed_tensors.py (zai-org/GLM-V#178) and run at shards no block
    # divides (GLM-4.5-Air-FP8 at --tp 4: 1,408 / 4 = 352, zai-org/GLM-4.5#23; GLM-4.6-FP8 at
    # --tp 8: 1,536 / 8 = 192, SGLang's GLM-4.5/4.6 usage docs), which vLLM's block check
    # refuses (0.33.0 fp8_utils.py validate_fp8_block_shape_moe).
    return replace(arch, checkpoint=replace(arch.checkpoint, fp8_release_blocks=False))


def _gpt_oss(c: dict) -> ModelArch:
    """gpt-oss (120b, 20b): sliding/full attention with sinks, MXFP4 experts."""
    r = _Reader(c)
    layers = r.int("num_hidden_layers")
    types = c.get("layer_types") or ["sliding_attention", "full_attention"] * (layers // 2 + 1)
    layer_types = tuple("sliding" if str(t).startswith("sliding") else "full"
                        for t in types[:layers])
    experts = r.int("num_local_experts", 0)
    topk = r.int("num_experts_per_tok", r.int("experts_per_token", 0))
    att = _gqa(r, layer_types, qkv_bias=True, o_bias=True, sinks=True,
               window=r.count("sliding_window"))
    moe = MoeShape(experts, topk, r.int("intermediate_size"), 0, 0, (bool(experts),) * layers,
                   router_bias="linear", expert_bias=True)
    _check_topk(r, experts, topk, keys=("num_experts_per_tok", "num_local_experts"))
    return _done(r, c, "gpt-oss", att, moe)


def _llama4(c: dict) -> ModelArch:
    """Llama-4 (Scout, Maverick): the language model of ``text_config`` and its vision tower."""
    t = c.get("text_config") or c
    r = _Reader(t)
    layers = r.int("num_hidden_layers")
    nope = r.ints("no_rope_layers")
    if not nope or len(nope) < layers:   # transformers' default: every 4th layer is NoPE
        interval = r.int("no_rope_layer_interval", 4)
        nope = tuple(int((i + 1) % interval != 0) for i in range(layers))
    chunk = r.count("attention_chunk_size")
    layer_types = tuple("chunked" if (nope[i] and chunk) else "full" for i in range(layers))
    experts, topk = r.int("num_local_experts", 0), r.int("num_experts_per_tok", 0)
    step = r.int("interleave_moe_layer_step", 1)
    moe_at = set(r.ints("moe_layers") or range(step - 1, layers, step))
    inter = r.int("intermediate_size")
    att = _gqa(r, layer_types, chunk=chunk)
    moe = MoeShape(experts, topk, inter, inter, r.int("intermediate_size_mlp", inter),
                   tuple(bool(experts) and i in moe_at for i in range(layers)))
    _check_topk(r, experts, topk, keys=("num_experts_per_tok", "num_local_experts"))
    v = c.get("vision_config") or {}
    vision = 0
    if v:
        vr = _Reader(v)
        h, inter_v = vr.int("hidden_size"), vr.int("intermediate_size")
        # Per ViT layer q/k/v/o and the two MLP matrices; the projector to the text width.
        vision = vr.int("num_hidden_layers") * (4 * h * h + 2 * h * inter_v) \
            + vr.int("vision_output_dim", h) * r.int("hidden_size")
        r.problems += vr.problems
    arch = _done(r, t, "Llama-4", att, moe, vision=vision)
    return replace(_with(arch, c), text_config=t is not c)


def _minimax_m2(c: dict) -> ModelArch:
    """MiniMax-M2 (GQA, q/k norm over all heads, 256 experts)."""
    r = _Reader(c)
    layers = r.int("num_hidden_layers")
    experts, topk = r.int("num_local_experts", 0), r.int("num_experts_per_tok", 0)
    att = _gqa(r, ("full",) * layers,
               qk_norm="all" if c.get("qk_norm_type", "per_layer") == "per_layer" else "head")
    moe = MoeShape(experts, topk, r.int("intermediate_size"), 0, 0, (bool(experts),) * layers,
                   router_bias="correction" if r.flag("use_routing_bias", True) else "")
    _check_topk(r, experts, topk, keys=("num_experts_per_tok", "num_local_experts"))
    return _done(r, c, "MiniMax-M2", att, moe)


def _done(r: _Reader, c: dict, label: str, att: Attention, moe: MoeShape, *, mtp: int = 0,
          hyper: int = 1, vision: int = 0) -> ModelArch:
    arch = ModelArch(label=label, engine_class=_engine_class(c),
                     hidden_size=r.int("hidden_size"), num_layers=r.int("num_hidden_layers"),
                     vocab_size=r.int("vocab_size"),
                     max_position_embeddings=r.int("max_position_embeddings"),
                     attention=att, moe=moe, mtp_layers=mtp,
                     tie_embeddings=r.flag("tie_word_embeddings"), hyper_connections=hyper,
                     vision_params=vision, checkpoint=_checkpoint(c),
                     rope_scaling=_rope(c), missing=r.missing[0] if r.missing else "")
    if r.problems:
        raise ValueError("; ".join(r.problems))
    return arch


def _rope(c: dict) -> RopeScaling | None:
    """The config's ``rope_scaling`` / ``rope_parameters`` (a flat one; None without a type)."""
    rope = c.get("rope_scaling") or c.get("rope_parameters")
    if not isinstance(rope, dict):
        return None
    kind = rope.get("rope_type", rope.get("type"))
    factor, original = rope.get("factor"), rope.get("original_max_position_embeddings")
    if not isinstance(kind, str):
        return None
    return RopeScaling(kind, float(factor) if isinstance(factor, (int, float))
                       and not isinstance(factor, bool) else None,
                       original if isinstance(original, int) and not isinstance(original, bool)
                       else None)


def _with(arch: ModelArch, outer: dict) -> ModelArch:
    """``arch`` with the outer config's class and checkpoint (multimodal configs)."""
    return replace(arch, engine_class=_engine_class(outer), checkpoint=_checkpoint(outer))


def _remote_tokenizer(arch: ModelArch) -> ModelArch:
    return replace(arch, checkpoint=replace(arch.checkpoint, remote_code_tokenizer=True))


def _engine_class(c: dict) -> str:
    names = c.get("architectures") or [""]
    return str(names[0]) if isinstance(names, list) and names else ""


#: HF ``model_type`` -> the reader of its configs. Kimi-K2 and GLM-5 read as DeepSeek.
READERS: dict[str, Callable[[dict], ModelArch]] = {
    "deepseek_v2": lambda c: _deepseek(c, "DeepSeek-V2"),
    "deepseek_v3": lambda c: _deepseek(c, "DeepSeek-V3"),
    "kimi_k2": lambda c: _remote_tokenizer(_deepseek(c, "Kimi-K2")),
    "deepseek_v32": lambda c: _deepseek(c, "DeepSeek-V3.2"),
    "glm_moe_dsa": lambda c: _deepseek(c, "GLM-5"),
    "deepseek_v4": _deepseek_v4,
    "qwen3_moe": _qwen3_moe,
    "glm4_moe": _glm4_moe,
    "gpt_oss": _gpt_oss,
    "llama4": _llama4,
    "minimax_m2": _minimax_m2,
}


def arch_from_config(config: Any) -> ModelArch:
    """The capabilities of a parsed HF ``config.json``.

    Raises:
        UnknownArchitecture: ``model_type`` is missing or has no reader (:data:`READERS`).
        KeyError: a field the family needs is missing.
        ValueError: a field is unusable (not an integer, out of range, top-k beyond the
            experts), every problem named in the message.
    """
    if not isinstance(config, dict):
        raise TypeError(f"config.json is {type(config).__name__}, not an object")
    model_type = config.get("model_type")
    reader = READERS.get(model_type) if isinstance(model_type, str) else None
    if reader is None:
        raise UnknownArchitecture(
            f"model_type {model_type!r} is not supported (supported: "
            f"{', '.join(sorted(READERS))})")
    return reader(config)


def config_problems(config: dict) -> list[str]:
    """What makes a config.json unusable for sizing (empty: usable; a missing field is named
    as missing)."""
    try:
        arch_from_config(config)
    except UnknownArchitecture as exc:
        return [str(exc)]
    except KeyError as exc:
        return [f"{exc.args[0]} is missing"]
    except (TypeError, ValueError) as exc:
        return [str(exc)]
    return []
