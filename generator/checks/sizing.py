"""The HBM sizing rules: weights, activations and overheads against the engine's budget, and the
KV cache against maxModelLen and the required concurrency (all memory in GiB, 2^30 bytes)."""

from __future__ import annotations

import dataclasses
import math

from ..catalog import GPUS
from ..facts import batches
from ..roles import RoleInput
from ..sizing import RoleSizing, size_role
from ..sizing.sglang_budget import fraction_with_room
from ..sizing.vllm_budget import CUDA_CONTEXT_GIB
from .registry import (
    SIZING,
    Context,
    E,
    Hit,
    W,
    role_path,
    role_sets,
    rule,
    serving_path,
)


def _breakdown(z: RoleSizing) -> str:
    """The budget equation of a role's most loaded GPU, with its numbers (GiB)."""
    if z.engine == "sglang":
        return (f"weights {z.weights:.1f} GiB in a static pool of mem_fraction_static "
                f"{z.utilization:g} x {z.fraction_base:.1f} = {z.budget:.1f} GiB per "
                f"{z.gpu}")
    buffers = f" + load buffers {z.load_buffers:.1f}" if z.load_buffers >= 0.05 else ""
    return (f"weights {z.weights:.1f}{buffers} + activation {z.activation:.1f} + overhead "
            f"{z.overhead:.1f} "
            f"GiB against a budget of {z.utilization:g} x {z.gpu_memory:.2f} = {z.budget:.1f} GiB "
            f"per {z.gpu}")


def _what_if(ctx: Context, i: int, r: RoleInput, z: RoleSizing,
             length: int | None = None) -> list[str]:
    """Changes that raise the KV capacity of role i, each with the sequences per rank it holds
    at the length the verdict is at: ``length`` (the traffic's mean context), else maxModelLen
    (the engine's "maximum concurrency")."""
    gpu = GPUS[ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool].gpu]
    out = []
    at = f" sequences of {length} tokens per rank" if length else " per rank"

    def conc(sized: RoleSizing) -> float:
        return sized.sequences_at(length) if length else sized.max_concurrency

    def alt(role):
        try:
            return conc(size_role(role, gpu, ctx.dialect))
        except Exception:  # noqa: BLE001 - a what-if that cannot be sized is simply not offered
            return None
    if r.serving.kvCacheDtype == "auto":
        c = alt(dataclasses.replace(r, serving=dataclasses.replace(r.serving, kvCacheDtype="fp8")))
        if c is not None and c > conc(z):
            out.append(f"kvCacheDtype: fp8 holds {c:.1f}{at}")
    moe = r.moe
    if moe and moe.eplb and moe.eplb.enabled and moe.eplb.redundantExperts:
        eplb0 = moe.eplb.model_copy(update={"redundantExperts": 0})
        c = alt(dataclasses.replace(r, moe=moe.model_copy(update={"eplb": eplb0})))
        if c is not None and c > conc(z):
            out.append(f"redundantExperts: 0 holds {c:.1f}{at}")
    return out


def _freers(r: RoleInput, z: RoleSizing) -> list[str]:
    """Settings that free memory for the KV cache, as hint fragments."""
    out = []
    if z.engine == "sglang":
        room = fraction_with_room(z)
        if room:
            out.append(f"memFractionStatic: {room:g} (SGLang's default reserve is conservative "
                       f"here; {z.activation + z.overhead:.1f} GiB must stay outside the pool)")
    if r.serving.kvCacheDtype == "auto" and not r.arch.compressed_attention:
        # DeepSeek-V4 keeps its 584-byte entries whatever the dtype (sizing/kv.py V4_ENTRY)
        out.append("kvCacheDtype: fp8 halves the KV per token")
    if not r.serving.enforceEager and z.overhead > z.comm + 1.0:
        out.append("enforceEager: true drops the CUDA-graph reserve")
    if z.engine == "vllm" and z.utilization < 0.95 and not r.serving.kvCacheMemoryBytes:
        out.append(f"gpuMemoryUtilization up to 0.95 adds {(0.95 - z.utilization) * z.gpu_memory:.1f} GiB")
    out.append("more tensor/expert parallelism spreads the weights")
    return out


@rule("SIZ001", E, "weights and fixed overheads fit in the engine's memory budget",
      "vLLM 0.33.0 vllm/v1/worker/gpu_worker.py:641 determine_available_memory (KV = budget - "
      "non-KV); SGLang 0.5.23 python/sglang/srt/mem_cache/kv_cache_configurator.py (pool = mfs x "
      "memory - weights: rest_memory)",
      phase=SIZING)
def _siz_fit(ctx: Context):
    for i, r, z in ctx.sized():
        if z.kv_cache <= 0:
            top = sorted(z.weights_by_component.items(), key=lambda kv: -kv[1])[:3]
            parts = ", ".join(f"{k} {v:.1f}" for k, v in top)
            room = fraction_with_room(z) if z.engine == "sglang" else None
            pinned = r.serving.memFractionStatic or r.serving.gpuMemoryUtilization
            if room and not pinned and room * z.fraction_base > z.weights + 1.0:
                # SGLang's own default fraction is the problem, not the model's size: its
                # reserve grows with cuda-graph batch x attention-DP ranks
                # (arg_groups/memory_hook.py reserve_for_graph_mb).
                yield Hit(role_path(i, "parallel"),
                          f"role {r.name!r} does not fit with SGLang's default mem_fraction_static "
                          f"{z.utilization:g} for this layout: {_breakdown(z)} leaves "
                          f"{z.kv_cache:.1f} GiB for the KV cache (SGLang reserves memory for "
                          f"CUDA graphs per attention-DP rank; {r.layout.data} ranks here)",
                          f"pin serving.memFractionStatic: {room:g} (leaves "
                          f"{z.activation + z.overhead + 1.0:.1f} GiB outside the pool for "
                          "activations, graphs and buffers)")
                continue
            graphs = z.overhead - z.comm
            if z.engine == "sglang" and r.layout.data > 1 and graphs > z.weights:
                # The decode graphs of a DP-attention batch, not the model, fill the GPU
                # (sizing/sglang_budget.py cuda_graph_gib).
                yield Hit(role_path(i, "sizing", "concurrency"),
                          f"role {r.name!r} does not fit: CUDA graphs of a decode batch of "
                          f"{batches.cuda_graph_batch(r)} per rank on {r.layout.data} attention-DP "
                          f"ranks take {graphs:.1f} GiB outside the pool, more than the "
                          f"weights ({_breakdown(z)} leaves {z.kv_cache:.1f} GiB for the KV "
                          "cache)",
                          "lower the decode batch per rank (sizing.concurrency / data, "
                          "serving.maxNumSeqs), use fewer attention-DP ranks, or "
                          "serving.enforceEager: true")
                continue
            yield Hit(role_path(i, "parallel"),
                      f"role {r.name!r} does not fit: {_breakdown(z)} leaves {z.kv_cache:.1f} GiB "
                      f"for the KV cache (largest weights per GPU: {parts} GiB)",
                      ("quantize the weights (fp8); " if r.model.weights == "bf16" else "")
                      + "raise expert/tensor parallelism, or use a GPU with more memory")


@rule("SIZ002", E, "one maxModelLen request fits in the KV cache",
      "vLLM 0.33.0 vllm/v1/core/kv_cache_planning.py check_enough_kv_cache_memory (refuses to "
      "start; DeepSeek-V4's groups per release: vllm-project/vllm@v0.26.0:vllm/v1/core/"
      "kv_cache_utils.py _max_memory_usage_bytes_from_groups); vllm-project/vllm#44376, "
      "vllm-project/recipes#381", phase=SIZING)
def _siz_one(ctx: Context):
    for i, r, z in ctx.sized():
        if z.kv_cache > 0 and not z.admits_one_request():
            yield Hit(serving_path(ctx, i, "maxModelLen"),
                      f"role {r.name!r}: one request of maxModelLen {z.max_model_len} needs "
                      f"{z.one_request_gib():.2f} GiB of KV but {z.kv_cache:.2f} GiB remain "
                      f"({_breakdown(z)}); the KV cache holds {z.kv_tokens_per_rank} tokens",
                      "; ".join([f"set maxModelLen <= {z.longest_admitted_len()}"]
                                + _freers(r, z)))


@rule("SIZ003", E, "sizing.concurrency sequences fit (ceil per DP rank) at maxModelLen, or at "
      "spec.traffic's mean context where given",
      "docs/spec.md §2 (sizing.concurrency, traffic); vLLM prints \"Maximum concurrency for N "
      "tokens per request\" (vLLM 0.33.0 vllm/v1/core/kv_cache_utils.py:1149)", phase=SIZING)
def _siz_conc(ctx: Context):
    for i, r, z in ctx.sized():
        if z.kv_cache <= 0 or z.kv_tokens_per_rank < z.max_model_len:
            continue
        if z.admit_len:
            # Sequences of a steady load are spread over their output: on average they hold
            # the prompt and half the output (the performance model's context).
            mean = z.admit_len
            if not z.holds(z.per_rank_required, mean):
                per_rank = z.longest_len_for(z.per_rank_required)
                yield Hit(role_path(i, "sizing", "concurrency"),
                          f"role {r.name!r} must hold {z.required_concurrency} sequences of "
                          f"{mean} tokens on average (spec.traffic: input + output / 2), "
                          f"{z.per_rank_required} per DP rank, but one rank's KV cache holds "
                          f"{z.kv_tokens_per_rank} tokens ({_breakdown(z)}): one rank holds "
                          f"{z.sequences_at(mean):.1f} sequences of {mean} tokens; at that "
                          f"concurrency a sequence may average {per_rank} tokens",
                          "; ".join(_what_if(ctx, i, r, z, mean)
                                    + [f"sizing.concurrency <= "
                                       f"{int(z.sequences_at(mean)) * z.data}"])
                          + "; or more expert/data parallelism")
            continue
        if z.max_concurrency < z.per_rank_required:
            fits = int(z.max_concurrency) * z.data
            longest = z.longest_len_for(z.per_rank_required)
            options = _what_if(ctx, i, r, z) + [f"maxModelLen <= {longest}"]
            if z.engine == "sglang" and fraction_with_room(z):
                options.insert(0, f"memFractionStatic: {fraction_with_room(z):g}")
            yield Hit(role_path(i, "sizing", "concurrency"),
                      f"role {r.name!r} must hold {z.required_concurrency} sequences of "
                      f"{z.max_model_len} tokens, {z.per_rank_required} per DP rank, but one rank's "
                      f"KV cache holds {z.kv_tokens_per_rank} tokens = {z.max_concurrency:.1f} "
                      f"sequences; the instance holds {fits} ({_breakdown(z)})",
                      "; ".join(options) + "; or more expert/data parallelism")


@rule("SIZ006", E, "SGLang leaves room outside mem_fraction_static for graphs and buffers",
      "sgl-project/sglang#5285, sgl-project/sglang#23769 (CUDA graph capture OOM); the engine's "
      "remedy: lower --mem-fraction-static or --cuda-graph-max-bs", phase=SIZING, engines=("sglang",))
def _siz_outside(ctx: Context):
    for i, r, z in ctx.sized():
        need = z.activation + z.overhead
        if z.outside_pool < need:
            path = role_path(i, "sizing", "concurrency")
            for field in ("memFractionStatic", "gpuMemoryUtilization"):
                if role_sets(ctx, i, field):
                    path = role_path(i, "serving", field)
                    break
                if getattr(ctx.spec.spec.serving, field) is not None:
                    path = ("spec", "serving", field)
                    break
            yield Hit(path,
                      f"role {r.name!r}: mem_fraction_static {z.utilization:g} leaves "
                      f"{z.outside_pool:.1f} GiB outside the static pool, but activations "
                      f"({z.activation:.1f}), CUDA graphs and DeepEP buffers ({z.overhead:.1f}) "
                      f"need {need:.1f} GiB",
                      f"use memFractionStatic <= {math.floor((1 - need / z.fraction_base) * 1000) / 1000:g} "
                      "(or a lower gpuMemoryUtilization), or lower maxNumBatchedTokens / the decode batch")


@rule("SIZ004", W, "the memory outside the budget holds what the engine does not count",
      "vLLM: CUDA context and pre-snapshot NCCL memory sit outside gpu_memory_utilization; "
      "releases < 0.20 capture CUDA graphs after KV sizing "
      "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, vLLM 0.33.0 vllm/envs.py)", phase=SIZING, engines=("vllm",))
def _siz_headroom(ctx: Context):
    for i, r, z in ctx.sized():
        headroom = z.gpu_memory - z.budget
        need = CUDA_CONTEXT_GIB + z.cuda_graph_outside
        if headroom < need:
            yield Hit(serving_path(ctx, i, "gpuMemoryUtilization"),
                      f"role {r.name!r}: {headroom:.2f} GiB outside the budget, but the CUDA "
                      f"context{' and CUDA graphs' if z.cuda_graph_outside else ''} take ~{need:.1f} GiB",
                      "use gpuMemoryUtilization <= "
                      f"{math.floor((z.gpu_memory - need) / z.gpu_memory * 1000) / 1000:g}")


@rule("SIZ005", W, "every role is sized",
      "generator/sizing/params.py (the inventory needs the MLA/MoE or V4 fields of config.json)",
      phase=SIZING)
def _siz_skipped(ctx: Context):
    for i, r in ctx.role_items():
        why = ctx.sizing[i] if i < len(ctx.sizing) and i not in ctx.unsized else None
        if isinstance(why, str):
            yield Hit(role_path(i), f"role {r.name!r} was not sized: {why}",
                      "check memory by hand before deploying")
