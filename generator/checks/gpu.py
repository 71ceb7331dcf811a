"""Rules about what the pool's GPU can run at all: the vendor's all-to-all library, DeepEP's
NVLink and SM90 needs, FP8 tensor cores, sparse-attention kernels.

Each rule reads the GPU of the role's pool from the catalog (``generator/catalog/__init__.py``:
``vendor``, ``generation``, ``scaleup_gpus``, ``fp8``).

No MXFP4 rule: moegen's ``mxfp4`` format is the DeepSeek-V4 checkpoints' FP4 experts, and the GPUs
without an FP4 path for them are the ones without V4's sparse attention (Ampere, Ada: GPU006).
Hopper runs them without FP4 cores (the V4-Pro run on H200 that
generator/sizing/vllm_budget.py calibrates to), Blackwell and CDNA4 natively, and vLLM serves V4 on CDNA3 through its
ROCm sparse-MLA backend (vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py).

``nvfp4`` and ``w4a16`` (QNT002-QNT004): the engines' kernel per GPU family is the table
``generator/sizing/formats.py`` ``ENGINE_STORAGE`` (vLLM 0.33.0, SGLang 0.5.23, with their
files). ``w4a16`` runs on every catalog GPU with both engines (Marlin on NVIDIA SM80+, Triton
WNA16 on ROCm), so it has no rule.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..catalog import GPUS, Gpu
from ..engines import deepep
from ..engines.base import RoleInput
from ..engines.options import option_value
from ..sizing.formats import storage
from .registry import Context, E, Hit, W, is_vllm, role_path, rule

#: DeepEP's all-to-all backends (engine-neutral names).
DEEPEP = ("deepep_high_throughput", "deepep_low_latency", "deepep_v2")
#: MoRI-EP's backends (ROCm only).
MORI = ("mori", "mori_high_throughput", "mori_low_latency")
#: Generations without SM90 features (DeepEP builds them with DISABLE_SM90_FEATURES; no
#: DeepGEMM, FlashMLA or sparse MLA kernels).
PRE_SM90 = ("ampere", "ada")
#: Model families whose attention is DeepSeek sparse attention (indexer + sparse MLA).
SPARSE_FAMILIES = {"deepseek_v32": "DeepSeek-V3.2", "deepseek_v4": "DeepSeek-V4"}
#: vLLM's MoE kernel choice (in every release's parser from 0.17.0,
#: generator/engines/data/engine-options.json).
MOE_BACKEND_FLAG = "--moe-backend"


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
      "mori (vllm#28664, MI300X), SGLang --moe-a2a-backend mori (sglang PR#17012); MoRI is "
      "AMD-only (https://github.com/ROCm/mori)")
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
      "deepseek-ai/DeepEP setup.py: DISABLE_SM90_FEATURES (the SM80 build) \"Disable internode "
      "and low-latency kernels\" (assert disable_nvshmem); DeepEP V2 README: Hopper (SM90) GPUs; "
      "deepseek-ai/DeepEP#517 (A800: intra-machine only)")
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
      "sglang#12887; FP8 Marlin MoE sglang PR#9754 closed unmerged). vLLM >= 0.17.0 selects the "
      "Triton fused-MoE kernel without a capability check unless --moe-backend marlin "
      "(vllm#54318; --moe-backend in every release's parser from 0.17.0: "
      "generator/engines/data/engine-options.json)")
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
      "vLLM vllm/model_executor/layers/quantization/utils/marlin_utils_fp8.py: \"Weight-only FP8 "
      "compression will be used leveraging the Marlin kernel\" (vllm#5975); compute runs at the "
      "BF16 rate", engines=("vllm",))
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
      "vllm#40851 (A800: \"No valid attention backend found ... use_sparse=True\": FLASHMLA_SPARSE "
      "needs compute capability 9.x/10.x); vllm#55177 (DeepSeek-V4 on SM80/86/89: DeepGEMM and "
      "FlashMLA unavailable); sglang#35420 (no SM80 path for DSA: the indexer's DeepGEMM paged "
      "MQA logits)")
def _sparse_attention(ctx: Context):
    for i, r in ctx.role_items():
        name = SPARSE_FAMILIES.get(r.arch.family)
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
      "quantization/utils/marlin_utils_fp4.py (\"Your GPU does not have native support for FP4 "
      "computation ... Weight-only FP4 compression will be used leveraging the Marlin "
      "kernel\"); vllm/model_executor/layers/fused_moe/experts/nvfp4_emulation_moe.py (ROCm); "
      "SGLang 0.5.23 layers/quantization/fp4_utils.py (auto -> marlin on SM80-SM9x)")
def _nvfp4_weight_only(ctx: Context):
    if ctx.spec.spec.model.weights != "nvfp4":
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
                  f"NVFP4 layers through {row.kernel}, 4.5 bits per weight in memory but {how} "
                  f"({gpu.bf16_tflops:g} TFLOPS BF16)",
                  "expected on this GPU; NVFP4 compute needs Blackwell (B200/B300/GB200/GB300)")


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in ("1", "true", "yes", "on")


@rule("QNT004", W, "SGLANG_DSV4_FP4_DEQUANT=1 holds DeepSeek-V4's FP4 experts as block FP8",
      "SGLang 0.5.23 python/sglang/srt/layers/quantization/fp8.py "
      "process_weights_after_loading_block_quant (cast_e2m1fn_to_e4m3fn, FP32 block scales: "
      "\"Dequantized FP4 expert weights to FP8\"); environ.py SGLANG_DSV4_FP4_DEQUANT (default "
      "False); sglang#33583", engines=("sglang",))
def _dsv4_dequant(ctx: Context):
    if ctx.spec.spec.model.weights != "mxfp4":
        return
    net = ctx.spec.spec.network.env
    for i, r in ctx.role_items():
        env = {**net, **ctx.spec.spec.roles[i].env}
        if not _truthy(env.get("SGLANG_DSV4_FP4_DEQUANT")) or not r.arch.routed_experts:
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
