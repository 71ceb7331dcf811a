"""Which MoE kernel an engine runs for a role, and what it computes in (issue 32).

The compute dtype of the routed experts' GEMMs belongs to the kernel the engine picks, not to
the checkpoint: an ``mxfp4`` checkpoint runs a BF16-computing kernel on a GPU without FP4 math
when the engine takes Marlin (W4A16), and an FP8-computing one when it takes DeepGEMM's FP8 x
FP4 path on Blackwell. :func:`moe_kernel` names the kernel and its compute dtype from the engine,
the GPU, the checkpoint format, the role's all-to-all backend and its ``--moe-runner-backend``;
:func:`dense_bf16` says whether the other GEMMs (attention projections, shared experts, dense
layers) run at the BF16 peak. The performance model (perf/terms.py) times each group of GEMMs at
its own peak.

Sources (SGLang 0.5.23 python/sglang/srt/layers/quantization/fp8.py ``Fp8Config.get_quant_method``
for DeepSeek-V4's FP4 experts: "SM100 uses TRT-LLM; SM90 uses W4A16 and SM120 uses MXFP8xMXFP4";
mxfp4_marlin_moe.py, mxfp4_humming_moe.py with layers/quantization/humming_utils.py
``configure_humming_deepep_dispatch``; mxfp4_flashinfer_trtllm_moe.py, whose default precision
quantizes the routed input to MXFP8; arg_groups/fields/exec_.py ``flashinfer_mxfp4_moe_precision``;
vLLM 0.33.0 vllm/model_executor/layers/fused_moe/oracle/mxfp4.py ``_get_priority_backends``:
"SM100+ prefers DeepGEMM FP4 / TRTLLM MXFP8; SM90 falls through to Humming or Marlin").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engines.options import option_flags, option_value

#: Checkpoint formats whose non-expert GEMMs run in BF16 (unquantized attention and dense
#: layers: ``bf16``; ``w4a16``'s attention, shared experts and dense MLP, generator/sizing/
#: formats.py). Every other format stores them as block FP8 (``fp8_block``), timed at the FP8 peak.
DENSE_BF16 = frozenset({"bf16", "w4a16"})
#: 4-bit expert formats (the checkpoint's routed experts).
FOUR_BIT = frozenset({"w4a8", "mxfp4", "nvfp4", "nvfp4-v2", "w4a16"})
#: SGLang ``--moe-runner-backend`` values that run 4-bit experts with BF16 activations
#: (weight-only W4A16: the 4-bit weights are dequantized to BF16 in the GEMM's main loop).
SGLANG_W4A16_RUNNERS = frozenset({"marlin"})


@dataclass(frozen=True)
class MoeKernel:
    """The routed experts' GEMM kernel of a role.

    Attributes:
        name: what the engine runs (``Marlin W4A16``, ``DeepGEMM FP8``, ...).
        bf16: its GEMMs run at the BF16 peak (BF16 activations), else at the FP8 peak.
        dequant: 4-bit weights dequantized into an FP8 main loop on a GPU without FP4 math
            (W4A8): prefill's compute-bound expert GEMMs run at terms.DEQUANT_4BIT_PREFILL of
            the FP8 rate.
        w4a16: a weight-only 4-bit kernel (BF16 activations): at prefill batch sizes its
            grouped GEMM runs at terms.W4A16_PREFILL of the BF16 rate.
    """

    name: str
    bf16: bool
    dequant: bool = False
    w4a16: bool = False

    def describe(self) -> str:
        """``"Marlin W4A16 (BF16 compute)"``."""
        return f"{self.name} ({'BF16' if self.bf16 else 'FP8'} compute)"


def runner_backend(engine_args: list[str] | tuple) -> str | None:
    """The ``--moe-runner-backend`` of a role's engineArgs (SGLang; vLLM ``--moe-backend``),
    None when not given (the engine's auto choice)."""
    args = list(engine_args)
    for j, a in option_flags(args):
        if a.partition("=")[0] in ("--moe-runner-backend", "--moe-backend"):
            return option_value(args, j)
    return None


def dense_bf16(weights: str) -> bool:
    """The non-expert GEMMs of checkpoint format ``weights`` run at the BF16 peak."""
    return weights in DENSE_BF16


def moe_kernel(engine: str, gpu, weights: str, all2all: str | None = None,
               engine_args: list[str] | tuple = ()) -> MoeKernel:
    """The routed experts' kernel of a role serving checkpoint format ``weights`` on ``gpu``
    (catalog ``Gpu``: ``fp4``, ``vendor``) with ``engine``, its ``moe.all2all`` backend and its
    engineArgs (``--moe-runner-backend``; SGLang's ``--flashinfer-mxfp4-moe-precision``).

    * ``bf16``: a BF16 GEMM; ``w4a16``: Marlin W4A16 (BF16 compute).
    * ``fp8``: DeepGEMM / Triton block-FP8 (FP8 compute).
    * ``w4a8``: a W4A8 kernel (FP8 activations, INT4 weights dequantized into the FP8 loop).
    * ``mxfp4`` / ``nvfp4`` on a GPU without FP4 math (Hopper, H20, Ampere, MI300):
      ``--moe-runner-backend marlin``: Marlin W4A16; ``flashinfer_mxfp4``: FlashInfer's SM90
      mixed GEMM, W4A16 (W4A8 with ``--flashinfer-mxfp4-moe-precision fp8``); ``humming``: FP8
      activations when DeepEP dispatches FP8 (``moe.all2all`` DeepEP), else BF16; vLLM picks
      Marlin (or Humming) there: W4A16. SGLang's auto choice keeps the block-FP8 path with the
      FP4 weights dequantized (W4A8-like), as the H20 figures it is fitted to ran.
    * ``mxfp4`` / ``nvfp4`` on Blackwell / CDNA4: FP8 activations x FP4 weights (TRT-LLM MXFP8 x
      MXFP4, DeepGEMM FP8 x FP4, SGLang ``megamoe``: DeepGEMM Mega MoE W4A8), timed at the FP8
      peak (Blackwell's prefill efficiency is fitted to NVFP4 figures and carries their FP4
      speed-up); ``marlin`` forced there: W4A16.
    """
    runner = runner_backend(engine_args)
    if weights == "bf16":
        return MoeKernel("BF16 grouped GEMM", True)
    if weights == "w4a16":
        return MoeKernel("Marlin W4A16", True, w4a16=True)
    if weights == "fp8":
        return MoeKernel("block-FP8 grouped GEMM (DeepGEMM/Triton)", False)
    if weights == "w4a8":
        return MoeKernel("W4A8 grouped GEMM", False, dequant=not gpu.fp4)
    # 4-bit floating-point experts (mxfp4, nvfp4)
    if runner in SGLANG_W4A16_RUNNERS:
        return MoeKernel("Marlin W4A16", True, w4a16=True)
    if gpu.fp4:
        if all2all == "megamoe":
            return MoeKernel("DeepGEMM Mega MoE W4A8", False)
        return MoeKernel("FP8 x FP4 grouped GEMM (TRT-LLM MXFP8 / DeepGEMM)", False)
    if engine == "vllm":
        return MoeKernel("Marlin W4A16", True, w4a16=True)
    if runner == "flashinfer_mxfp4":
        if _option(engine_args, "--flashinfer-mxfp4-moe-precision") == "fp8":
            return MoeKernel("FlashInfer SM90 W4A8", False)
        return MoeKernel("FlashInfer SM90 W4A16", True, w4a16=True)
    if runner == "humming":
        if all2all and all2all.startswith("deepep"):
            return MoeKernel("Humming W4A8 (FP8 DeepEP dispatch)", False)
        return MoeKernel("Humming W4A16", True, w4a16=True)
    return MoeKernel("block-FP8 path, FP4 weights dequantized", False, dequant=True)


def _option(engine_args, flag: str) -> str | None:
    args = list(engine_args)
    for j, a in option_flags(args):
        if a.partition("=")[0] == flag:
            return option_value(args, j)
    return None
