"""Rules about prefill/decode pairs: connectors, KV layout, context, speculative config, router."""

from __future__ import annotations

from ..catalog import GPUS
from ..durations import SGLANG_KV_TIMEOUT_ENV
from ..engines import sglang, vllm
from ..engines.options import option_flags, option_value, release_options
from ..engines.routers import GATEWAY_KIND, ROUTER_METRICS_PORT, rendered_router, router_kind
from ..roles import max_len as role_max_len
from .registry import (
    Context,
    E,
    Hit,
    W,
    is_vllm,
    pd_pairs,
    role_env,
    role_path,
    role_sets,
    rule,
    serving_path,
)


@rule("PD001", E, "a PD deployment has both prefill and decode roles",
      "vLLM disaggregated prefill: a producer and a consumer (vLLM 0.33.0 "
      "vllm/config/kv_transfer.py)")
def _pd_pairs(ctx: Context):
    modes = [r.mode for r in ctx.spec.spec.roles]
    for want, have in (("decode", "prefill"), ("prefill", "decode")):
        if have in modes and want not in modes:
            i = modes.index(have)
            yield Hit(role_path(i, "mode"), f"a {have} role needs a {want} role",
                      f"add a role with mode: {want}, or use mode: unified")


@rule("PD002", E, "prefill and decode roles have a KV connector",
      "vLLM 0.33.0 vllm/config/kv_transfer.py; kserve/kserve#5987, ai-dynamo/dynamo#6554 (a P/D "
      "pair without connectors recomputes every prompt)")
def _pd_connector(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode in ("prefill", "decode") and role.kvTransfer is None:
            yield Hit(role_path(i, "kvTransfer"),
                      f"{role.mode} role {role.name!r} has no kvTransfer: decode would recompute "
                      "every prompt", "set kvTransfer: {connector: nixl} on prefill and decode")


@rule("PD003", E, "prefill and decode use the same KV connector",
      "vLLM connectors pair by type (vLLM 0.33.0 "
      "vllm/distributed/kv_transfer/kv_connector/factory.py)")
def _pd_same(ctx: Context):
    seen: dict[str, tuple[int, str]] = {}
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode in ("prefill", "decode") and role.kvTransfer is not None:
            conn = role.kvTransfer.connector
            first = next(iter(seen.values()), None)
            if first is not None and first[1] != conn:
                yield Hit(role_path(i, "kvTransfer", "connector"),
                          f"connector {conn!r} differs from {first[1]!r} of roles[{first[0]}]",
                          "use one connector on every prefill and decode role")
            seen.setdefault(role.name, (i, conn))


@rule("PD004", E, "the KV connector exists in the engine version",
      "vLLM registered connectors per release (vLLM 0.33.0 "
      "vllm/distributed/kv_transfer/kv_connector/factory.py; MooncakeConnector from 0.13.0); "
      "SGLang --disaggregation-transfer-backend (SGLang 0.5.23 python/sglang/srt/server_args.py: "
      "mooncake, nixl)")
def _connector_version(ctx: Context):
    if ctx.dialect is None:
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.kvTransfer is None or role.kvTransfer.connector in ctx.dialect.connectors:
            continue
        yield Hit(role_path(i, "kvTransfer", "connector"),
                  f"connector {role.kvTransfer.connector!r} is not available in "
                  f"{ctx.dialect.label} {ctx.spec.spec.engine.version} "
                  f"(dialect {ctx.dialect.version})",
                  f"use one of: {', '.join(ctx.dialect.connectors)}"
                  + (" (MooncakeConnector needs vLLM >= 0.13.0)" if is_vllm(ctx) else ""))


@rule("PD005", E, "a unified role takes only a KV-offloading connector",
      "vLLM 0.33.0 vllm/config/kv_transfer.py: NIXL/Mooncake pair a kv_producer with a "
      "kv_consumer; LMCache offloads KV (kv_both)")
def _unified_connector(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode == "unified" and role.kvTransfer and role.kvTransfer.connector != "lmcache":
            yield Hit(role_path(i, "kvTransfer", "connector"),
                      f"connector {role.kvTransfer.connector!r} on a unified role has no peer",
                      "remove kvTransfer, use lmcache, or split into prefill and decode roles")


@rule("PD006", E, "the PD router supports the KV connector",
      "vllm-router 0.1.17 --kv-connector choices nixl, mooncake, moriio (vllm-project/router "
      "py_src/vllm_router/router_args.py (0.1.17)); smg pairs by bootstrap port; the llm-d "
      "routing sidecar's lmcache protocol is deprecated (generator/engines/gateway.py)")
def _router_connector(ctx: Context):
    r = ctx.spec.spec.router
    if not r.enabled:
        return
    kind = router_kind(ctx.engine, r.kind)
    who = {"vllm-router": "the vLLM PD router (vllm-router)", "smg": "SGLang's PD router (smg)",
           GATEWAY_KIND: "the inference gateway (llm-d routing sidecar)"}[kind]
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode == "prefill" and role.kvTransfer and role.kvTransfer.connector == "lmcache":
            yield Hit(role_path(i, "kvTransfer", "connector"),
                      f"{who} cannot route LMCache prefill/decode pairs",
                      "use nixl or mooncake, or set router.enabled: false and bring your own proxy")


@rule("PD007", E, "decode accepts every context prefill accepts",
      "a request prefilled at maxModelLen L must fit the decode engine's max_model_len: both "
      "engines reject longer requests at decode (vLLM 0.33.0 vllm/v1/engine/input_processor.py, "
      "SGLang 0.5.23 python/sglang/srt/managers/tokenizer_manager.py)")
def _pd_len(ctx: Context):
    for _, p, j, d in pd_pairs(ctx):
        lp = role_max_len(p, ctx.engine)
        ld = role_max_len(d, ctx.engine)
        if ld < lp:
            yield Hit(serving_path(ctx, j, "maxModelLen"),
                      f"decode role {d.name!r} has maxModelLen {ld} but prefill role {p.name!r} "
                      f"accepts {lp}", f"set maxModelLen {lp} on both")


@rule("PD008", E, "prefill and decode use the same KV-cache dtype",
      "KV blocks move as bytes between engines: vLLM hashes cache_dtype into the NIXL handshake "
      "(vllm-project/vllm@v0.33.0:vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py); "
      "SGLang's transfer copies pages of the pool's dtype")
def _pd_dtype(ctx: Context):
    for i, p, j, d in pd_pairs(ctx):
        if p.serving.kvCacheDtype != d.serving.kvCacheDtype:
            yield Hit(role_path(j, "serving", "kvCacheDtype") if role_sets(ctx, j, "kvCacheDtype")
                      else role_path(i, "serving", "kvCacheDtype"),
                      f"prefill {p.name!r} caches KV as {p.serving.kvCacheDtype} but decode "
                      f"{d.name!r} as {d.serving.kvCacheDtype}",
                      "use one kvCacheDtype on prefill and decode")


@rule("PD010", E, "prefill and decode GPUs pick the same attention backend",
      "vLLM hashes attn_backend_name into the NIXL handshake "
      "(vllm-project/vllm@v0.33.0:vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py:146 "
      "compute_nixl_compatibility_hash); MLA backends differ by GPU generation "
      "(vllm-project/vllm@v0.33.0:vllm/platforms/cuda.py _get_backend_priorities: FLASHMLA on "
      "sm90, FLASHINFER_MLA on sm100), and with them the KV page layout")
def _pd_generation(ctx: Context):
    pools = ctx.spec.spec.nodePools
    for i, p, j, d in pd_pairs(ctx):
        gp = GPUS[pools[ctx.spec.spec.roles[i].nodePool].gpu]
        gd = GPUS[pools[ctx.spec.spec.roles[j].nodePool].gpu]
        if gp.generation != gd.generation:
            yield Hit(role_path(j, "nodePool"),
                      f"prefill role {p.name!r} runs on {gp.id} ({gp.generation}) and decode role "
                      f"{d.name!r} on {gd.id} ({gd.generation}): their MLA attention backends and "
                      "KV layouts differ, so the KV transfer handshake fails",
                      "put prefill and decode on GPUs of one generation")


@rule("PD011", E, "Mooncake KV transfer has RDMA NICs",
      "both engines default the Mooncake protocol to rdma (vLLM 0.33.0 "
      "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py "
      "mooncake_protocol \"rdma\"; SGLang 0.5.23 "
      "python/sglang/srt/distributed/device_communicators/mooncake_transfer_engine.py); "
      "kvcache-ai/Mooncake#1382")
def _mooncake_rdma(ctx: Context):
    if ctx.spec.spec.network.rdma is not None:
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.kvTransfer is not None and role.kvTransfer.connector == "mooncake":
            yield Hit(role_path(i, "kvTransfer", "connector"),
                      f"role {role.name!r} transfers KV with Mooncake over RDMA but network.rdma "
                      "is unset: the pods have no RDMA NIC",
                      "declare network.rdma (resourceName, devices), or use connector: nixl (UCX "
                      "falls back to TCP)")


@rule("PD009", E, "the router's port differs from its metrics port",
      "generator/engines/routers.py: --port and --prometheus-port 29000 on one container")
def _router_ports(ctx: Context):
    r = ctx.spec.spec.router
    if rendered_router(ctx.spec.spec) == "deployment" and r.port == ROUTER_METRICS_PORT:
        yield Hit(("spec", "router", "port"),
                  f"router.port {r.port} is the router's metrics port", "choose another port")


#: What vLLM's NIXL compatibility hash takes from the speculative config (>= 0.28.0; 0.33.0
#: vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py:103-143
#: _get_speculative_compatibility_factors): method, draft model and revision, parallel drafting,
#: the draft's KV dtype and auxiliary layers; nothing when there is no EAGLE/MTP config. Not
#: num_speculative_tokens. Of moegen's speculative fields only ``method`` and presence reach it.
NIXL_SPECULATIVE_FACTORS = ("method",)


def _hashed(sp) -> tuple | None:
    """The part of a role's speculative block vLLM's NIXL handshake compares (None: no MTP)."""
    return None if sp is None else tuple(getattr(sp, f) for f in NIXL_SPECULATIVE_FACTORS)


def _decode_speculative(ctx: Context):
    """The one speculative config of the decode roles, and the first decode role; None when there
    is no decode role or they disagree (SPD004)."""
    decodes = [r for r in ctx.spec.spec.roles if r.mode == "decode"]
    if not decodes or len({d.speculative for d in decodes}) != 1:
        return None
    return decodes[0].speculative, decodes[0]


@rule("SPD003", E, "prefill runs the decode roles' speculative config",
      "vLLM >= 0.28.0 hashes the EAGLE/MTP method (not the token count) into the NIXL handshake "
      "(vllm-project/vllm@v0.33.0:vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py:103-143 "
      "_get_speculative_compatibility_factors); SGLang decode needs the draft hidden states a "
      "speculating prefill sends (SGLang 0.5.23 python/sglang/srt/disaggregation/prefill.py)")
def _spec_prefill_matches(ctx: Context):
    decoded = _decode_speculative(ctx)
    if decoded is None:
        return
    want, first = decoded
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode != "prefill" or role.speculative is None or role.speculative == want:
            continue
        if is_vllm(ctx) and _hashed(role.speculative) == _hashed(want):
            continue   # only numSpeculativeTokens differs: SPD030
        theirs = (f"{want.method} with {want.numSpeculativeTokens} token(s)" if want
                  else "no speculative decoding")
        if not is_vllm(ctx):
            why = "decode cannot use what prefill sends"
        elif ctx.dialect is not None and ctx.dialect.nixl_hash_covers_speculative:
            why = ("the NIXL handshake hashes the speculative method of both sides and refuses "
                   "the pair")
        else:
            why = "prefill computes KV for a draft layer decode does not run, or none for one it does"
        yield Hit(role_path(i, "speculative"),
                  f"prefill role {role.name!r} speculates with {role.speculative.method} and "
                  f"{role.speculative.numSpeculativeTokens} token(s) but decode role "
                  f"{first.name!r} runs {theirs}: {why}",
                  "remove speculative from the prefill role: it carries the decode role's config "
                  "automatically")


@rule("SPD030", W, "a vLLM prefill role's own numSpeculativeTokens is not what decode runs",
      "vLLM 0.33.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py:103-143 (the "
      "NIXL hash takes the speculative method, draft model, parallel drafting and KV dtype, not "
      "num_speculative_tokens): the pair connects and decode drafts with its own count",
      engines=("vllm",))
def _spec_prefill_tokens(ctx: Context):
    decoded = _decode_speculative(ctx)
    if decoded is None:
        return
    want, first = decoded
    for i, role in enumerate(ctx.spec.spec.roles):
        sp = role.speculative
        if role.mode != "prefill" or sp is None or want is None or sp == want \
                or _hashed(sp) != _hashed(want):
            continue
        yield Hit(role_path(i, "speculative", "numSpeculativeTokens"),
                  f"prefill role {role.name!r} drafts {sp.numSpeculativeTokens} token(s), decode "
                  f"role {first.name!r} {want.numSpeculativeTokens}: vLLM's NIXL handshake does "
                  "not compare the count, so the pair connects and decode drafts with its own "
                  f"{want.numSpeculativeTokens}; the prefill setting only misleads",
                  "remove speculative from the prefill role: it carries the decode role's config "
                  "automatically")


@rule("SPD004", E, "decode roles of a PD deployment share one speculative config",
      "any prefill instance hands requests to any decode instance, and prefill runs exactly one "
      "speculative config "
      "(vllm-project/vllm@v0.33.0:vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py, "
      "as SPD003; generator/pipeline.py carried_speculative)")
def _spec_decodes_agree(ctx: Context):
    roles = ctx.spec.spec.roles
    decodes = [(i, r) for i, r in enumerate(roles) if r.mode == "decode"]
    if not any(r.mode == "prefill" for r in roles) or len({r.speculative for _, r in decodes}) < 2:
        return
    first_i, first = decodes[0]
    for i, role in decodes[1:]:
        if role.speculative != first.speculative:
            yield Hit(role_path(i, "speculative"),
                      f"decode role {role.name!r} speculates differently from decode role "
                      f"{first.name!r} (roles[{first_i}])",
                      "give every decode role the same speculative block")


#: Per engine, the options that shape a request (engines/vllm.py, engines/sglang.py
#: REQUEST_SHAPING, with their sources).
REQUEST_SHAPING = {"vllm": vllm.REQUEST_SHAPING, "sglang": sglang.REQUEST_SHAPING}


def _shaping_args(ctx: Context, args: list[str]) -> dict[str, str]:
    """The request-shaping options of an engineArgs list: canonical name -> the option as
    written, with its value (``--tool-call-parser deepseek_v3``; a negation stays itself)."""
    opts = release_options(ctx.engine, ctx.dialect.version) if ctx.dialect else None
    wanted = {(opts.canonical(f) if opts else None) or f for f in REQUEST_SHAPING[ctx.engine]}
    out = {}
    for j, a in option_flags(args):
        written = a.partition("=")[0]
        name = (opts.canonical(a) if opts else None) or written
        if name in wanted:
            value = option_value(args, j)
            out[name] = written if value is None else f"{written} {value}"
    return out


@rule("PD090", E, "options that shape a request are the same on prefill and decode",
      "each leg of a PD pair renders, validates and tokenizes the request itself: vLLM answers a "
      "tools request with 400 at prefill without --enable-auto-tool-choice/--tool-call-parser "
      "(vllm-project/vllm@v0.33.0:vllm/renderers/online_renderer.py) and both engines make the "
      "prompt's tokens from the chat template and tool parser (sgl-project/sglang@v0.5.23:"
      "python/sglang/srt/entrypoints/openai/serving_chat.py); generator/engines/vllm.py "
      "REQUEST_SHAPING")
def _request_shaping_on_both_legs(ctx: Context):
    roles = ctx.spec.spec.roles
    for i, _, j, _ in pd_pairs(ctx):
        pre, dec = _shaping_args(ctx, roles[i].engineArgs), _shaping_args(ctx, roles[j].engineArgs)
        for name in sorted(set(pre) | set(dec)):
            if pre.get(name) == dec.get(name):
                continue
            shown = (dec.get(name) or pre[name]).split(" ")[0]
            k = j if name in dec else i
            yield Hit(role_path(k, "engineArgs"),
                      f"{shown} differs between prefill role {roles[i].name!r} "
                      f"({pre.get(name, 'unset')}) and decode role {roles[j].name!r} "
                      f"({dec.get(name, 'unset')}): each leg renders and validates the request "
                      "itself, so a request the one accepts the other refuses, or tokenizes "
                      "differently from the KV it hands over",
                      f"give both roles the same {shown} in engineArgs")


@rule("PD060", E, "SGLang decode waits for KV longer than the longest prefill takes",
      "sgl-project/sglang@v0.5.23:python/sglang/srt/disaggregation/common/conn.py:2888-2900 "
      "(_check_waiting_timeout): decode aborts a request whose transfer has not finished "
      "SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s, sgl-project/sglang@v0.5.23:"
      "python/sglang/srt/environ.py:763) after bootstrapping, a span holding prefill's compute "
      "(sgl-project/sglang PR#7846); the longest prefill: generator/durations.py",
      engines=("sglang",))
def _kv_timeouts(ctx: Context):
    # The longest prefill is predicted (the perf model) only for a decode role that sets the
    # wait: every other spec is judged without loading the model.
    waits = [(r, found) for i, r in ctx.role_items()
             if r.mode == "decode" and (found := role_env(ctx, i, SGLANG_KV_TIMEOUT_ENV))]
    longest = ctx.durations.longest_prefill_s if waits else None
    if longest is None:
        return
    for r, (path, value) in waits:
        if value >= longest:
            continue
        yield Hit(path,
                  f"decode role {r.name!r}: {SGLANG_KV_TIMEOUT_ENV}={value} s, but one prompt of "
                  f"maxModelLen {role_max_len(r, ctx.engine)} tokens "
                  f"takes {longest:.0f} s to prefill and transfer (predicted): decode aborts "
                  "every such request",
                  f"drop the variable (moegen sets {ctx.durations.kv_wait_s} s) or raise it above "
                  f"{longest:.0f}")


@rule("PD061", W, "a scaled-down prefill does not fail the requests decode still loads",
      "kv_load_failure_policy arrived in vLLM 0.13.0 (vllm-project/vllm PR#26813; "
      "vllm-project/vllm@v0.33.0:vllm/config/kv_transfer.py:88): before it a decode whose "
      "prefill instance goes away (KEDA scale-down: llm-d/llm-d PR#1138) fails the requests "
      "whose KV it had not pulled; generator/lifecycle.py", engines=("vllm",))
def _scaled_prefill(ctx: Context):
    if ctx.dialect is None or getattr(ctx.dialect, "kv_load_failure_policy", True):
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode == "prefill" and role.autoscaling is not None:
            yield Hit(role_path(i, "autoscaling"),
                      f"prefill role {role.name!r} autoscales on vLLM "
                      f"{ctx.spec.spec.engine.version}, whose decode cannot recompute a lost "
                      "prefill: each scale-down fails the in-flight requests whose KV decode has "
                      "not pulled yet",
                      "use vLLM >= 0.13.0 (moegen then renders kv_load_failure_policy: recompute "
                      "on decode), or drop autoscaling from the prefill role")


@rule("PD062", E, "SGLang decode refuses what prefill refuses",
      "smg sends a request to prefill and decode at once and answers with decode's response "
      "(lightseekorg/smg@v1.9.0:model_gateway/src/routers/http/pd_router.rs "
      "execute_dual_dispatch_internal; sgl-project/sglang#9726): a prompt longer than "
      "prefill's context length is refused by prefill, while a decode with a longer one "
      "pre-allocates and waits for KV until SGLANG_DISAGGREGATION_WAITING_TIMEOUT "
      "(SemiAnalysisAI/InferenceX PR#2293)",
      engines=("sglang",))
def _sglang_len(ctx: Context):
    for _, p, j, d in pd_pairs(ctx):
        lp = role_max_len(p, ctx.engine)
        ld = role_max_len(d, ctx.engine)
        if ld > lp:
            yield Hit(serving_path(ctx, j, "maxModelLen"),
                      f"decode role {d.name!r} accepts {ld} tokens but prefill role {p.name!r} "
                      f"only {lp}: a longer prompt is refused by prefill and hangs on decode "
                      f"until its KV wait times out ({ctx.durations.kv_wait_s} s)",
                      f"give both maxModelLen {lp}")


@rule("PD030", E, "vLLM's NIXL transfer supports the prefill/decode tensor sizes",
      "vLLM 0.11.0-0.13.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py (0.11.0:968 "
      "and 0.13.0:1577 assert \"Decode TP cannot be smaller than prefill TP\"; 0.11.1/0.12.0 "
      "kv_topo.tp_ratio asserts divisibility, :726-730); P TP > D TP from 0.14.0 (vllm-project/vllm#27274, "
      "vllm-project/vllm#43523)", engines=("vllm",))
def _nixl_tp_ratio(ctx: Context):
    if ctx.dialect is None or getattr(ctx.dialect, "nixl_smaller_decode_tp", True):
        return
    for i, p, j, d in pd_pairs(ctx):
        if not (p.kv_transfer and d.kv_transfer and p.kv_transfer.connector == "nixl"
                and d.kv_transfer.connector == "nixl"):
            continue
        if d.layout.tensor < p.layout.tensor or d.layout.tensor % p.layout.tensor:
            yield Hit(role_path(j, "parallel", "tensor"),
                      f"decode role {d.name!r} runs tensor {d.layout.tensor} per engine, prefill "
                      f"role {p.name!r} tensor {p.layout.tensor}: vLLM "
                      f"{ctx.spec.spec.engine.version}'s NIXL handshake needs the decode tensor "
                      "size to be a multiple of prefill's (\"Decode TP cannot be smaller than "
                      "prefill TP\"); every KV transfer fails",
                      "use vLLM 0.14.0 or later, or give decode a tensor size that is a multiple "
                      f"of {p.layout.tensor} (data-parallel decode ranks count 1 each)")
