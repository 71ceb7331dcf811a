"""Rules about what the pool's GPU can run at all: the vendor's all-to-all library, DeepEP's
NVLink and SM90 needs, FP8 tensor cores, sparse-attention kernels.

Each rule reads the GPU of the role's pool from the catalog (``generator/catalog/__init__.py``:
``vendor``, ``generation``, ``scaleup_gpus``, ``fp8``).

No MXFP4 rule: moegen's ``mxfp4`` format is the DeepSeek-V4 checkpoints' FP4 experts, and the GPUs
without an FP4 path for them are the ones without V4's sparse attention (Ampere, Ada: GPU006).
Hopper runs them without FP4 cores (the V4-Pro run on H200 that
generator/sizing/vllm_budget.py calibrates to), Blackwell and CDNA4 natively, and vLLM serves V4 on CDNA3 through its
ROCm sparse-MLA backend (vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py).

``nvfp4`` and ``w4a16`` (QNT002-QNT006): the engines' kernel per GPU family is the table
``generator/sizing/formats.py`` ``ENGINE_STORAGE`` (vLLM 0.33.0, SGLang 0.5.23, with their
files). ``w4a16`` runs on every catalog GPU with both engines (Humming on vLLM/SM90, Marlin on
other NVIDIA SM80+ and in SGLang, FlashInfer TRT-LLM MxInt4 on vLLM/Blackwell, Triton WNA16 on
SGLang/Blackwell and on ROCm), so the GPU alone refuses nothing; the all-to-all can (QNT005).

The all-to-all with 4-bit expert formats. SGLang 0.5.23 runs every expert-parallel all-to-all
but its own all-gather (``none``) and FlashInfer's through ``DeepEPMoE``
(python/sglang/srt/layers/moe/ep_moe/layer.py ``get_moe_impl_class``), whose runner needs a fused
function registered for the a2a backend: Marlin (NVFP4 on SM80-SM9x, every W4A16 on CUDA) and
FlashInfer TRT-LLM (NVFP4 on Blackwell) register ``none``/``flashinfer`` only
(layers/moe/moe_runner/marlin.py, flashinfer_trtllm.py), and ``MoeRunner`` raises
NotImplementedError at load (moe_runner/runner.py); Triton WNA16 (W4A16 on SM100 and ROCm) has no
DeepEP-format permute and ``DeepEPMoE.run_moe_core`` asserts for any quantization but FP8/W4AFP8.
The one NVFP4 path through DeepEP is ``--moe-runner-backend flashinfer_cutedsl`` with the
low-latency mode (arg_groups/moe_hook.py; moe_runner/flashinfer_cutedsl.py
``@register_fused_func("deepep", "flashinfer_cutedsl")``). vLLM 0.33 has no such gap: its
modular kernels pick a batched expert kernel for DeepEP low-latency and a standard one for
high-throughput/V2 (vllm/model_executor/layers/fused_moe/oracle/nvfp4.py and int_wna16.py:
Humming's ``BatchedHummingGroupedExperts`` on SM90, ``BatchedMarlinExperts``,
``FlashInferCuteDSLBatchedExperts`` on Blackwell; ``MarlinExperts`` and the Humming kernels
accept every parallel config), so QNT005 is SGLang's only.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..catalog import GPUS, Gpu, nvl72
from ..engines.options import option_value
from ..facts import deepep
from ..facts.versions import parse_version
from ..roles import RoleInput
from ..sizing.formats import NVFP4_FORMATS, base_format, kernel_on, storage
from .registry import Context, E, Hit, W, is_vllm, role_path, rule

#: DeepEP's all-to-all backends (engine-neutral names).
DEEPEP = ("deepep_high_throughput", "deepep_low_latency", "deepep_v2")
#: MoRI-EP's backends (ROCm only).
MORI = ("mori", "mori_high_throughput", "mori_low_latency")
#: Generations without SM90 features (DeepEP builds them with DISABLE_SM90_FEATURES; no
#: DeepGEMM, FlashMLA or sparse MLA kernels).
PRE_SM90 = ("ampere", "ada")
#: vLLM's MoE kernel choice (in every release's parser from 0.17.0,
#: generator/engines/data/engine-options.json).
MOE_BACKEND_FLAG = "--moe-backend"
#: SGLang's MoE kernel choice (``--moe-runner-backend``, generator/engines/data/engine-options.json).
SGLANG_RUNNER_FLAG = "--moe-runner-backend"
#: SGLang all-to-all backends (engine-neutral names) whose MoE layer is ``DeepEPMoE`` with a
#: DeepEP-format dispatch (DeepEP, MoRI-EP, NIXL-EP, pplx: ep_moe/layer.py get_moe_impl_class;
#: token_dispatcher/moriep.py, nixl.py, pplx.py return DeepEP normal/low-latency outputs).
SGLANG_EP_LAYER = DEEPEP + MORI + ("nixl_ep", "pplx")


def _gpu(ctx: Context, i: int) -> Gpu:
    return GPUS[ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool].gpu]


def _a2a_roles(ctx: Context, names: tuple[str, ...], ep: int = 1
               ) -> Iterator[tuple[int, RoleInput, str, Gpu]]:
    """(index, role, all2all, GPU) of the roles whose all-to-all is one of ``names`` and whose
    expert-parallel size is at least ``ep``."""
    for i, r in ctx.role_items():
        a2a = r.moe.all2all if r.moe else None
        if a2a in names and r.layout.ep_size >= ep:
            yield i, r, a2a, _gpu(ctx, i)


def _engine_arg(ctx: Context, i: int, name: str) -> str | None:
    """The value role ``i`` gives option ``name`` in engineArgs (None when it does not)."""
    args = list(ctx.spec.spec.roles[i].engineArgs)
    for j, a in enumerate(args):
        if a == name or a.startswith(name + "="):
            return option_value(args, j)
    return None


@rule("GPU001", E, "the all-to-all backend exists for the GPU's vendor",
      "DeepEP is a CUDA/NVSHMEM library for NVIDIA GPUs (https://github.com/deepseek-ai/DeepEP "
      "README requirements); on ROCm both engines run MoRI-EP instead: vLLM --all2all-backend "
      "mori (vllm-project/vllm#28664, MI300X), SGLang --moe-a2a-backend mori "
      "(sgl-project/sglang#17012); MoRI is AMD-only (https://github.com/ROCm/mori)")
def _a2a_vendor(ctx: Context):
    for i, r, a2a, gpu in _a2a_roles(ctx, DEEPEP + MORI):
        if gpu.vendor == "amd" and a2a in DEEPEP:
            alt = [c for c in MORI if ctx.dialect is None or c in ctx.dialect.all2all_choices]
            yield Hit(role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: {a2a} runs DeepEP, which is not built for {gpu.id} "
                      f"(AMD {gpu.generation}): the engine's ROCm image has no deep_ep module",
                      "use MoRI-EP (" + (", ".join(alt) if alt else
                                         "vLLM >= 0.15.0 or SGLang 0.5.23 have it")
                      + ") or allgather_reducescatter")
        elif gpu.vendor == "nvidia" and a2a in MORI:
            yield Hit(role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: {a2a} runs MoRI-EP, AMD's ROCm all-to-all; {gpu.id} is "
                      "an NVIDIA GPU",
                      "use deepep_low_latency / deepep_high_throughput, or "
                      "allgather_reducescatter")


@rule("GPU002", E, "DeepEP's normal kernels need NVLink between the GPUs of a node",
      "deepseek-ai/DeepEP#216 (maintainer: \"For normal mode, NVLink is a must\"; low-latency "
      "mode is not bound to it); DeepEP V2 README: NVLink with full peer access between every "
      "pair of intranode GPUs, a partial topology is rejected at buffer allocation")
def _deepep_nvlink(ctx: Context):
    for i, r, a2a, gpu in _a2a_roles(ctx, ("deepep_high_throughput", "deepep_v2"), ep=2):
        if gpu.vendor == "nvidia" and not gpu.nvlink:
            yield Hit(role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: {a2a} needs NVLink between the GPUs of a node; "
                      f"{gpu.id} cards talk over PCIe ({gpu.nvlink_gbps:g} GB/s)",
                      "use allgather_reducescatter (NCCL over PCIe and the NICs)")


@rule("GPU003", E, "DeepEP on GPUs without SM90 features has intranode normal kernels only",
      "deepseek-ai/DeepEP@v1.2.1:setup.py: DISABLE_SM90_FEATURES (the SM80 build) \"Disable "
      "internode and low-latency kernels\" (assert disable_nvshmem); DeepEP V2 README: Hopper "
      "(SM90) GPUs; deepseek-ai/DeepEP#517 (A800: intra-machine only)")
def _deepep_sm90(ctx: Context):
    for i, r, a2a, gpu in _a2a_roles(ctx, DEEPEP, ep=2):
        if gpu.vendor != "nvidia" or gpu.generation not in PRE_SM90:
            continue
        if a2a != "deepep_low_latency" and not gpu.nvlink:
            continue  # GPU002 says why: no NVLink for the normal kernels
        pool = ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool]
        peers = min(pool.gpusPerNode, deepep.NVL_PEERS)
        ep = r.layout.ep_size
        if a2a == "deepep_low_latency":
            why = "its low-latency kernels are not built there"
        elif a2a == "deepep_v2":
            why = "DeepEP V2 needs SM90"
        elif ep > peers:
            why = (f"the expert-parallel group of {ep} spans more than one node's {peers} NVLink "
                   "peers and its internode kernels are not built there")
        else:
            continue
        yield Hit(role_path(i, "moe", "all2all"),
                  f"role {r.name!r}: {a2a} on {gpu.id} ({gpu.generation}): DeepEP builds for "
                  f"GPUs without SM90 features with intranode normal kernels only, {why}",
                  f"use deepep_high_throughput within one node (expert-parallel size <= {peers}), "
                  "or allgather_reducescatter")


@rule("GPU004", E, "FP8 MoE experts need FP8 tensor cores or a weight-only MoE kernel",
      "SGLang: the fused-MoE Triton kernel fails on SM80 (\"fp8e4nv not supported\", "
      "sgl-project/sglang#12887; FP8 Marlin MoE sgl-project/sglang#9754 closed unmerged). vLLM "
      ">= 0.17.0 selects the Triton fused-MoE kernel without a capability check unless "
      "--moe-backend marlin (vllm-project/vllm#54318; --moe-backend in every release's parser "
      "from 0.17.0: generator/engines/data/engine-options.json)")
def _fp8_moe(ctx: Context):
    if ctx.spec.spec.model.weights != "fp8":
        return
    for i, r in ctx.role_items():
        gpu = _gpu(ctx, i)
        if gpu.fp8 or not r.arch.routed_experts:
            continue
        if is_vllm(ctx):
            if ctx.dialect is None or not ctx.dialect.has(MOE_BACKEND_FLAG) \
                    or _engine_arg(ctx, i, MOE_BACKEND_FLAG) == "marlin":
                continue
            yield Hit(role_path(i, "engineArgs"),
                      f"role {r.name!r}: the FP8 checkpoint's experts on {gpu.id} (no FP8 tensor "
                      "cores): vLLM picks its Triton fused-MoE kernel, which fails at start on "
                      "this GPU (fp8e4nv not supported)",
                      "add engineArgs: [--moe-backend, marlin] (weight-only FP8, W8A16), or "
                      "serve BF16 weights")
        else:
            yield Hit(("spec", "model", "weights"),
                      f"role {r.name!r}: SGLang has no FP8 MoE kernel for {gpu.id} (no FP8 "
                      "tensor cores): its Triton fused MoE fails at start (fp8e4nv not "
                      "supported)",
                      "serve BF16 (or INT8/AWQ) weights, or run vLLM with --moe-backend marlin")


@rule("GPU005", W, "FP8 layers on a GPU without FP8 tensor cores run weight-only (W8A16)",
      "vLLM 0.33.0 vllm/model_executor/layers/quantization/utils/marlin_utils_fp8.py: "
      "\"Weight-only FP8 compression will be used leveraging the Marlin kernel\" "
      "(vllm-project/vllm#5975); compute runs at the BF16 rate", engines=("vllm",))
def _fp8_weight_only(ctx: Context):
    weights = ctx.spec.spec.model.weights
    if weights not in ("fp8", "mxfp4"):
        return
    for i, r in ctx.role_items():
        gpu = _gpu(ctx, i)
        if gpu.fp8:
            continue
        if weights == "fp8" and r.arch.routed_experts and ctx.dialect is not None \
                and ctx.dialect.has(MOE_BACKEND_FLAG) \
                and _engine_arg(ctx, i, MOE_BACKEND_FLAG) != "marlin":
            continue  # GPU004: it does not start at all
        yield Hit(("spec", "model", "weights"),
                  f"role {r.name!r}: {gpu.id} has no FP8 tensor cores: the {weights} "
                  "checkpoint's FP8 layers run weight-only (W8A16) through Marlin, 1 byte per "
                  f"weight in memory but computed at the BF16 rate ({gpu.bf16_tflops:g} TFLOPS)",
                  "expected on this GPU; FP8 compute needs Ada, Hopper or newer")


@rule("GPU006", E, "DeepSeek sparse attention needs a GPU with sparse MLA kernels",
      "vllm-project/vllm#40851 (A800: \"No valid attention backend found ... use_sparse=True\": "
      "FLASHMLA_SPARSE needs compute capability 9.x/10.x); vllm-project/vllm#55177 (DeepSeek-V4 "
      "on SM80/86/89: DeepGEMM and FlashMLA unavailable); sgl-project/sglang#35420 (no SM80 path "
      "for DSA: the indexer's DeepGEMM paged MQA logits)")
def _sparse_attention(ctx: Context):
    for i, r in ctx.role_items():
        # DeepSeek sparse attention: an indexer + sparse MLA (V3.2, GLM-5) or V4's compressed one.
        name = r.arch.label if r.arch.attention.index is not None else None
        gpu = _gpu(ctx, i)
        if name and gpu.vendor == "nvidia" and gpu.generation in PRE_SM90:
            yield Hit(role_path(i, "nodePool"),
                      f"role {r.name!r}: {name}'s sparse attention (indexer + sparse MLA) has "
                      f"no kernel for {gpu.id} ({gpu.generation}): DeepGEMM and FlashMLA's "
                      "sparse kernels need SM90 or newer",
                      "use Hopper or Blackwell GPUs (or AMD MI300X/MI325X/MI355X), or a dense-"
                      "attention model such as deepseek-v3.1")


@rule("QNT002", E, "the engine has an MoE kernel for the checkpoint format on the pool's GPU",
      "generator/sizing/formats.py ENGINE_STORAGE; SGLang 0.5.23 python/sglang/srt/layers/"
      "quantization/modelopt_quant.py ModelOptNvFp4FusedMoEMethod.__init__ (\"Current platform "
      "does not support NVFP4 quantization ... use Blackwell and above, or use "
      "moe_runner_backend=marlin on SM80+\"; the Marlin fallback is CUDA-only)")
def _format_kernel(ctx: Context):
    fmt = ctx.spec.spec.model.weights
    for i, r in ctx.role_items():
        gpu = _gpu(ctx, i)
        row = storage(ctx.engine, fmt, gpu)
        if row is None or row.kernel or not r.arch.routed_experts:
            continue
        other = "vLLM" if ctx.engine == "sglang" else "SGLang"
        yield Hit(("spec", "model", "weights"),
                  f"role {r.name!r}: {ctx.engine} has no MoE kernel for {fmt} weights on "
                  f"{gpu.id} ({gpu.vendor.upper()} {gpu.generation}): the engine refuses to "
                  "load the experts",
                  f"serve the model's FP8 or MXFP4 checkpoint on this GPU, or run {other}"
                  + (" (vLLM emulates NVFP4 on ROCm)" if other == "vLLM" else ""))


@rule("QNT003", W, "NVFP4 on a GPU without NVFP4 tensor cores runs weight-only or emulated",
      "generator/sizing/formats.py ENGINE_STORAGE; vLLM 0.33 vllm/model_executor/layers/"
      "fused_moe/oracle/nvfp4.py select_nvfp4_moe_backend (prioritize_humming: Humming ahead "
      "of Marlin on SM90, quantization/utils/humming/priority.py); "
      "quantization/utils/marlin_utils_fp4.py (\"Your GPU does not have native support for FP4 "
      "computation ... Weight-only FP4 compression will be used leveraging the Marlin "
      "kernel\", SM80/SM89); vllm/model_executor/layers/fused_moe/experts/"
      "nvfp4_emulation_moe.py (ROCm); SGLang 0.5.23 layers/quantization/fp4_utils.py (auto -> "
      "marlin on SM80-SM9x)")
def _nvfp4_weight_only(ctx: Context):
    if ctx.spec.spec.model.weights not in NVFP4_FORMATS:
        return
    for i, r in ctx.role_items():
        gpu = _gpu(ctx, i)
        row = storage(ctx.engine, "nvfp4", gpu)
        if row is None or not row.kernel or row.compute == "native":
            continue
        how = ("dequantized to BF16 on every GEMM (emulation)" if row.compute == "emulated"
               else "computed at the BF16 rate")
        yield Hit(("spec", "model", "weights"),
                  f"role {r.name!r}: {gpu.id} has no NVFP4 tensor cores: {ctx.engine} runs the "
                  f"NVFP4 layers through {kernel_on(row, gpu)}, 4.5 bits per weight in memory "
                  f"but {how} "
                  f"({gpu.bf16_tflops:g} TFLOPS BF16)",
                  "expected on this GPU; NVFP4 compute needs Blackwell (B200/B300/GB200/GB300)")


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in ("1", "true", "yes", "on")


def _dsv4_dequant(ctx: Context, i: int) -> bool:
    """Role ``i`` sets SGLANG_DSV4_FP4_DEQUANT (its env over network.env)."""
    env = {**ctx.spec.spec.network.env, **ctx.spec.spec.roles[i].env}
    return _truthy(env.get("SGLANG_DSV4_FP4_DEQUANT"))


@rule("QNT004", W, "SGLANG_DSV4_FP4_DEQUANT=1 holds DeepSeek-V4's FP4 experts as block FP8",
      "SGLang 0.5.23 python/sglang/srt/layers/quantization/fp8.py "
      "process_weights_after_loading_block_quant (cast_e2m1fn_to_e4m3fn, FP32 block scales: "
      "\"Dequantized FP4 expert weights to FP8\"); environ.py SGLANG_DSV4_FP4_DEQUANT (default "
      "False); sgl-project/sglang#33583", engines=("sglang",))
def _dsv4_dequant_memory(ctx: Context):
    if ctx.spec.spec.model.weights != "mxfp4":
        return
    for i, r in ctx.role_items():
        if not _dsv4_dequant(ctx, i) or not r.arch.routed_experts:
            continue
        where = (role_path(i, "env", "SGLANG_DSV4_FP4_DEQUANT")
                 if "SGLANG_DSV4_FP4_DEQUANT" in ctx.spec.spec.roles[i].env
                 else ("spec", "network", "env", "SGLANG_DSV4_FP4_DEQUANT"))
        yield Hit(where,
                  f"role {r.name!r}: SGLANG_DSV4_FP4_DEQUANT re-encodes the MXFP4 routed experts "
                  "to block FP8 at load (1 byte per weight + an FP32 scale per 128 x 128 "
                  "against 0.53125: 1.88x the expert bytes); moegen's HBM check sizes the "
                  "MXFP4 experts the default path keeps",
                  "leave room for ~1.9x the routed-expert weights (gen explain shows them), "
                  "or unset it (the default flashinfer_mxfp4 / Marlin paths keep 4-bit experts)")


@rule("QNT005", E, "SGLang has no NVFP4/W4A16 expert kernel behind an expert-parallel all-to-all",
      "SGLang 0.5.23 python/sglang/srt/layers/moe/moe_runner/runner.py (\"Runner backend ... "
      "requires a fused func for a2a backend ...\"; deepep_v2 needs the deep_gemm runner); "
      "moe_runner/marlin.py and flashinfer_trtllm.py (fused funcs for a2a none/flashinfer only); "
      "SGLang 0.5.23 "
      "layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa16_moe.py (MARLIN "
      "runner; TRITON on SM100/ROCm, no DeepEP permute); SGLang 0.5.23 "
      "layers/moe/ep_moe/layer.py DeepEPMoE.run_moe_core (\"forward_deepgemm_masked is "
      "deprecated\"); SGLang 0.5.23 arg_groups/moe_hook.py (flashinfer_cutedsl FP4 MoE: DeepEP "
      "low_latency only)", engines=("sglang",))
def _sglang_4bit_a2a(ctx: Context):
    fmt = base_format(ctx.spec.spec.model.weights)
    if fmt not in ("nvfp4", "w4a16"):
        return
    for i, r, a2a, gpu in _a2a_roles(ctx, SGLANG_EP_LAYER + ("flashinfer_all2allv",)):
        row = storage(ctx.engine, fmt, gpu)
        if not r.arch.routed_experts or (row is not None and not row.kernel):
            continue   # QNT002: no kernel for the format on this GPU at all
        blackwell = fmt == "nvfp4" and gpu.vendor == "nvidia" and gpu.fp4
        runner = _engine_arg(ctx, i, SGLANG_RUNNER_FLAG)
        if blackwell and (a2a == "flashinfer_all2allv" or (
                a2a == "deepep_low_latency" and runner == "flashinfer_cutedsl")):
            continue
        kernel = kernel_on(row, gpu) if row is not None else "its MoE kernel"
        who = f"--moe-runner-backend {runner}" if runner else f"the default runner ({kernel})"
        if blackwell and a2a == "deepep_low_latency":
            why = (f"{who} registers no fused function for a2a deepep (MoeRunner raises "
                   "NotImplementedError at load)")
            hint = ("add engineArgs: [--moe-runner-backend, flashinfer_cutedsl] (CuTe-DSL FP4 "
                    "masked GEMM, DeepEP low-latency only), or use allgather_reducescatter")
        elif blackwell:
            why = (f"{who} has no DeepEP-format path"
                   + (": deepep_v2 needs the deep_gemm runner" if a2a == "deepep_v2" else
                      "; flashinfer_cutedsl, the one FP4 kernel DeepEP feeds, refuses DeepEP's "
                      "normal mode" if a2a == "deepep_high_throughput" else ""))
            hint = ("use deepep_low_latency with engineArgs: [--moe-runner-backend, "
                    "flashinfer_cutedsl], flashinfer_all2allv, or allgather_reducescatter")
        else:
            why = (f"{kernel} has no DeepEP-format path (MoeRunner raises NotImplementedError "
                   "at load, or DeepEPMoE asserts at the first forward)")
            hint = ("use allgather_reducescatter (SGLang --moe-a2a-backend none), or serve "
                    "the model with vLLM, whose DeepEP path runs these formats")
        yield Hit(role_path(i, "moe", "all2all"),
                  f"role {r.name!r}: SGLang runs {fmt} experts on {gpu.id} behind {a2a} "
                  f"through its DeepEPMoE layer, and {why}: the engine does not start",
                  hint)


@rule("QNT006", E, "DeepSeek-V4's NVFP4 hybrid checkpoint needs Blackwell under SGLang",
      "SGLang 0.5.23 python/sglang/srt/arg_groups/model_overrides/deepseek_v4.py (hybrid "
      "FP8+NVFP4: moe_runner_backend flashinfer_trtllm_routed, no GPU check); "
      "layers/quantization/modelopt_quant.py ModelOptNvFp4FusedMoEMethod.__init__ (Marlin "
      "fallback only for runner auto/marlin) and HybridFp8NvFp4Config.get_quant_method (MTP "
      "experts: Mxfp4FlashinferTrtllmMoEMethod); FlashInfer's TRT-LLM-gen MoE is SM100-family "
      "only (vLLM 0.33 vllm/model_executor/layers/fused_moe/experts/trtllm_mxfp4_moe.py "
      "_supports_current_device)", engines=("sglang",))
def _dsv4_nvfp4_hopper(ctx: Context):
    if ctx.spec.spec.model.weights not in NVFP4_FORMATS:
        return
    for i, r in ctx.role_items():
        gpu = _gpu(ctx, i)
        if not r.arch.compressed_attention or gpu.vendor != "nvidia" or gpu.fp4 \
                or not r.arch.routed_experts:
            continue
        marlin = _engine_arg(ctx, i, SGLANG_RUNNER_FLAG) == "marlin"
        if marlin and r.speculative is None:
            continue   # the NVFP4 experts run Marlin W4A16; no MTP layer is built
        if marlin:
            why = ("--moe-runner-backend marlin loads the NVFP4 experts, but the MTP layer's "
                   "MXFP4 experts always take FlashInfer's TRT-LLM MXFP4 MoE, an SM100-only "
                   "kernel")
            hint = ("drop speculative (MTP), or serve the MXFP4 checkpoint (weights: mxfp4, "
                    "deepseek-ai/DeepSeek-V4-*), whose MTP runs on Hopper, or use Blackwell")
        else:
            why = ("SGLang forces --moe-runner-backend flashinfer_trtllm_routed for this "
                   "checkpoint, and ModelOptNvFp4FusedMoEMethod refuses it without FP4 tensor "
                   "cores (\"Current platform does not support NVFP4 quantization\"); its MTP "
                   "layer's MXFP4 experts need FlashInfer's SM100-only TRT-LLM kernel too")
            hint = ("serve the MXFP4 checkpoint (weights: mxfp4) on this GPU, or use Blackwell; "
                    "without speculative, engineArgs: [--moe-runner-backend, marlin] starts it "
                    "weight-only")
        yield Hit(("spec", "model", "weights"),
                  f"role {r.name!r}: DeepSeek-V4's NVFP4 hybrid checkpoint on {gpu.id} "
                  f"({gpu.generation}): {why}", hint)


@rule("GPU030", W, "an instance spanning NVL72 trays claims the multi-node NVLink channel",
      "ai-dynamo/dynamo#6364 (GB200: \"the ComputeDomain resource required for MNNVL NVLink "
      "shared memory\"), ai-dynamo/dynamo#8811; vllm-project/vllm#27328 (VLLM_DEEPEP_LOW_LATENCY_USE_MNNVL, off by "
      "default: DeepEP's inter-tray traffic goes over RDMA), vllm-project/vllm#16992 (without MNNVL NCCL "
      "uses TCP or IB across nodes); deepseek-ai/DeepEP@dd758ca:deep_ep/buffers/legacy.py:124-126 "
      "(NVSHMEM_DISABLE_MNNVL=1 unless allowed)")
def _mnnvl_channel(ctx: Context):
    net = ctx.spec.spec.network
    if net.computeDomain is not None:
        return
    for i, r in ctx.role_items():
        gpu = _gpu(ctx, i)
        pool = ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool]
        if not (nvl72(gpu, pool.gpusPerNode) and r.layout.multi_pod):
            continue
        what = (f"expert all-to-all of {r.layout.ep_size} ranks" if r.layout.expert_parallel
                else f"tensor x pipeline group of {r.layout.tensor * r.layout.pipeline} GPUs")
        yield Hit(role_path(i, "nodePool"),
                  f"role {r.name!r}: the {what} spans {len(r.layout.pods)} {gpu.id} trays of "
                  f"{pool.gpusPerNode}, but the pods claim no IMEX channel: NCCL and DeepEP cross "
                  "trays over the NIC, not the NVL72 fabric (gen size prices it so)",
                  "create an NVIDIA DRA ComputeDomain and set network.computeDomain."
                  "resourceClaimTemplate to its channel template (moegen then renders the pods' "
                  "resourceClaims and the NCCL/DeepEP MNNVL switches), or keep each instance in "
                  "one tray")


#: SGLang runners that take DeepSeek-V4's MXFP4 experts behind DeepEP V1 on Hopper-class GPUs:
#: Humming (moe_runner/humming.py:839-914 registers deepep_ll/deepep_normal, from 0.5.16; the
#: LMSYS H20 DeepSeek-V4-Pro deployment, sgl-project/sglang PR#23754).
DSV4_DEEPEP_RUNNERS = {"humming": (0, 5, 16)}


@rule("QNT030", E, "SGLang runs DeepSeek-V4's MXFP4 experts behind DeepEP only on Blackwell, "
      "unless a runner or the FP8 re-encode takes them",
      "sgl-project/sglang#35557 (DeepSeek-V4-Flash + DeepEP on H100/H20, 0.5.12 and 0.5.15.post1: "
      "DeepGEMM asserts \"ab.scalar_type() == kPackedFP4 and arch_major == 10\" at graph "
      "capture); SGLang 0.5.23 python/sglang/srt/arg_groups/moe_hook.py (auto -> deep_gemm with "
      "DeepEP), sgl-project/sglang@v0.5.23:python/sglang/srt/layers/moe/moe_runner/deep_gemm.py:334-335 "
      "(FP8 x FP4 recipe), sgl-project/sglang@v0.5.23:python/sglang/srt/layers/moe/moe_runner/humming.py:839-914 "
      "(DeepEP layouts), sgl-project/sglang@v0.5.23:python/sglang/srt/layers/quantization/fp8.py:425-429 "
      "(SGLANG_DSV4_FP4_DEQUANT)", engines=("sglang",))
def _dsv4_fp4_deepep(ctx: Context):
    if ctx.spec.spec.model.weights != "mxfp4":
        return
    version = parse_version(ctx.spec.spec.engine.version)
    for i, r, a2a, gpu in _a2a_roles(ctx, ("deepep_low_latency", "deepep_high_throughput")):
        if not r.arch.compressed_attention or gpu.vendor != "nvidia" or gpu.fp4 \
                or not r.layout.expert_parallel:
            continue
        runner = _engine_arg(ctx, i, SGLANG_RUNNER_FLAG)
        ok = [n for n, since in DSV4_DEEPEP_RUNNERS.items() if version >= since]
        if _dsv4_dequant(ctx, i) or runner in ok:
            continue
        if runner in DSV4_DEEPEP_RUNNERS:
            since = ".".join(map(str, DSV4_DEEPEP_RUNNERS[runner]))
            why = (f"--moe-runner-backend {runner} takes DeepEP's layouts only from SGLang "
                   f"{since} (this is {ctx.spec.spec.engine.version}), and the default runner "
                   "(deep_gemm) runs DeepGEMM's FP8 x FP4 grouped GEMM, which is SM100-only")
        else:
            who = f"--moe-runner-backend {runner}" if runner else "the default runner (deep_gemm)"
            why = (f"{who} runs DeepGEMM's FP8 x FP4 grouped GEMM, which is SM100-only" if not
                   runner or runner == "deep_gemm" else
                   f"{who} has no DeepEP path for these experts (moe_runner/runner.py)")
        yield Hit(role_path(i, "moe", "all2all"),
                  f"role {r.name!r}: DeepSeek-V4's MXFP4 experts behind {a2a} on {gpu.id} "
                  f"({gpu.generation}): {why}: every rank dies at start or CUDA-graph capture",
                  (f"add engineArgs: [--moe-runner-backend, {ok[0]}] (Humming MXFP4, DeepEP "
                   "layouts), or " if ok else "use SGLang 0.5.16 or later with "
                   "--moe-runner-backend humming, or ")
                  + "set SGLANG_DSV4_FP4_DEQUANT=1 in roles[].env (FP8 experts, ~1.9x their "
                  "memory), or run the all-to-all as allgather_reducescatter")
