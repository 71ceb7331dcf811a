"""Weight bytes resident on the most loaded GPU of a role.

Bytes, not parameters: each tensor of the inventory (``sizing/params.py``) is priced in the
checkpoint format, then placed as the engine places it.

Formats (``spec.model.weights``), bytes per parameter of a *quantized* tensor:

* ``bf16``: 2.
* ``fp8``: DeepSeek's block FP8 (config ``quantization_config.weight_block_size`` [128, 128]):
  1 byte + one FP32 scale per 128 x 128 block (vLLM ``Fp8LinearMethod`` block scales
  ``weight_scale_inv``).
* ``w4a8``: routed experts in 4-bit integers with one BF16 scale per group of 128 (0.5 + 2/128 B;
  the w4a8 layout of TensorRT-LLM/ModelOpt for DeepSeek), every other quantized tensor block FP8.
* ``mxfp4``: routed experts in MXFP4 (OCP MX: 4-bit E2M1 + one E8M0 scale per 32 values,
  0.5 + 1/32 B), every other quantized tensor block FP8 (DeepSeek-V4 checkpoints' ``expert_dtype:
  fp4``).
* ``nvfp4``: ModelOpt NVFP4 (E2M1 + one FP8 E4M3 scale per 16, 0.5 + 1/16 B, plus two FP32
  scalars per matrix) on the MLP linears (routed, shared experts, dense MLP), attention and the
  MTP layer BF16 (nvidia/DeepSeek-R1-FP4); DeepSeek-V4's hybrid keeps its block-FP8 rest.
* ``nvfp4-v2``: ``nvfp4`` with the attention output projection ``o_proj`` NVFP4 too (NVIDIA's
  ``-v2`` checkpoints, e.g. nvidia/DeepSeek-R1-0528-NVFP4-v2).
* ``w4a16``: routed experts INT4 with a BF16 scale per 32 (0.5 + 2/32 B), everything else BF16
  (moonshotai/Kimi-K2-Thinking's compressed-tensors ``ignore`` list).

Which tensor has which encoding, with the sources, and how each engine holds each format per
GPU family: ``sizing/formats.py``.

Tensors the checkpoint keeps unquantized (embedding, lm_head, router, norms, V3.2's indexer
``weights_proj``) cost 2 bytes (FP32 ones 4).

Placement (vLLM 0.33 ``deepseek_v2.py`` / ``fused_moe``; SGLang places the same way):

* ``shard`` tensors are divided by the tensor-parallel size; ``replicate`` ones are whole on every
  GPU; data parallelism (attention DP) replicates everything but the routed experts.
* Routed experts: with expert parallelism each GPU holds ceil((experts + redundant) / EP) expert
  slots (vLLM ``FusedMoE`` local experts; EPLB's redundant experts are extra slots,
  vllm/distributed/eplb); without it every expert is sharded by TP (MoE tensor parallelism).
* vLLM's MLA keeps BF16 copies of the absorbed ``kv_b_proj`` halves (``W_UK_T``, ``W_UV``:
  vllm/model_executor/layers/attention/mla_attention.py ``process_weights_after_loading``),
  heads/TP x kv_lora x (nope + v) x 2 bytes per layer, when ``kv_b_proj`` is quantized (it is
  dequantized into new tensors; a BF16 ``kv_b_proj`` is only split into views). This and the
  replicated q_a/kv_a are why vLLM prints 79.74 GiB for R1 FP8 at TP8 where division gives 78.4
  (the start-up logs bench/sizing_residuals.py replays).
* Pipeline stages split the layers as vLLM's ``get_pp_indices`` (vllm/distributed/utils.py):
  L // PP layers per stage, the remainder given one each to the stages before the last; the
  embedding sits on the first stage, final norm + lm_head (and the MTP module) on the last.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import ModelArch
from .formats import FP8_BLOCK, encoded_bytes, encoding
from .params import Inventory, Tensor

GIB = 2**30


@dataclass(frozen=True)
class Encoding:
    """What decides a tensor's encoding beyond its component, for one model and format.

    Attributes:
        scale_bytes: bytes of one FP8 block scale: 4 (FP32, DeepSeek-V3) or 1 (UE8M0,
            ``quantization_config.scale_fmt: ue8m0`` of V3.1/V3.2/V4 checkpoints).
        v4: the model has DeepSeek-V4's compressed attention (its ``nvfp4`` checkpoint is the
            FP8 + NVFP4 hybrid, ``sizing/formats.py``).
        bf16_rest: ``fmt`` is the checkpoint's own 4-bit format, which quantizes only the
            routed experts (gpt-oss's MXFP4: ``catalog.capabilities.Checkpoint``).
    """

    scale_bytes: int = 4
    v4: bool = False
    bf16_rest: bool = False


def encoding_of(arch: ModelArch, fmt: str) -> Encoding:
    """The :class:`Encoding` of ``arch``'s checkpoint in format ``fmt``."""
    ck = arch.checkpoint
    return Encoding(ck.fp8_scale_bytes, arch.compressed_attention,
                    ck.bf16_rest and fmt == ck.format)


def tensor_bytes(t: Tensor, fmt: str, enc_of: Encoding = Encoding(), *, mtp: bool = False,
                 experts_as: str = "") -> float:
    """Bytes of tensor ``t`` (all its experts) in checkpoint format ``fmt`` (``enc_of``: the
    model's :class:`Encoding`; ``mtp``: ``t`` belongs to the MTP module, which changes the
    ``nvfp4`` layout, ``sizing/formats.py``). ``experts_as``: the encoding the engine holds
    routed experts in when it differs from the checkpoint's (``formats.held_encoding``).
    """
    enc = encoding(t.component, t.quantized, fmt, v4=enc_of.v4, mtp=mtp, name=t.name,
                   bf16_rest=enc_of.bf16_rest)
    scale_bytes = enc_of.scale_bytes
    if experts_as and t.component == "routed_experts" and enc != "bf16":
        enc = experts_as
    return encoded_bytes(enc, t.out_dim, t.in_dim, t.elem_bytes, scale_bytes, t.parts) * t.experts


@dataclass(frozen=True)
class Placement:
    """How one GPU of a role holds the model: the tensor-parallel degree of each component.

    Attributes:
        tp: attention tensor-parallel size; ep: expert-parallel size (1 = no EP).
        pp: pipeline stages; redundant: EPLB redundant experts.
        mtp: the MTP module is loaded (speculative decoding on).
        mla_bf16_copies: the engine keeps BF16 W_UK/W_UV (vLLM; SGLang's w_kc/w_vc).
        experts_as: the encoding the engine holds the routed experts in when it is not the
            checkpoint's (``formats.held_encoding``; "" = the checkpoint's).
        mxfp4_pad: (hidden, intermediate-per-rank) multiples the engine pads MXFP4 routed
            experts to (``formats.mxfp4_padding``; (0, 0): none).
        dense_tp, shared_tp, moe_tp, vocab_tp, embed_tp: TP degree of the dense MLP, the shared
            experts, the routed experts without EP, the lm_head (and the embedding when
            ``embed_tp`` is 0) and the input embedding; 0 = the same as ``tp``.
            vLLM: MoE TP = tensor x data without EP (``flatten_tp_across_dp``,
            fused_moe/config.py), the rest = tensor. SGLang: the whole tensor x data group,
            except the dense MLP with ``--moe-dense-tp-size 1``, the shared experts with an
            all-to-all backend (replicated, models/deepseek_v2.py ``_shared_expert_use_tp1``)
            and, under attention DP, the embedding (the attention-TP group: see
            ``sizing.placement_for``).
    """

    tp: int
    ep: int
    pp: int
    redundant: int = 0
    mtp: bool = False
    mla_bf16_copies: bool = True
    dense_tp: int = 0
    shared_tp: int = 0
    moe_tp: int = 0
    vocab_tp: int = 0
    embed_tp: int = 0
    experts_as: str = ""
    mxfp4_pad: tuple[int, int] = (0, 0)

    def tp_of(self, t: Tensor) -> int:
        """The tensor-parallel degree that divides tensor ``t`` (1 for routed experts under EP;
        at most ``t.shard_limit``: GQA's key/value heads)."""
        c = t.component
        if c == "routed_experts":
            return 1 if self.ep > 1 else (self.moe_tp or self.tp)
        if c == "dense_mlp":
            return self.dense_tp or self.tp
        if c == "shared_experts":
            return self.shared_tp or self.tp
        if c == "embedding":
            return self.embed_tp or self.vocab_tp or self.tp
        if c == "lm_head":
            return self.vocab_tp or self.tp
        return min(self.tp, t.shard_limit) if t.shard_limit else self.tp


@dataclass
class StageWeights:
    """Weight bytes of one GPU of a pipeline stage, by component (bytes, not GiB)."""

    stage: int
    layers: tuple[int, ...]
    by_component: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        """All weight bytes of the GPU."""
        return sum(self.by_component.values())


def pp_partition(layers: int, pp: int) -> list[range]:
    """Layer ranges per stage as vLLM's get_pp_indices (remainder to the stages before the last)."""
    per = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        per[-i] += 1
    out, start = [], 0
    for n in per:
        out.append(range(start, start + n))
        start += n
    return out


def _add(acc: dict[str, float], key: str, value: float) -> None:
    acc[key] = acc.get(key, 0.0) + value


def _padded_mxfp4(t: Tensor, place: Placement) -> float:
    """Bytes of one GPU's share of MXFP4 routed-expert tensor ``t`` (one expert) at the widths
    the engine pads to (``Placement.mxfp4_pad``: hidden, intermediate per rank)."""
    tp = 1 if place.ep > 1 else (place.moe_tp or place.tp)
    hidden_m, inter_m = place.mxfp4_pad
    if t.split == "out":     # gate_up: out = 2 x intermediate (split), in = hidden
        inter = _round_up(t.out_dim // t.parts // tp, inter_m)
        return encoded_bytes("mxfp4", t.parts * inter, _round_up(t.in_dim, hidden_m))
    inter = _round_up(t.in_dim // tp, inter_m)    # down: out = hidden, in = intermediate (split)
    return encoded_bytes("mxfp4", _round_up(t.out_dim, hidden_m), inter)


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m if m > 1 else n


def _layer_bytes(tensors: tuple[Tensor, ...], fmt: str, place: Placement, experts: int,
                 acc: dict[str, float], component_override: str | None = None,
                 enc_of: Encoding = Encoding()) -> None:
    mtp = component_override == "mtp"
    for t in tensors:
        comp = component_override or t.component
        b = tensor_bytes(t, fmt, enc_of, mtp=mtp, experts_as=place.experts_as)
        if any(place.mxfp4_pad) and t.component == "routed_experts" and t.quantized and \
                (place.experts_as or encoding(t.component, True, fmt, v4=enc_of.v4, mtp=mtp,
                                              bf16_rest=enc_of.bf16_rest)) == "mxfp4":
            per = _padded_mxfp4(t, place)
            local = -(-(experts + place.redundant) // place.ep) if place.ep > 1 else t.experts
            _add(acc, comp, per * local)
        elif t.component == "routed_experts" and place.ep > 1:
            slots = -(-(experts + place.redundant) // place.ep)
            _add(acc, comp, b / t.experts * slots)
        elif t.tp == "shard":
            _add(acc, comp, b / place.tp_of(t))
        else:
            _add(acc, comp, b)


def block_misfits(inv: Inventory, arch: ModelArch, fmt: str,
                  place: Placement) -> list[tuple[Tensor, int, int]]:
    """Tensor-parallel shards that cut through FP8 quantization blocks.

    Block-FP8 weights (every quantized tensor of an ``fp8`` checkpoint, the non-expert ones of
    ``w4a8``/``mxfp4`` and of DeepSeek-V4's ``nvfp4``; none of ``nvfp4`` V3/R1 or ``w4a16``
    checkpoints, whose other tensors are BF16) keep one scale per 128 x 128 block; a shard must hold whole blocks along
    the split dimension, or the engines refuse to load (vLLM 0.33
    model_executor/layers/quantization/utils/fp8_utils.py ``validate_fp8_block_shape`` and
    ``validate_fp8_block_shape_moe``; SGLang layers/quantization/fp8_utils.py).

    Per-channel FP8 (``fbgemm_fp8``, compressed-tensors FP8_DYNAMIC: ``Checkpoint.fp8_blocks``
    False; a BF16 config whose maker's FP8 release is per channel: ``fp8_release_blocks``
    False) has no blocks.

    Returns ``(tensor, TP degree, size per shard)`` for each distinct misfit, MTP included.
    """
    if fmt == "bf16" or (fmt == arch.checkpoint.format and not arch.checkpoint.fp8_blocks) \
            or (fmt == "fp8" and not arch.checkpoint.fp8_block_scales):
        return []
    enc_of = encoding_of(arch, fmt)
    seen: dict[str, tuple[Tensor, int, int]] = {}
    tensors = [(t, False) for ts in inv.kinds.values() for t in ts]
    tensors += [(t, True) for t in inv.mtp_layer]
    for t, mtp in tensors:
        if not t.quantized or t.tp != "shard" or t.name in seen:
            continue
        if encoding(t.component, t.quantized, fmt, v4=enc_of.v4, mtp=mtp, name=t.name,
                    bf16_rest=enc_of.bf16_rest) != "fp8_block":
            continue  # 4-bit formats' per-group scales, BF16 tensors: no 128 x 128 blocks
        tp = place.tp_of(t)
        if tp == 1:
            continue
        size = (t.out_dim // t.parts) if t.split == "out" else t.in_dim
        if size % tp or (size // tp) % FP8_BLOCK:
            seen[t.name] = (t, tp, size / tp)
    return list(seen.values())


def _kv_b_quantized(enc_of: Encoding, fmt: str, mtp: bool) -> bool:
    """``kv_b_proj`` is quantized in format ``fmt`` (vLLM then keeps BF16 W_UK/W_UV copies)."""
    return encoding("attention", True, fmt, v4=enc_of.v4, mtp=mtp,
                    bf16_rest=enc_of.bf16_rest) != "bf16"


def _mla_copies(arch: ModelArch, place: Placement) -> float:
    at = arch.attention
    return (at.heads / place.tp) * at.kv_lora_rank * (at.qk_nope_head_dim + at.v_head_dim) * 2


def stage_weights(inv: Inventory, arch: ModelArch, fmt: str,
                  place: Placement) -> list[StageWeights]:
    """Weight bytes per GPU for every pipeline stage of a role."""
    experts = arch.moe.experts
    enc_of = encoding_of(arch, fmt)
    stages = []
    ranges = pp_partition(len(inv.layer_kinds), place.pp)
    mla_on = place.mla_bf16_copies and arch.attention.kind == "mla"
    mla = mla_on and _kv_b_quantized(enc_of, fmt, mtp=False)
    mla_mtp = mla_on and _kv_b_quantized(enc_of, fmt, mtp=True)
    per_kind: dict[str, dict[str, float]] = {}
    for kind in dict.fromkeys(inv.layer_kinds):
        one: dict[str, float] = {}
        _layer_bytes(inv.kinds[kind], fmt, place, experts, one, enc_of=enc_of)
        if mla:
            _add(one, "attention", _mla_copies(arch, place))
        per_kind[kind] = one
    for s, rng in enumerate(ranges):
        # Layers of one kind weigh the same: count them (components keep first-seen order).
        acc: dict[str, float] = {}
        counts: dict[str, int] = {}
        for i in rng:
            kind = inv.layer_kinds[i]
            counts[kind] = counts.get(kind, 0) + 1
        for kind, n in counts.items():
            for comp, b in per_kind[kind].items():
                _add(acc, comp, n * b)
        for t in inv.outer:
            first, last = s == 0, s == len(ranges) - 1
            if (t.component == "embedding" and first) or (t.component != "embedding" and last):
                _layer_bytes((t,), fmt, place, experts, acc, enc_of=enc_of)
        if place.mtp and s == len(ranges) - 1:
            for _ in range(inv.mtp_layers):
                _layer_bytes(inv.mtp_layer, fmt, place, experts, acc, component_override="mtp",
                             enc_of=enc_of)
                if mla_mtp:
                    _add(acc, "mtp", _mla_copies(arch, place))
        stages.append(StageWeights(s, tuple(rng), acc))
    return stages


def checkpoint_bytes(inv: Inventory, arch: ModelArch, fmt: str,
                     mtp: bool) -> tuple[float, float]:
    """Bytes of the checkpoint in format ``fmt``: (everything but the routed experts, the routed
    experts), the MTP module included when ``mtp`` (the engine loads it for speculation)."""
    enc_of = encoding_of(arch, fmt)
    other = experts = 0.0
    tensors = [(t, n, False) for kind, n in inv.kind_counts().items() for t in inv.kinds[kind]]
    tensors += [(t, 1, False) for t in inv.outer]
    if mtp:
        tensors += [(t, inv.mtp_layers, True) for t in inv.mtp_layer]
    for t, n, in_mtp in tensors:
        b = n * tensor_bytes(t, fmt, enc_of, mtp=in_mtp)
        if t.component == "routed_experts":
            experts += b
        else:
            other += b
    return other, experts


#: Bits per weight of the packed data of each encoding (its scales excluded): what an
#: offloader moves when it offloads a quantized weight tensor (its scale tensors stay).
WEIGHT_BITS = {"bf16": 16, "fp8_block": 8, "int4_g128": 4, "mxfp4": 4, "nvfp4": 4,
               "int4_g32": 4}


def expert_weight_bytes(inv: Inventory, fmt: str, place: Placement, experts: int,
                        kind: str, *, v4: bool = False) -> float:
    """Bytes of one GPU's routed-expert weight data (no scales) in one layer of ``kind``."""
    total = 0.0
    for t in inv.kinds[kind]:
        if t.component != "routed_experts" or not t.quantized:
            continue
        enc = place.experts_as or encoding(t.component, t.quantized, fmt, v4=v4, name=t.name)
        per_expert = t.out_dim * t.in_dim * WEIGHT_BITS[enc] / 8
        if place.ep > 1:
            total += per_expert * -(-(experts + place.redundant) // place.ep)
        else:
            total += per_expert * t.experts / (place.moe_tp or place.tp)
    return total


def offload_stages(stages: list[StageWeights], inv: Inventory, arch: ModelArch, fmt: str,
                   place: Placement, offload) -> list[StageWeights]:
    """The stages' resident weights with ``offload`` (spec ``serving.weightOffload``) applied.

    Group offloading (vLLM vllm/model_executor/offloader/v2.py ``OffloaderV2.wrap_modules``):
    decoder layer i is offloaded when i % groupSize >= groupSize - numInGroup; DeepSeek's
    offloaded parameters are the routed experts' weight data (vLLM's R1-NVFP4 DP2-EP2 GB200
    run saved 81.74 GB over 30 layers, minosfuture/vllm runs/DS-R1/fp4/report/prefill-2000in:
    29 MoE layers x 128 experts x 44.04 M x 0.5 B = 81.7 GB, the scales stay). Its
    ``prefetchStep`` static buffers of one offloaded layer (``StaticBufferPool``,
    slot_capacity = prefetch_step) are allocated after the engine measures the load and
    before it profiles, so they sit outside its KV budget (the same run prints 112.62 GiB
    resident = 188.7 - 76.1 offloaded, and a KV cache that leaves no room for them inside
    gpu_memory_utilization): not counted here. UVA offloading (``cpuGiB``,
    vllm/config/offload.py ``cpu_offload_gb``: "the space in GiB to offload to CPU, per
    GPU"): that many GiB leave every GPU. Offloaded bytes are booked as the negative
    component ``offloaded``."""
    if offload is None:
        return stages
    experts = arch.moe.experts
    v4 = arch.compressed_attention
    out = []
    for st in stages:
        acc = dict(st.by_component)
        if offload.groupSize:
            g, n = offload.groupSize, offload.numInGroup
            moved = [expert_weight_bytes(inv, fmt, place, experts, inv.layer_kinds[i], v4=v4)
                     for i in st.layers if i % g >= g - n]
            moved = [b for b in moved if b]
            if moved:
                _add(acc, "offloaded", -sum(moved))
        if offload.cpuGiB:
            left = sum(acc.values())
            _add(acc, "offloaded", -min(offload.cpuGiB * GIB, left))
        out.append(StageWeights(st.stage, st.layers, acc))
    return out
