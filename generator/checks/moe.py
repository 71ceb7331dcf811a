"""Rules about MoE execution: expert parallelism, EPLB, and the all-to-all backends (DeepEP).
DeepEP's compiled limits are in generator/facts/deepep.py."""

from __future__ import annotations

from ..catalog import GPUS
from ..engines import sglang as sg
from ..facts import batches, deepep
from ..facts.versions import parse_version
from ..layout import min_redundant_experts
from .registry import Context, E, Hit, W, is_vllm, role_path, rule


@rule("EP001", E, "EPLB needs expert parallelism",
      "vLLM 0.33.0 vllm/config/parallel.py: enable_eplb requires --enable-expert-parallel")
def _eplb_needs_ep(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        eplb = role.moe.eplb if role.moe else None
        if eplb is not None and eplb.enabled and not role.parallel.expert:
            yield Hit(role_path(i, "moe", "eplb", "enabled"),
                      "EPLB is enabled but parallel.expert is false",
                      "set parallel.expert: true, or disable EPLB")


@rule("EP002", E, "EPLB needs more than one expert-parallel rank",
      "vLLM 0.33.0 vllm/config/parallel.py: EPLB requires TP x DP > 1")
def _eplb_size(ctx: Context):
    for i, r in ctx.role_items():
        eplb = r.moe.eplb if r.moe else None
        if eplb is not None and eplb.enabled and r.layout.expert_parallel and r.layout.ep_size == 1:
            yield Hit(role_path(i, "moe", "eplb", "enabled"),
                      "EPLB is enabled but tensor x data = 1 (one expert-parallel rank)",
                      "disable EPLB or use more ranks")


@rule("EP003", E, "routed + redundant experts divide evenly over the EP ranks",
      "vLLM 0.33.0 vllm/distributed/eplb/policy/default.py:130 asserts num_physical_experts % "
      "num_gpus == 0 (EPLB on; DeepSeek-V4's native MoE always, vllm-project/vllm#52435); SGLang "
      "0.5.23 python/sglang/srt/eplb/expert_location.py asserts (experts + redundant) % ep_size "
      "== 0 at every start, EPLB or not")
def _eplb_divisible(ctx: Context):
    for i, r in ctx.role_items():
        if not r.layout.expert_parallel or not r.arch.routed_experts:
            continue
        eplb = r.moe.eplb if r.moe else None
        eplb_on = eplb is not None and eplb.enabled
        always = not is_vllm(ctx) or r.arch.compressed_attention
        if not eplb_on and not always:
            continue  # vLLM's generic fused-MoE path spreads a remainder unevenly (expert_map_manager.py)
        experts = r.arch.routed_experts
        ep = r.layout.ep_size
        redundant = eplb.redundantExperts if eplb_on else 0
        total = experts + redundant
        if ep > 1 and total % ep:
            first = min_redundant_experts(experts, ep)
            valid = [first + k * ep for k in range(4)]
            why = "" if eplb_on else (
                " (SGLang checks this with or without EPLB)" if not is_vllm(ctx)
                else " (DeepSeek-V4's MoE checks this with or without EPLB)")
            if eplb_on:
                path, hint = role_path(i, "moe", "eplb", "redundantExperts"), \
                    f"valid redundantExperts: {', '.join(map(str, valid))}, ..."
            else:
                path = role_path(i, "parallel")
                divisors = [d for d in range(1, experts + 1) if experts % d == 0 and d >= ep // 2][:4]
                hint = (f"enable EPLB with redundantExperts {first} (or {first + ep}), or use an "
                        f"expert-parallel size that divides {experts}: "
                        f"{', '.join(map(str, divisors))}")
            yield Hit(path,
                      f"{experts} routed + {redundant} redundant = {total} experts are "
                      f"not divisible by the expert-parallel size {ep} (tensor {r.layout.tensor} x "
                      f"data {r.layout.data}){why}", hint)


@rule("EP004", E, "redundant experts need EPLB",
      "vLLM 0.33.0 vllm/config/parallel.py: num_redundant_experts != 0 requires --enable-eplb")
def _redundant_needs_eplb(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        eplb = role.moe.eplb if role.moe else None
        if eplb is not None and not eplb.enabled and eplb.redundantExperts:
            yield Hit(role_path(i, "moe", "eplb", "redundantExperts"),
                      f"redundantExperts is {eplb.redundantExperts} but EPLB is disabled",
                      "enable EPLB or set redundantExperts: 0")


@rule("EP005", E, "round_robin expert placement needs zero redundant experts",
      "vLLM 0.33.0 vllm/model_executor/layers/fused_moe/layer.py (round_robin falls back/raises "
      "with redundant experts)")
def _placement(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        moe = role.moe
        if moe and moe.placement == "round_robin" and moe.eplb and moe.eplb.redundantExperts:
            yield Hit(role_path(i, "moe", "placement"),
                      f"placement round_robin with {moe.eplb.redundantExperts} redundant experts",
                      "use placement: linear, or redundantExperts: 0")


@rule("EP006", W, "expert parallelism on one rank has no effect",
      "vLLM 0.33.0 vllm/config/parallel.py: EP size = TP x DP")
def _ep_one(ctx: Context):
    for i, r in ctx.role_items():
        if r.layout.expert_parallel and r.layout.ep_size == 1:
            yield Hit(role_path(i, "parallel", "expert"),
                      "expert: true with tensor x data = 1 gives one expert-parallel rank",
                      "set expert: false or raise data/tensor")


@rule("A2A001", E, "the all-to-all backend exists in the engine version",
      "vLLM --all2all-backend choices per release (vLLM 0.33.0 vllm/config/parallel.py, every "
      "release's parser: generator/engines/data/vllm-releases.json); SGLang --moe-a2a-backend "
      "(SGLang 0.5.23 python/sglang/srt/server_args.py)")
def _a2a_choice(ctx: Context):
    if ctx.dialect is None:
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if not (role.moe and role.moe.all2all):
            continue
        choices = ctx.dialect.all2all_choices
        if role.moe.all2all not in choices:
            yield Hit(role_path(i, "moe", "all2all"),
                      f"all2all {role.moe.all2all!r} is not available in "
                      f"{ctx.spec.spec.engine.name} {ctx.spec.spec.engine.version} "
                      f"(dialect {ctx.dialect.version})",
                      f"choose one of: {', '.join(choices)}")


@rule("A2A002", W, "an all-to-all backend without expert parallelism is unused",
      "vLLM 0.33.0 vllm/distributed/device_communicators/all2all.py (used by EP MoE layers only)")
def _a2a_needs_ep(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.moe and role.moe.all2all and not role.parallel.expert:
            yield Hit(role_path(i, "moe", "all2all"),
                      f"all2all {role.moe.all2all!r} has no effect with parallel.expert: false",
                      "set parallel.expert: true or drop moe.all2all")


@rule("A2A003", E, "DeepEP supports the model's hidden size",
      "deepseek-ai/DeepEP@dd758ca:csrc/kernels/legacy/launch.cuh:113 SWITCH_HIDDEN; "
      "vllm-project/vllm#21603; vLLM pads the hidden size for DeepEP (vLLM 0.12.0 "
      "vllm/model_executor/layers/fused_moe/deepep_ll_prepare_finalize.py "
      "maybe_roundup_layer_hidden_size; generator/facts/deepep.py VLLM_LL_PADDED_SINCE)")
def _deepep_hidden(ctx: Context):
    release = parse_version(ctx.spec.spec.engine.version)
    for i, r in ctx.role_items():
        if not (r.moe and r.moe.all2all and r.moe.all2all.startswith("deepep")):
            continue
        if ctx.engine == "vllm":
            if deepep.vllm_runs_hidden(r.arch.hidden_size, r.moe.all2all, release):
                continue
        elif r.arch.hidden_size in deepep.HIDDEN_SIZES:
            continue
        sizes = (deepep.VLLM_LL_SIZES_BEFORE if ctx.engine == "vllm" else deepep.HIDDEN_SIZES)
        yield Hit(role_path(i, "moe", "all2all"),
                  f"DeepEP kernels are not compiled for hidden size {r.arch.hidden_size}"
                  + (f" and vLLM {ctx.spec.spec.engine.version} does not pad it"
                     if ctx.engine == "vllm" else ""),
                  f"supported: {', '.join(map(str, sizes))}; use allgather_reducescatter"
                  + (" (vLLM >= 0.12.0 pads up to 8192)" if ctx.engine == "vllm" else ""))


@rule("A2A004", E, "DeepEP or MoRI across pods needs RDMA NICs in the pods",
      "DeepEP internode kernels run over NVSHMEM (IBGDA for low-latency: GPU-initiated RDMA, "
      "https://github.com/deepseek-ai/DeepEP README); without NICs NVSHMEM fails at init "
      "(sgl-project/sglang#12533). MoRI-EP's inter-node kernels run XGMI + RDMA (IBGDA) "
      "(https://github.com/ROCm/mori README.md, MORI-EP)")
def _deepep_rdma(ctx: Context):
    for i, r in ctx.role_items():
        if r.moe and r.moe.all2all and r.moe.all2all.startswith(("deepep", "mori")) \
                and r.layout.multi_pod and ctx.spec.spec.network.rdma is None:
            lib = "NVSHMEM" if r.moe.all2all.startswith("deepep") else "MoRI"
            yield Hit(role_path(i, "moe", "all2all"),
                      f"{r.moe.all2all} spans {len(r.layout.pods)} pods but network.rdma is unset: "
                      f"{lib} has no RDMA NIC to reach the other pods",
                      "declare network.rdma (resourceName, devices), or use "
                      "allgather_reducescatter across pods")


@rule("A2A009", E, "DeepEP high-throughput kernels support the expert-parallel size",
      "deepseek-ai/DeepEP csrc/kernels/legacy/launch.cuh (0b32c55) SWITCH_RANKS / "
      "SWITCH_RDMA_RANKS: EP_HOST_ASSERT \"Unsupported RDMA ranks\" at the first dispatch")
def _deepep_normal_ranks(ctx: Context):
    for i, r in ctx.role_items():
        if not (r.moe and r.moe.all2all == "deepep_high_throughput" and r.layout.expert_parallel):
            continue
        ep = r.layout.ep_size
        ok = deepep.normal_rank_counts(max(ep, 256))
        if ep not in ok:
            nodes = f" ({ep} / {deepep.NVL_PEERS} = {ep / deepep.NVL_PEERS:g} nodes)" \
                if ep > deepep.NVL_PEERS else ""
            yield Hit(role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: DeepEP's normal kernels are not compiled for {ep} "
                      f"expert-parallel ranks{nodes}",
                      "use an expert-parallel size of "
                      f"{', '.join(map(str, [x for x in ok if x <= max(2 * ep, 64)]))}, or "
                      "deepep_low_latency (any rank count)")


@rule("A2A005", W, "DeepEP low-latency dispatch stays within its token capacity",
      "DeepEP low-latency buffers hold <= 1024 tokens per rank "
      "(sgl-project/sglang@v0.5.23:python/sglang/srt/layers/moe/token_dispatcher/deepep.py:409); "
      "vLLM >= 0.20 sizes the dispatch by max_num_batched_tokens (vllm/engine/arg_utils.py)",
      engines=("vllm",))
def _deepep_tokens(ctx: Context):
    for i, r in ctx.role_items():
        batched = r.serving.maxNumBatchedTokens
        if r.moe and r.moe.all2all == "deepep_low_latency" and batched and \
                batched > deepep.LL_MAX_TOKENS:
            yield Hit(role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: deepep_low_latency with maxNumBatchedTokens {batched} "
                      f"exceeds DeepEP's {deepep.LL_MAX_TOKENS} dispatch tokens per rank",
                      "use deepep_high_throughput for large batches (prefill), or lower "
                      "maxNumBatchedTokens")


@rule("A2A006", E, "SGLang's DeepEP low-latency dispatch fits DeepEP's token capacity",
      "SGLang 0.5.23 python/sglang/srt/layers/moe/token_dispatcher/deepep.py asserts "
      "num_max_dispatch_tokens_per_rank <= 1024; needed = cuda-graph batch per rank x draft "
      "tokens, the budget SGLang 0.5.23 checks for deepep_v2 "
      "(python/sglang/srt/arg_groups/moe_hook.py validate_deepep_v2_dispatch_token_budget); "
      "deepseek-ai/DeepEP#165, sgl-project/sglang#6017", engines=("sglang",))
def _sglang_deepep_tokens(ctx: Context):
    for i, r in ctx.role_items():
        if r.moe and r.moe.all2all == "deepep_low_latency" and r.mode != "prefill":
            need = batches.deepep_dispatch_tokens(r)
            if need > deepep.LL_MAX_TOKENS:
                yield Hit(role_path(i, "sizing", "concurrency"),
                          f"role {r.name!r}: a decode batch of "
                          f"{max(batches.cuda_graph_batch(r), batches.admitted_per_rank(r))} per rank x "
                          f"{batches.draft_tokens(r)} tokens per request = {need} DeepEP dispatch tokens "
                          f"per rank, above DeepEP's {deepep.LL_MAX_TOKENS}",
                          "spread the concurrency over more data-parallel ranks, or use fewer "
                          "speculative tokens")


@rule("A2A007", W, "decode with DeepEP normal mode runs without CUDA graphs",
      "SGLang 0.5.23 python/sglang/srt/arg_groups/moe_hook.py disables CUDA graphs when "
      "deepep_mode is normal (sgl-project/sglang#5014; moegen renders --disable-cuda-graph "
      "explicitly); vllm-project/vllm@v0.33.0:vllm/config/compilation.py:1242-1258 sets "
      "cudagraph_mode NONE for deepep_high_throughput with data parallelism (\"incompatible "
      "with CUDA Graphs\", vllm-project/vllm#25093)")
def _sglang_deepep_normal_decode(ctx: Context):
    for i, r in ctx.role_items():
        if is_vllm(ctx) and r.layout.data <= 1:
            continue   # vLLM disables graphs for DeepEP normal only with data parallelism
        if r.mode != "prefill" and r.moe and r.moe.all2all == "deepep_high_throughput":
            yield Hit(role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: DeepEP normal (high-throughput) kernels cannot be "
                      "captured in CUDA graphs: decode runs eager",
                      "use deepep_low_latency for decode roles")


@rule("A2A008", W, "prefill roles use DeepEP's high-throughput kernels",
      "DeepEP low-latency buffers hold at most 1,024 tokens per rank; prefill chunks are "
      "thousands (https://github.com/deepseek-ai/DeepEP README: normal kernels for prefill, "
      "low-latency for decode; generator/facts/deepep.py)")
def _prefill_ll(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode == "prefill" and role.moe and role.moe.all2all == "deepep_low_latency":
            yield Hit(role_path(i, "moe", "all2all"),
                      f"prefill role {role.name!r} uses deepep_low_latency",
                      "use deepep_high_throughput for prefill")


@rule("OVL001", E, "all-to-all overlap needs expert parallelism over data-parallel ranks",
      "vLLM 0.33.0 vllm/v1/worker/gpu/ubatch_utils.py (no micro-batches when data_parallel_size "
      "<= 1); SGLang 0.5.23 python/sglang/srt/layers/moe/utils.py (TBO/SBO hooks live in the "
      "expert all-to-all dispatcher)")
def _overlap_needs_ep(ctx: Context):
    for i, r in ctx.role_items():
        moe = r.moe
        if moe is None or moe.overlap is None:
            continue
        if not (r.layout.expert_parallel and r.layout.data > 1 and moe.all2all):
            yield Hit(role_path(i, "moe", "overlap"),
                      f"role {r.name!r}: overlap {moe.overlap!r} hides the expert all-to-all "
                      f"behind computation, but this role has expert: "
                      f"{str(r.layout.expert_parallel).lower()}, data: {r.layout.data}, "
                      f"all2all: {moe.all2all or 'unset'}",
                      "use it with parallel.expert: true, data > 1 and a moe.all2all backend, "
                      "or drop moe.overlap")


#: engine-neutral ``moe.overlap`` -> the flag each engine spells it with (None: no such mode).
_OVERLAP_FLAG = {"vllm": {"two_batch": "--enable-dbo", "single_batch": None},
                 "sglang": sg.OVERLAP}


@rule("OVL002", E, "the engine release has the overlap mode",
      "vLLM --enable-dbo (vLLM 0.33.0 vllm/config/parallel.py ParallelConfig.enable_dbo; no "
      "single-batch form); SGLang --enable-two-batch-overlap, --enable-single-batch-overlap "
      "(0.5.3+; SGLang 0.5.23 python/sglang/srt/server_args.py, every release's parser: "
      "generator/engines/data/engine-options.json)")
def _overlap_exists(ctx: Context):
    if ctx.dialect is None:
        return
    flags = _OVERLAP_FLAG[ctx.engine]
    for i, role in enumerate(ctx.spec.spec.roles):
        mode = role.moe.overlap if role.moe else None
        if mode is None:
            continue
        flag = flags[mode]
        if flag is None or not ctx.dialect.has(flag):
            have = [m for m, f in flags.items() if f and ctx.dialect.has(f)]
            yield Hit(role_path(i, "moe", "overlap"),
                      f"overlap {mode!r} does not exist in {ctx.engine} "
                      f"{ctx.spec.spec.engine.version}"
                      + (f" (no {flag})" if flag else " (the engine has no such mode)"),
                      f"use one of: {', '.join(have)}" if have else "drop moe.overlap")


#: SGLang all-to-all backends without the overlap hooks TBO/SBO call (dispatch_a/combine_a).
_SGLANG_NO_OVERLAP = {
    "deepep_v2": "refuses it at start (arg_groups/moe_hook.py: \"DeepEP v2 MoE has not "
                 "implemented the TBO/SBO overlap hooks yet\")",
    "flashinfer_all2allv": "has no overlap path (layers/moe/token_dispatcher/flashinfer.py "
                           "FlashinferDispatcher has no dispatch_a/combine_a)",
}


@rule("OVL003", E, "SGLang's all-to-all backend has overlap hooks",
      "SGLang 0.5.23 python/sglang/srt/arg_groups/moe_hook.py (DeepEP v2 refused with TBO/SBO); "
      "SGLang 0.5.23 layers/moe/token_dispatcher/flashinfer.py (no dispatch_a/combine_a for "
      "TBO); layers/moe/fused_moe_triton/layer.py (MaybeTboDeepEPDispatcher: deepep, mooncake, "
      "mori, nixl, pplx)", engines=("sglang",))
def _overlap_backend_sglang(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        moe = role.moe
        if moe and moe.overlap and moe.all2all in _SGLANG_NO_OVERLAP:
            yield Hit(role_path(i, "moe", "overlap"),
                      f"role {role.name!r}: overlap {moe.overlap!r} with the {moe.all2all} "
                      f"all-to-all: SGLang {_SGLANG_NO_OVERLAP[moe.all2all]}",
                      "use deepep_low_latency (decode) or deepep_high_throughput (prefill), or "
                      "drop moe.overlap")


def _vllm_dbo_backends(version: str, amd: bool) -> list[str] | None:
    """All-to-all backends vLLM's dual-batch overlap accepts in ``version`` (None: unchecked)."""
    v = parse_version(version)
    if v < (0, 12, 0):
        return None
    out = ["deepep_low_latency", "deepep_high_throughput"]
    if v >= (0, 24, 0):
        out.append("nixl_ep")
    if amd and v >= (0, 33, 0):
        out.append("allgather_reducescatter")
    return out


@rule("OVL004", E, "vLLM's dual-batch overlap runs on a DeepEP (or NIXL-EP) all-to-all",
      "vLLM vllm/config/vllm.py (0.12.0+: \"Microbatching currently only supports the "
      "deepep_low_latency and deepep_high_throughput all2all backends\"; nixl_ep from 0.24.0; "
      "allgather_reducescatter on ROCm in 0.33.0)", engines=("vllm",))
def _dbo_backend(ctx: Context):
    for i, r in ctx.role_items():
        if r.moe is None or r.moe.overlap != "two_batch" or not r.moe.all2all:
            continue   # without an all-to-all, OVL001 says what is missing
        ok = _vllm_dbo_backends(ctx.spec.spec.engine.version,
                                GPUS[ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool]
                                     .gpu].vendor == "amd")
        if ok is not None and r.moe.all2all not in ok:
            yield Hit(role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: vLLM {ctx.spec.spec.engine.version} refuses "
                      f"--enable-dbo with all2all {r.moe.all2all or 'unset'} at start",
                      f"use one of: {', '.join(ok)}")


@rule("OVL005", W, "two-batch overlap has work to split",
      "vLLM 0.33.0 vllm/config/parallel.py dbo_decode_token_threshold = 32 (micro-batches only "
      "above it, vllm/v1/worker/ubatch_utils.py); SGLang 0.5.23 "
      "python/sglang/srt/models/deepseek_v4.py _can_run_tbo (DeepSeek-V4: prefill only, without "
      "pipeline or context parallelism)")
def _overlap_no_effect(ctx: Context):
    for i, r, z in ctx.sized():
        if r.moe is None or r.moe.overlap != "two_batch":
            continue
        k = r.speculative.numSpeculativeTokens if r.speculative and r.mode != "prefill" else 0
        # The sequences a rank runs: the sized load (sizing.concurrency), else the admission cap
        # the role sets (serving.maxNumSeqs, per rank); neither: the engine's own default
        # admission, which moegen does not judge (an imported manifest's load is not stated).
        seqs = z.per_rank_required if r.admission is not None else r.serving.maxNumSeqs
        if ctx.engine == "vllm" and r.mode != "prefill" and seqs is not None:
            tokens = seqs * (1 + k)
            if tokens < 32:
                yield Hit(role_path(i, "moe", "overlap"),
                          f"role {r.name!r}: at most {tokens} decode tokens per rank per step "
                          f"({seqs} sequences x {1 + k}); vLLM splits a step "
                          "into micro-batches only from 32: --enable-dbo does nothing",
                          "raise sizing.concurrency, or drop moe.overlap")
        if ctx.engine == "sglang" and r.arch.compressed_attention and (
                r.mode != "prefill" or r.layout.pipeline > 1 or (r.parallel.context or 1) > 1):
            yield Hit(role_path(i, "moe", "overlap"),
                      f"role {r.name!r}: SGLang runs two-batch overlap for DeepSeek-V4 only in "
                      "prefill without pipeline or context parallelism: the flag does nothing "
                      "here", "drop moe.overlap")


@rule("OVL006", E, "SGLang's two-batch overlap starts with DeepSeek-V3.2 (0.5.7+)",
      "sgl-project/sglang#12698 (two-batch overlap with DeepSeek-V3.2 fails at start, "
      "0.5.4.post1), fixed by sgl-project/sglang#14901 (first in 0.5.7)", engines=("sglang",))
def _tbo_v32(ctx: Context):
    if ctx.arch is None or ctx.arch.engine_class != "DeepseekV32ForCausalLM" or \
            parse_version(ctx.spec.spec.engine.version) >= (0, 5, 7):
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.moe and role.moe.overlap == "two_batch":
            yield Hit(role_path(i, "moe", "overlap"),
                      f"role {role.name!r}: SGLang {ctx.spec.spec.engine.version} fails to "
                      "start two-batch overlap with DeepSeek-V3.2",
                      "engine.version 0.5.7 or later, or drop moe.overlap")


@rule("OVL007", E, "SGLang's single-batch overlap runs on DeepEP's low-latency kernels",
      "SGLang 0.5.6-0.5.23 python/sglang/srt/batch_overlap/single_batch_overlap.py "
      "compute_overlap_args (unpacks the low-latency dispatch layout: experts x tokens x "
      "hidden; normal mode returns tokens x hidden)", engines=("sglang",))
def _sbo_low_latency(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        moe = role.moe
        if moe and moe.overlap == "single_batch" and moe.all2all != "deepep_low_latency":
            yield Hit(role_path(i, "moe", "overlap"),
                      f"role {role.name!r}: single-batch overlap with all2all "
                      f"{moe.all2all or 'unset'}: SGLang's SBO hook expects DeepEP's "
                      "low-latency dispatch layout", "use all2all deepep_low_latency (decode "
                      "roles), two_batch overlap, or drop moe.overlap")


@rule("A2A030", E, "DeepEP V1's buffer fits the expert-parallel group onto nodes of 8 GPUs",
      "deepseek-ai/DeepEP@dd758ca:csrc/legacy/buffer.hpp:113-120 (num_ranks < 8 or num_ranks % 8 "
      "== 0 in every mode; rdma_rank = rank / 8), deepseek-ai/DeepEP@dd758ca:csrc/kernels/legacy/internode.cu:25 (normal "
      "kernels: 8 NVLink peers per node); deepseek-ai/DeepEP#392, deepseek-ai/DeepEP#477, deepseek-ai/DeepEP#50")
def _deepep_nvl_groups(ctx: Context):
    for i, r in ctx.role_items():
        a2a = r.moe.all2all if r.moe else None
        if a2a not in ("deepep_low_latency", "deepep_high_throughput") \
                or not r.layout.expert_parallel:
            continue
        ep = r.layout.ep_size
        per_node = ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool].gpusPerNode
        if ep >= deepep.NVL_PEERS and ep % deepep.NVL_PEERS:
            yield Hit(role_path(i, "parallel"),
                      f"role {r.name!r}: {a2a} over {ep} expert-parallel ranks: DeepEP's buffer "
                      f"groups ranks by {deepep.NVL_PEERS} and refuses a group of 8 or more that "
                      f"is not a multiple of {deepep.NVL_PEERS} at start",
                      f"use an expert-parallel size below {deepep.NVL_PEERS} or a multiple of "
                      f"{deepep.NVL_PEERS}, or allgather_reducescatter")
        elif a2a == "deepep_high_throughput" and r.layout.multi_pod \
                and per_node != deepep.NVL_PEERS:
            yield Hit(role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: DeepEP's normal kernels take each {deepep.NVL_PEERS} "
                      f"consecutive ranks as NVLink peers of one node, but pool nodes have "
                      f"{per_node} GPUs and the group spans {len(r.layout.pods)} pods: the "
                      "dispatch reaches GPUs of another node over NVLink handles it cannot open",
                      "use deepep_low_latency across pods (it talks RDMA/MNNVL per rank), keep "
                      "the group inside one node, or use 8-GPU nodes")
