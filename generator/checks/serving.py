"""Rules about serving limits: batch tokens, admitted sequences, engine-specific settings, and
the engine timeouts paired with another component (generator/durations.py)."""

from __future__ import annotations

import re

from ..durations import KEEPALIVE_ENV, front_idle_s, keepalive_s
from ..engines.vllm import max_num_seqs as vllm_max_num_seqs
from ..facts.versions import parse_version
from ..sizing import RoleSizing
from .registry import Context, E, Hit, W, is_vllm, role_env, role_path, rule, serving_path


@rule("SRV001", E, "maxNumBatchedTokens is at least maxNumSeqs",
      "vLLM 0.33.0 vllm/config/scheduler.py SchedulerConfig.verify_max_model_len: "
      "max_num_batched_tokens must be >= max_num_seqs", engines=("vllm",))
def _batched_vs_seqs(ctx: Context):
    for i, r in ctx.role_items():
        # What moegen renders: the spec's maxNumSeqs or the one it derives from sizing.
        seqs, batched = vllm_max_num_seqs(r), r.serving.maxNumBatchedTokens
        z = ctx.sizing[i] if i < len(ctx.sizing) else None
        if batched is None and isinstance(z, RoleSizing):
            batched = z.batched_tokens   # the default moegen renders (vLLM's own for this GPU)
        if seqs is not None and batched is not None and batched < seqs:
            whose = "maxNumSeqs" if r.serving.maxNumSeqs is not None else \
                "the --max-num-seqs moegen derives from sizing.concurrency,"
            yield Hit(serving_path(ctx, i, "maxNumBatchedTokens"),
                      f"role {r.name!r}: maxNumBatchedTokens {batched} is below {whose} "
                      f"{seqs}: vLLM refuses to start", f"use maxNumBatchedTokens >= {seqs}")


@rule("SRV002", E, "memFractionStatic is an SGLang setting",
      "SGLang --mem-fraction-static (SGLang 0.5.23 python/sglang/srt/server_args.py); vLLM sizes "
      "with --gpu-memory-utilization (vLLM 0.33.0 vllm/config/cache.py)", engines=("vllm",))
def _mfs_engine(ctx: Context):
    for i, r in ctx.role_items():
        if r.serving.memFractionStatic is not None:
            yield Hit(serving_path(ctx, i, "memFractionStatic"),
                      "memFractionStatic has no meaning for vLLM", "use gpuMemoryUtilization")


@rule("SRV010", E, "swaFullTokensRatio is an SGLang setting",
      "SGLang --swa-full-tokens-ratio (SGLang 0.5.23 python/sglang/srt/arg_groups/fields/"
      "schedule.py; python/sglang/srt/model_executor/pool_configurator.py sizes the window pool "
      "with it); vLLM has no such flag: its window layers take blocks per request (vLLM 0.33.0 "
      "vllm/v1/kv_cache_interface.py SlidingWindowSpec)", engines=("vllm",))
def _swa_ratio_engine(ctx: Context):
    for i, r in ctx.role_items():
        if r.serving.swaFullTokensRatio is not None:
            yield Hit(serving_path(ctx, i, "swaFullTokensRatio"),
                      "swaFullTokensRatio has no meaning for vLLM: its sliding-window layers "
                      "take blocks per request, not a pool of their own", "drop it")


#: The first SGLang release read with the request-cap SWA pool (0.5.23; earlier ones not read).
SWA_CAP_SINCE = (0, 5, 23)
DECODE_RADIX = "--disaggregation-decode-enable-radix-cache"


@rule("SRV011", W, "swaFullTokensRatio is read where it is set",
      "SGLang 0.5.23 python/sglang/srt/model_executor/pool_configurator.py "
      "SWARequestCapPoolConfigurator.is_applicable (--max-running-requests set, radix cache "
      "disabled, decode: the window pool is the request cap, not the ratio; "
      "create_memory_pool_configurator picks it for every hybrid-SWA model but DeepSeek-V4); "
      "python/sglang/srt/arg_groups/pd_disaggregation_hook.py (the decode server disables the "
      "radix cache unless --disaggregation-decode-enable-radix-cache)", engines=("sglang",))
def _swa_ratio_unread(ctx: Context):
    if parse_version(ctx.spec.spec.engine.version) < SWA_CAP_SINCE:
        return
    for i, r in ctx.role_items():
        at = r.arch.attention
        if r.mode != "decode" or r.serving.swaFullTokensRatio is None or at.compressed \
                is not None or at.window is None or "full" not in at.layer_types \
                or DECODE_RADIX in ctx.spec.spec.roles[i].engineArgs:
            continue
        yield Hit(serving_path(ctx, i, "swaFullTokensRatio"),
                  f"role {r.name!r}: SGLang {ctx.spec.spec.engine.version}'s decode runs without "
                  "a radix cache and with --max-running-requests (moegen renders it), so it "
                  f"sizes the {at.window}-token window pool from the running requests' worst "
                  "case and gives the rest to the full pool: "
                  f"swaFullTokensRatio {r.serving.swaFullTokensRatio} is not read",
                  f"drop it on the decode role, or pass {DECODE_RADIX} in its engineArgs "
                  "(experimental: the ratio then sizes the pool)")


@rule("SRV003", E, "maxNumSeqs admits the sequences the role must hold",
      "vLLM --max-num-seqs is per engine (DP rank), vLLM 0.33.0 vllm/config/scheduler.py; SGLang "
      "--max-running-requests per instance, SGLang 0.5.23 python/sglang/srt/server_args.py")
def _admission(ctx: Context):
    for i, r in ctx.role_items():
        cap = r.serving.maxNumSeqs
        if cap is None:
            continue
        need = -(-r.concurrency // r.layout.data) if is_vllm(ctx) else r.concurrency
        if cap < need:
            unit = "per DP rank" if is_vllm(ctx) else "per instance"
            yield Hit(role_path(i, "sizing", "concurrency"),
                      f"role {r.name!r} must hold {r.concurrency} sequences ({need} {unit}) but "
                      f"maxNumSeqs admits {cap} {unit}",
                      f"raise maxNumSeqs to {need}, or lower sizing.concurrency")


@rule("SRV004", E, "SGLang decode roles set sizing.concurrency",
      "generator/engines/sglang.py: SGLang admits --max-running-requests (divided among "
      "attention-DP ranks, SGLang 0.5.23 python/sglang/srt/mem_cache/kv_cache_configurator.py) "
      "and moegen sizes the decode CUDA graphs and DeepEP dispatch buffers from it; unset, the "
      "role would admit one sequence",
      engines=("sglang",))
def _sglang_concurrency(ctx: Context):
    for i, r in ctx.role_items():
        if r.mode != "prefill" and r.admission is None and r.serving.maxNumSeqs is None \
                and not r.engine_default:
            yield Hit(role_path(i, "sizing", "concurrency"),
                      f"role {r.name!r} ({r.mode}) does not say how many sequences an instance "
                      "runs: moegen renders --max-running-requests, CUDA graphs and DeepEP "
                      "buffers from sizing.concurrency",
                      "set sizing.concurrency (sequences of maxModelLen one instance holds), "
                      "or engine-default for SGLang's own admission")


@rule("SRV012", W, "sizing.concurrency engine-default is modelled for SGLang",
      "docs/spec.md §2 (sizing.concurrency): moegen computes SGLang's default admission (SGLang "
      "0.5.23 python/sglang/srt/mem_cache/kv_cache_configurator.py resolve_max_num_reqs); "
      "vLLM's default --max-num-seqs depends on the GPU, the usage context and the batched "
      "tokens (vLLM 0.33.0 vllm/engine/arg_utils.py get_batch_defaults), which moegen does not "
      "model as a load", engines=("vllm",))
def _engine_default_vllm(ctx: Context):
    for i, r in ctx.role_items():
        if r.engine_default:
            yield Hit(role_path(i, "sizing", "concurrency"),
                      f"role {r.name!r}: engine-default leaves --max-num-seqs to vLLM, but "
                      "moegen sizes the KV cache, graphs and the prediction for one sequence "
                      "of maxModelLen per instance (it models only SGLang's default admission)",
                      "set sizing.concurrency to the sequences one instance must hold")


@rule("SRV005", E, "spec.traffic's requests fit every role's maxModelLen",
      "the engines refuse longer requests (vLLM 0.33.0 vllm/config/model.py max_model_len; "
      "SGLang --context-length, SGLang 0.5.23 python/sglang/srt/configs/model_config.py); "
      "docs/spec.md §4 (traffic)")
def _traffic_fits(ctx: Context):
    traffic = ctx.spec.spec.traffic
    if traffic is None:
        return
    short = []
    for i, r in ctx.role_items():
        need = traffic.inputTokens + (traffic.outputTokens if r.mode != "prefill" else 0)
        z = ctx.sizing[i] if i < len(ctx.sizing) else None
        limit = z.max_model_len if isinstance(z, RoleSizing) else r.serving.maxModelLen
        if limit and need > limit:
            short.append((r.name, limit, need))
    if short:
        name, limit, need = max(short, key=lambda x: x[2] - x[1])
        yield Hit(("spec", "traffic"),
                  f"spec.traffic's requests ({need:,} tokens) are longer than the maxModelLen "
                  f"{limit:,} of role {name!r}: the engine refuses them, so they cannot be timed",
                  f"serving.maxModelLen >= {need:,}, or shorter traffic")


@rule("SRV006", E, "monitoring settings apply only with monitoring.enabled",
      "docs/spec.md §6.2: the dashboard and KEDA read the PodMonitor's series (prometheus-operator "
      "podTargetLabels)")
def _monitoring_enabled(ctx: Context):
    mon = ctx.spec.spec.monitoring
    if mon is None or mon.enabled:
        return
    if mon.dashboard:
        yield Hit(("spec", "monitoring", "dashboard"),
                  "dashboard: true without enabled: true renders no dashboard (its panels read "
                  "the series the PodMonitor scrapes)", "set monitoring.enabled: true")


@rule("SRV008", W, "vLLM's maxNumSeqs is per data-parallel rank",
      "vLLM 0.33.0 vllm/config/scheduler.py SchedulerConfig.max_num_seqs (per engine); each DP "
      "rank runs its own engine core and scheduler (vllm/v1/engine/core.py DPEngineCoreProc)",
      engines=("vllm",))
def _seqs_per_rank(ctx: Context):
    for i, r in ctx.role_items():
        cap, data = r.serving.maxNumSeqs, r.layout.data
        if cap is None or data < 2 or r.admission is None or cap < r.admission:
            continue
        yield Hit(serving_path(ctx, i, "maxNumSeqs"),
                  f"role {r.name!r}: maxNumSeqs {cap} applies to each of its {data} DP ranks: "
                  f"up to {cap * data:,} sequences per instance, where sizing.concurrency sizes "
                  f"the KV cache for {r.admission}",
                  f"drop maxNumSeqs (moegen renders --max-num-seqs "
                  f"{-(-r.admission // data)} from sizing.concurrency), or set the per-rank value")


#: Scrape intervals the rate windows can use, s: two samples in generator/manifests/
#: monitoring.py RATE_WINDOW (5 minutes) need at most 150 s; Prometheus scrapes no faster than 1 s.
SCRAPE_RANGE_S = (1, 150)
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60}


@rule("SRV007", E, "the scrape interval leaves two samples in the 5-minute rate windows",
      "Prometheus rate() needs two samples in its window "
      "(https://prometheus.io/docs/prometheus/latest/querying/functions/#rate); moegen's alerts "
      "and dashboard use 5-minute windows (generator/manifests/monitoring.py RATE_WINDOW)")
def _interval(ctx: Context):
    mon = ctx.spec.spec.monitoring
    if mon is None:
        return
    m = re.fullmatch(r"([0-9]+)(ms|s|m)", mon.interval)   # the schema's pattern
    seconds = int(m.group(1)) * _UNIT_S[m.group(2)]
    low, high = SCRAPE_RANGE_S
    if not low <= seconds <= high:
        yield Hit(("spec", "monitoring", "interval"),
                  f"scrape interval {mon.interval} is "
                  f"{f'below {low} s' if seconds < low else f'above {high} s'}: the 5-minute "
                  "rate windows of the alerts and dashboard need two samples",
                  f"e.g. interval: 15s ({low}s to {high}s)")


#: The release's flag for each way of offloading weights (docs/spec.md §2
#: ``serving.weightOffload``).
OFFLOAD_FLAGS = {"groupSize": "--offload-group-size", "cpuGiB": "--cpu-offload-gb"}


@rule("SRV009", E, "weight offloading names one way to offload and the release has its flags",
      "vllm-project/vllm@v0.17.0:vllm/config/offload.py OffloadConfig (cpu_offload_gb; "
      "offload_group_size / offload_num_in_group <= group size / offload_prefetch_step; the "
      "flags from 0.17.0: generator/engines/data/engine-options.json); "
      "sgl-project/sglang@v0.5.23:python/sglang/srt/server_args.py (--cpu-offload-gb, "
      "--offload-group-size, --offload-num-in-group, --offload-prefetch-step)")
def _weight_offload(ctx: Context):
    for i, r in ctx.role_items():
        wo = r.serving.weightOffload
        if wo is None:
            continue
        path = serving_path(ctx, i, "weightOffload")
        if wo.groupSize is None and wo.cpuGiB is None:
            yield Hit(path, f"role {r.name!r}: weightOffload offloads nothing",
                      "give groupSize (group offloading with prefetch) or cpuGiB (UVA)")
            continue
        if wo.groupSize is not None and wo.numInGroup > wo.groupSize:
            yield Hit(path, f"role {r.name!r}: weightOffload.numInGroup {wo.numInGroup} exceeds "
                      f"groupSize {wo.groupSize}: the engine refuses to start",
                      f"use numInGroup <= {wo.groupSize}")
        for field, flag in OFFLOAD_FLAGS.items():
            if getattr(wo, field) is not None and ctx.dialect is not None \
                    and not ctx.dialect.has(flag):
                yield Hit(path, f"role {r.name!r}: {ctx.engine} {ctx.dialect.version} has no "
                          f"{flag} (weightOffload.{field})",
                          "use a release that has it (vLLM >= 0.17.0 for group offloading)")


@rule("SRV060", E, "VLLM_ENGINE_READY_TIMEOUT_S covers the role's cold start",
      "vllm-project/vllm@v0.33.0:vllm/v1/engine/core_client.py: the API servers wait "
      "VLLM_ENGINE_READY_TIMEOUT_S (vllm-project/vllm@v0.33.0:vllm/envs.py:26, default 600) for "
      "the engine cores' READY, then exit (vllm-project/vllm PR#27444, vllm-project/vllm#32116, "
      "vllm-project/vllm PR#35616); the startup budget: generator/sizing/host.py",
      engines=("vllm",))
def _ready_timeout(ctx: Context):
    for i, r in ctx.role_items():
        h = ctx.host[i] if i < len(ctx.host) else None
        found = role_env(ctx, i, "VLLM_ENGINE_READY_TIMEOUT_S")
        if h is None or found is None or found[1] >= h.startup_s:
            continue
        path, value = found
        yield Hit(path,
                  f"role {r.name!r}: VLLM_ENGINE_READY_TIMEOUT_S={value} is shorter than the "
                  f"role's predicted cold start of {h.startup_s} s (its checkpoint share "
                  f"{max(p.checkpoint_gib for p in h.pods):.0f} GiB at {h.load_gbps:g} GB/s = "
                  f"{h.load_s} s, JIT warm-up and rendezvous): the API server gives up while the "
                  "engine still loads, and the pod restarts into the same load",
                  f"drop the variable (moegen sets it to the startup budget, {h.startup_s} s) "
                  "or raise it; a faster volume lowers the budget (model.loadGBps)")


@rule("SRV061", E, "the engines keep idle connections longer than the proxy in front pools them",
      "uvicorn closes idle keep-alive connections after VLLM_HTTP_TIMEOUT_KEEP_ALIVE "
      "(vllm-project/vllm@v0.33.0:vllm/envs.py:110) / SGLANG_TIMEOUT_KEEP_ALIVE "
      "(sgl-project/sglang@v0.5.23:python/sglang/srt/environ.py:337), 5 s; a pooled client that "
      "reuses a connection the engine closed resets the request (llm-d/llm-d PR#1564, "
      "smg-project/smg PR#2162); the pools: generator/engines/routers.py, "
      "generator/engines/gateway.py")
def _keepalive(ctx: Context):
    name = KEEPALIVE_ENV[ctx.engine]
    for i, r in ctx.role_items():
        idle = front_idle_s(ctx.spec, r.mode)
        found = role_env(ctx, i, name)
        if idle is None or found is None or found[1] > idle:
            continue
        path, value = found
        yield Hit(path,
                  f"role {r.name!r}: {name}={value} s, but the proxy in front of it keeps idle "
                  f"connections pooled for {idle} s: it sends requests on connections the "
                  "engine has closed, which fail with a reset",
                  f"drop the variable (moegen sets {keepalive_s(idle)}) or set it above {idle}")
