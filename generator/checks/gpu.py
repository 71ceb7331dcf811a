"""Rules about what the pool's GPU can run at all: the vendor's all-to-all library, DeepEP's
NVLink and SM90 needs, FP8 tensor cores, sparse-attention kernels.

Each rule reads the GPU of the role's pool from the catalog (``generator/catalog/__init__.py``:
``vendor``, ``generation``, ``scaleup_gpus``, ``fp8``).

No FP4 rule: moegen's ``mxfp4`` format is the DeepSeek-V4 checkpoints' FP4 experts, and the GPUs
without an FP4 path for them are the ones without V4's sparse attention (Ampere, Ada: GPU006).
Hopper runs them without FP4 cores (the V4-Pro run on H200 that
generator/sizing/vllm_budget.py calibrates to), Blackwell and CDNA4 natively, and vLLM serves V4 on CDNA3 through its
ROCm sparse-MLA backend (vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py). NVFP4 is not a
``model.weights`` format.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..catalog import GPUS, Gpu
from ..engines import deepep
from ..engines.base import RoleInput
from ..engines.options import option_value
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
