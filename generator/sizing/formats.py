"""Checkpoint formats (``spec.model.weights``): which tensor each format stores in which
encoding, and how each engine holds that encoding on each GPU family.

Encodings (bytes of an ``out x in`` matrix of ``n`` parameters):

==============  =================================================  ===========================
encoding        bytes                                              layout
==============  =================================================  ===========================
``bf16``        2n (``Tensor.elem_bytes`` n for FP32/int32 ones)   unquantized
``fp8_block``   n + s x ceil(out/128) x ceil(in/128)               DeepSeek block FP8: E4M3 +
                (s = 4: FP32 ``weight_scale_inv``; 1: UE8M0         one scale per 128 x 128
                ``scale_fmt: ue8m0`` of V3.1/V3.2/V4)
``int4_g128``   n/2 + 2n/128                                       w4a8: INT4 + BF16 scale per
                                                                    128 (TensorRT-LLM/ModelOpt)
``mxfp4``       n/2 + n/32                                         OCP MX: E2M1 + E8M0 per 32
``nvfp4``       n/2 + n/16 + 8                                     E2M1 + FP8 E4M3 scale per 16
                                                                    + FP32 ``weight_scale_2``
                                                                    and ``input_scale``
``int4_g32``    n/2 + 2n/32                                        compressed-tensors
                                                                    pack-quantized, symmetric,
                                                                    BF16 scale per 32
==============  =================================================  ===========================

Which tensors are quantized, per format (``Tensor.quantized`` marks the linear layers a
checkpoint may quantize; the rest, router, norms, embedding, lm_head, stay as they are):

* ``bf16``: none. ``fp8``: every quantized tensor ``fp8_block``.
* ``w4a8`` / ``mxfp4``: routed experts ``int4_g128`` / ``mxfp4``, every other quantized tensor
  ``fp8_block`` (DeepSeek-V4 checkpoints: ``expert_dtype: fp4``).
* ``nvfp4``, DeepSeek-V2/V3/R1/V3.1/V3.2 (ModelOpt's DeepSeek recipe that made nvidia/DeepSeek-R1-FP4,
  https://github.com/NVIDIA/TensorRT-Model-Optimizer/tree/main/examples/deepseek): ``ptq.py``
  quantizes every linear layer with ``NVFP4_DEFAULT_CFG`` except ``*head*`` (lm_head) and
  ``*attn*`` (all of MLA, V3.2's indexer included, which lives in the attention module), and
  appends the MTP layer ``layers.{n}*`` to ``exclude_modules`` ("the mtp is not loaded in the
  quantized model"); ``quantize_to_nvfp4.py`` dequantizes every FP8 weight of the source
  checkpoint to BF16 and re-quantizes only the calibrated ones. So the routed experts, the
  shared experts and the dense MLP of the first layers are ``nvfp4`` (per linear: U8
  ``weight``, F8_E4M3 ``weight_scale`` [out, in/16], F32 ``weight_scale_2`` and
  ``input_scale``), while attention, the indexer and the whole MTP layer are ``bf16``. The
  router ``gate`` is not a Linear in DeepSeek's reference model and stays BF16.
* ``nvfp4-v2``, DeepSeek-V3/R1/V3.1/V3.2: NVIDIA's ``-v2`` checkpoints (nvidia/DeepSeek-R1-0528-
  NVFP4-v2, nvidia/DeepSeek-R1-NVFP4-v2: "additionally quantizes the wo module in attention
  layers", their model cards): the ``nvfp4`` layout with each layer's attention output
  projection ``o_proj`` also ``nvfp4`` (61 x 7168 x 16384 x (2 - 0.5625) B = 10.3 GB less over
  the model than v1); the MTP layer stays BF16. On DeepSeek-V4 it is the hybrid ``nvfp4``.
* ``nvfp4``, DeepSeek-V4 (nvidia/DeepSeek-V4-Pro-NVFP4, a hybrid: SGLang 0.5.23
  layers/quantization/modelopt_quant.py ``HybridFp8NvFp4Config``: "FP8 (linear/attention/MTP
  MoE) + NVFP4 (FusedMoE)"): routed experts ``nvfp4``, the MTP layer's experts ``mxfp4`` (its
  fallback to the FP4-expert method for excluded MoE layers), every other quantized tensor
  ``fp8_block``.
* ``w4a16`` (moonshotai/Kimi-K2-Thinking ``config.json`` ``quantization_config``:
  compressed-tensors ``pack-quantized``, ``num_bits: 4``, ``group_size: 32``, ``symmetric``,
  ``strategy: group``, ``targets: [Linear]``, ``ignore: [lm_head, re:.*self_attn.*,
  re:.*shared_experts.*, re:.*mlp\\.(gate|up|gate_up|down)_proj.*]``): the last pattern matches
  the dense layers' MLP (``mlp.gate_proj``) but not the experts (``mlp.experts.N.gate_proj``),
  so only the routed experts are ``int4_g32`` (I32 ``weight_packed`` [out, in/8], BF16
  ``weight_scale`` [out, in/32]); attention, shared experts and the dense MLP are ``bf16``.
  The per-expert ``weight_shape`` (two integers) is not counted.

How the engines hold them (:data:`ENGINE_STORAGE`): on every path the engines of moegen's
releases take by default, the resident bytes equal the checkpoint's. The kernels repack the
4-bit weights in place (same size) and keep 1-byte (FP8/E8M0) or BF16 group scales; the only
larger resident form is SGLang's opt-in ``SGLANG_DSV4_FP4_DEQUANT=1``, which re-encodes
DeepSeek-V4's MXFP4 experts to block FP8 (QNT004 warns; the HBM check sizes the default).
:func:`held_encoding` is what sizing calls; :func:`storage` is what the rules read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import Gpu

#: The formats of ``spec.model.weights`` (docs/spec.md §2).
FORMATS = ("bf16", "fp8", "w4a8", "mxfp4", "nvfp4", "nvfp4-v2", "w4a16")
#: The NVFP4 formats: the same kernels, engine paths and rules; they differ in which attention
#: tensors are quantized (``o_proj`` in the ``-v2`` layout).
NVFP4_FORMATS = ("nvfp4", "nvfp4-v2")
#: FP8 block size (DeepSeek ``quantization_config.weight_block_size``).
FP8_BLOCK = 128
#: Group sizes of the 4-bit encodings.
GROUP = {"int4_g128": 128, "mxfp4": 32, "nvfp4": 16, "int4_g32": 32}
#: Bytes of one group scale: BF16 (w4a8, w4a16), E8M0 (MXFP4), FP8 E4M3 (NVFP4).
GROUP_SCALE_BYTES = {"int4_g128": 2, "mxfp4": 1, "nvfp4": 1, "int4_g32": 2}
#: Per-matrix FP32 scalars of an NVFP4 linear: ``weight_scale_2`` and ``input_scale``
#: (vLLM 0.33 quantization/modelopt.py ``ModelOptNvFp4FusedMoE.create_weights``).
NVFP4_TENSOR_SCALES = 2 * 4
#: Routed-expert encoding of the 4-bit formats.
EXPERT_ENCODING = {"w4a8": "int4_g128", "mxfp4": "mxfp4", "nvfp4": "nvfp4", "nvfp4-v2": "nvfp4",
                   "w4a16": "int4_g32"}
#: Components the ModelOpt DeepSeek recipe quantizes to NVFP4 (MLP linears); the rest of the
#: quantized tensors (attention, indexer) it keeps in BF16.
NVFP4_MLP = ("routed_experts", "shared_experts", "dense_mlp")
#: The attention tensor the ``nvfp4-v2`` layout also quantizes (``params.Tensor.name``).
NVFP4_V2_ATTENTION = ("attn.o_proj",)


def base_format(fmt: str) -> str:
    """The format whose kernels and engine paths ``fmt`` uses (``nvfp4`` for ``nvfp4-v2``)."""
    return "nvfp4" if fmt in NVFP4_FORMATS else fmt


def encoding(component: str, quantized: bool, fmt: str, *, v4: bool = False,
             mtp: bool = False, name: str = "", bf16_rest: bool = False) -> str:
    """The encoding a tensor of ``component`` (``name``: its ``params.Tensor.name``) has in a
    checkpoint of format ``fmt``.

    ``quantized``: the tensor is a linear layer checkpoints quantize (``Tensor.quantized``);
    ``v4``: the model has DeepSeek-V4's compressed attention (its FP8 + NVFP4 hybrid);
    ``mtp``: the tensor belongs to the MTP module; ``bf16_rest``: ``fmt`` is the checkpoint's
    own 4-bit format, which leaves every tensor but the routed experts BF16 (gpt-oss's MXFP4,
    ``modules_to_not_convert``: attention, router, embedding, head).
    """
    if not quantized or fmt == "bf16" or (bf16_rest and component != "routed_experts"):
        return "bf16"
    if fmt == "fp8":
        return "fp8_block"
    if fmt in NVFP4_FORMATS and not v4:
        if mtp:
            return "bf16"
        v2 = fmt == "nvfp4-v2" and name in NVFP4_V2_ATTENTION
        return "nvfp4" if component in NVFP4_MLP or v2 else "bf16"
    fmt = base_format(fmt)
    if fmt == "nvfp4" and mtp and component == "routed_experts":
        return "mxfp4"   # V4-NVFP4: the MTP layer's experts keep the source MXFP4
    if component == "routed_experts":
        return EXPERT_ENCODING[fmt]
    return "bf16" if fmt == "w4a16" else "fp8_block"


def encoded_bytes(enc: str, out_dim: int, in_dim: int, elem_bytes: int = 2,
                  scale_bytes: int = 4, parts: int = 1) -> float:
    """Bytes of one ``out_dim x in_dim`` matrix in encoding ``enc`` (see the module table);
    ``parts``: checkpoint matrices merged along ``out`` (gate + up: 2), each with its own
    NVFP4 per-tensor scalars."""
    n = out_dim * in_dim
    if enc == "bf16":
        return float(elem_bytes * n)
    if enc == "fp8_block":
        return n + scale_bytes * -(-out_dim // FP8_BLOCK) * -(-in_dim // FP8_BLOCK)
    per = n * 0.5 + n / GROUP[enc] * GROUP_SCALE_BYTES[enc]
    return per + (NVFP4_TENSOR_SCALES * parts if enc == "nvfp4" else 0)


@dataclass(frozen=True)
class Storage:
    """How one engine holds one encoding on one GPU family.

    Attributes:
        engine: ``vllm`` | ``sglang``; fmt: the checkpoint format; platform: ``blackwell``
            (NVIDIA with FP4 tensor cores), ``nvidia`` (Ampere/Ada/Hopper) or ``amd``.
        kernel: the MoE path the engine selects by default (``""``: none, it refuses).
        sm90_kernel: the path on Hopper (SM90) when it differs from ``kernel`` (vLLM 0.33
            ranks its Humming kernels ahead of Marlin on SM90 only:
            vllm/model_executor/layers/quantization/utils/humming/priority.py
            ``_HUMMING_PREFERRED_CAPABILITIES = {90}``); :func:`kernel_on` picks.
        held: the encoding of the resident routed experts (the checkpoint's unless noted).
        compute: ``native`` | ``weight-only`` (4-bit weights, BF16 math: Marlin W4A16) |
            ``emulated`` (dequantized to BF16 per GEMM in Triton/PyTorch).
        source: engine file of the release, or upstream issue.
    """

    engine: str
    fmt: str
    platform: str
    kernel: str
    held: str
    compute: str
    source: str
    sm90_kernel: str = ""


#: Per engine, format and GPU family: the routed experts' kernel and resident encoding (vLLM
#: 0.33.0, SGLang 0.5.23). ``held`` equal to the checkpoint's encoding = resident bytes equal
#: the checkpoint's (the repack is in place and the scales keep their width).
ENGINE_STORAGE: tuple[Storage, ...] = (
    Storage("vllm", "nvfp4", "blackwell", "FlashInfer TRT-LLM/CuTe-DSL/CUTLASS NVFP4", "nvfp4",
            "native", "vllm/model_executor/layers/fused_moe/oracle/nvfp4.py "
            "select_nvfp4_moe_backend (order: FLASHINFER_TRTLLM, FLASHINFER_CUTEDSL, ..., "
            "MARLIN, EMULATION)"),
    Storage("vllm", "nvfp4", "nvidia", "Marlin FP4 (W4A16)", "nvfp4", "weight-only",
            "vllm/model_executor/layers/quantization/modelopt.py ModelOptNvFp4Config."
            "get_min_capability 75; utils/marlin_utils_fp4.py prepare_nvfp4_moe_layer_for_marlin "
            "(\"Weight-only FP4 compression will be used leveraging the Marlin kernel\"; "
            "weights repacked 4-bit, E4M3 scales re-encoded to 1-byte S0E5M3 by "
            "nvfp4_marlin_process_scales; N padded to 64, none for DeepSeek/Kimi shapes). On "
            "SM90 fused_moe/oracle/nvfp4.py select_nvfp4_moe_backend calls prioritize_humming "
            "(Humming ahead of Marlin; fused_moe/experts/fused_humming_moe.py supports "
            "(kNvfp4Static, kNvfp4Dynamic), BF16 math; humming-kernels is a hard requirement of "
            "vLLM 0.33): A100/L20/L40S run Marlin, H20/H100/H200/H800 Humming",
            sm90_kernel="Humming NVFP4 (W4A16)"),
    Storage("vllm", "nvfp4", "amd", "NVFP4 emulation (Triton)", "nvfp4", "emulated",
            "vllm/platforms/rocm.py supported_quantization lists modelopt_fp4; "
            "fused_moe/experts/nvfp4_emulation_moe.py Nvfp4QuantizationEmulationTritonExperts "
            "(\"will dequantize weights on the fly\"); model_executor/kernels/linear/nvfp4/"
            "emulation.py (dequant -> BF16 matmul)"),
    Storage("sglang", "nvfp4", "blackwell", "FlashInfer TRT-LLM/CUTLASS NVFP4", "nvfp4",
            "native", "python/sglang/srt/layers/quantization/modelopt_quant.py "
            "ModelOptNvFp4FusedMoEMethod"),
    Storage("sglang", "nvfp4", "nvidia", "Marlin FP4 (W4A16)", "nvfp4", "weight-only",
            "python/sglang/srt/layers/quantization/modelopt_quant.py "
            "ModelOptNvFp4FusedMoEMethod.__init__ (use_marlin_fallback for (8, 0) <= capability "
            "< (10, 0)); fp4_utils.py initialize_fp4_gemm_config (auto -> marlin on SM80-SM9x); "
            "marlin_utils_fp4.py prepare_moe_nvfp4_layer_for_marlin (4-bit repack, FP8 scales)"),
    Storage("sglang", "nvfp4", "amd", "", "nvfp4", "",
            "python/sglang/srt/layers/quantization/modelopt_quant.py "
            "ModelOptNvFp4FusedMoEMethod.__init__: off CUDA the Marlin fallback needs "
            "--moe-runner-backend marlin (a CUDA kernel) and otherwise raises \"Current platform "
            "does not support NVFP4 quantization with the selected MoE backend. Please use "
            "Blackwell and above, or use moe_runner_backend=marlin on SM80+\""),
    Storage("vllm", "mxfp4", "nvidia", "Marlin MXFP4 (W4A16)", "mxfp4", "weight-only",
            "vllm/model_executor/layers/fused_moe/experts/marlin_moe.py (kMxfp4Static); "
            "vllm#53709 (\"On Hopper (SM90) vLLM runs these through the Marlin W4A16 MoE "
            "kernel\"; its FP8 re-encode is opt-in and not in 0.33)"),
    Storage("sglang", "mxfp4", "nvidia", "FlashInfer SM90 CUTLASS mixed GEMM (W4A16)", "mxfp4",
            "weight-only", "python/sglang/srt/arg_groups/model_overrides/deepseek_v4.py "
            "(moe_runner_backend flashinfer_mxfp4 on SM90 without an all-to-all backend); "
            "layers/quantization/mxfp4_flashinfer_cutlass_moe.py (interleaved full-size copies, "
            "the old layout released per layer). SGLANG_DSV4_FP4_DEQUANT=1 instead re-encodes "
            "the experts to block FP8 with FP32 scales (layers/quantization/fp8.py "
            "process_weights_after_loading_block_quant, cast_e2m1fn_to_e4m3fn): QNT004"),
    Storage("vllm", "w4a16", "nvidia", "Marlin INT4 (W4A16)", "int4_g32", "weight-only",
            "vllm/model_executor/layers/fused_moe/oracle/int_wna16.py _get_priority_backends "
            "(FLASHINFER_TRTLLM, MARLIN, BATCHED_MARLIN, TRITON, HUMMING, ..., reordered by "
            "prioritize_humming: Humming ahead of Marlin on SM90, "
            "fused_moe/experts/fused_humming_moe.py _is_supported_wna16_weight_key); "
            "quantization/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_wna16.py",
            sm90_kernel="Humming INT4 (W4A16)"),
    Storage("vllm", "w4a16", "blackwell", "FlashInfer TRT-LLM MxInt4 (W4A16)", "int4_g32",
            "weight-only", "vllm/model_executor/layers/fused_moe/experts/trtllm_mxint4_moe.py "
            "(kInt4Static32 weights, SM100 family; refuses expert-parallel all-to-all kernels "
            "but allgather/reducescatter, where Marlin / BatchedMarlin run instead); "
            "fused_moe/oracle/int_wna16.py (BF16 group scales: same bytes)"),
    Storage("vllm", "w4a16", "amd", "Triton WNA16", "int4_g32", "weight-only",
            "vllm/model_executor/layers/fused_moe/experts/triton_moe.py TritonWNA16Experts "
            "(_supports_current_device: is_cuda_alike, ROCm included)"),
    Storage("sglang", "w4a16", "nvidia", "Marlin INT4 (W4A16)", "int4_g32", "weight-only",
            "python/sglang/srt/layers/quantization/compressed_tensors/schemes/"
            "compressed_tensors_wNa16_moe.py CompressedTensorsWNA16MoE (get_min_capability 80)"),
    Storage("sglang", "w4a16", "blackwell", "Triton WNA16 (W4A16)", "int4_g32", "weight-only",
            "python/sglang/srt/layers/quantization/compressed_tensors/compressed_tensors.py "
            "(\"Using CompressedTensorsWNA16TritonMoE (SM100/SM103 auto default)\" for "
            "symmetric INT4 group 32/128); schemes/compressed_tensors_wNa16_moe.py "
            "CompressedTensorsWNA16TritonMoE (int32 packing viewed as uint8, same bytes)"),
    Storage("sglang", "w4a16", "amd", "Triton WNA16", "int4_g32", "weight-only",
            "python/sglang/srt/layers/quantization/compressed_tensors/compressed_tensors.py "
            "(\"Using CompressedTensorsWNA16TritonMoE (ROCm)\"; int32 packing viewed as uint8, "
            "same bytes)"),
)


def platform_of(gpu: Gpu) -> str:
    """``blackwell`` (NVIDIA with FP4 tensor cores), ``nvidia`` (Ampere/Ada/Hopper) or ``amd``."""
    if gpu.vendor == "amd":
        return "amd"
    return "blackwell" if gpu.fp4 else "nvidia"


def storage(engine: str, fmt: str, gpu: Gpu) -> Storage | None:
    """The :data:`ENGINE_STORAGE` row of ``engine``/``fmt`` on ``gpu`` (None: not tabled, the
    checkpoint's bytes and the engine's usual kernels)."""
    plat = platform_of(gpu)
    fmt = base_format(fmt)
    for s in ENGINE_STORAGE:
        if s.engine == engine and s.fmt == fmt and s.platform == plat:
            return s
    return None


def kernel_on(row: Storage, gpu: Gpu) -> str:
    """The MoE kernel ``row``'s engine runs on ``gpu`` (the SM90 one on Hopper)."""
    return row.sm90_kernel if row.sm90_kernel and gpu.generation == "hopper" else row.kernel


#: The widths each engine pads MXFP4 routed experts to, per platform: (hidden, intermediate per
#: tensor-parallel rank) multiples. vLLM 0.33.0 vllm/model_executor/layers/fused_moe/oracle/
#: mxfp4.py ``mxfp4_round_up_hidden_size_and_intermediate_size`` by the backend its priority list
#: picks for gpt-oss (``_get_priority_backends_for_gpt_oss``): Blackwell FlashInfer TRT-LLM
#: (hidden 256, intermediate 128); Hopper the OAI Triton kernels (intermediate 64; the hidden
#: width at 256 is what vLLM 0.14.1 printed for gpt-oss-120b at TP1 on H100 with its Triton
#: backend: "Model loading took 64.38 GiB" = 3,072-wide experts + the BF16 rest, 60.8 GiB at the
#: checkpoint's 2,880: vllm-project/vllm#33155; triton_kernels' Hopper value layout); Ampere/Ada
#: Marlin (hidden 256, intermediate 128); ROCm 256 both ways. SGLang 0.5.23
#: python/sglang/srt/layers/moe/fused_moe_triton/layer.py rounds the hidden width to 256 for
#: FlashInfer MXFP4 (Blackwell) and layers/quantization/mxfp4.py the intermediate to 128
#: (FlashInfer), 64 (triton_kernels, Hopper: the hidden width as vLLM's, the same layout) or 256
#: (AITER). DeepSeek-V4's widths (7,168 / 4,096 hidden, 3,072 / 2,048 intermediate) are
#: multiples of all of them.
MXFP4_PADDING: dict[tuple[str, str], tuple[int, int]] = {
    ("vllm", "blackwell"): (256, 128), ("vllm", "hopper"): (256, 64),
    ("vllm", "nvidia"): (256, 128), ("vllm", "amd"): (256, 256),
    ("sglang", "blackwell"): (256, 128), ("sglang", "hopper"): (256, 64),
    ("sglang", "nvidia"): (256, 128), ("sglang", "amd"): (256, 256),
}


def mxfp4_padding(engine: str, gpu: Gpu) -> tuple[int, int]:
    """The (hidden, intermediate-per-rank) multiples ``engine`` pads MXFP4 routed experts to on
    ``gpu`` (:data:`MXFP4_PADDING`)."""
    plat = platform_of(gpu)
    if plat == "nvidia" and gpu.generation == "hopper":
        plat = "hopper"
    return MXFP4_PADDING.get((engine, plat), (0, 0))


def held_encoding(engine: str, fmt: str, gpu: Gpu) -> str | None:
    """The encoding ``engine`` holds the routed experts of a ``fmt`` checkpoint in on ``gpu``
    when it differs from the checkpoint's, else None (every default path of the tabled
    releases: the sizing then prices the checkpoint's bytes)."""
    s = storage(engine, fmt, gpu)
    if s is None or not s.kernel or s.held == EXPERT_ENCODING.get(fmt):
        return None
    return s.held
