"""How long things take in one deployment, and every timeout pair derived from that one model.

Components in front of, beside and behind the engines each bound a duration with a timeout, a
retry or a health check: a probe bounds the cold start, a router bounds a request, the KV
transfer bounds how long prefill holds a request for decode, the kubelet bounds a drain, a
pooled HTTP client bounds how long it reuses an idle connection. Each pair fails when one side
is set from a different guess than the other (docs/design.md §9). moegen sets both sides from
one model of the deployment's predicted durations:

* **cold start** (``startup_s``): sizing/host.py's startup budget (checkpoint share at the
  volume's read bandwidth + JIT warm-up + rendezvous), per role;
* **longest prefill** (``longest_prefill_s``): one prompt of maxModelLen tokens on the slowest
  prefill instance (prefill roles in PD, else unified), plus its KV transfer to decode;
* **longest request** (``longest_request_s``): that prefill, then maxModelLen output tokens at
  the worst decode step of a decoding role: its admitted batch per DP rank with every sequence at
  half of maxModelLen (the mean context of a sequence growing to maxModelLen), one token per step
  (no draft accepted);
* **mean request** (``mean_request_s``, with ``spec.traffic``): the mean prompt's prefill, then
  the mean output at the step of the mean context, with the stated draft acceptance; never
  below the deployment's prediction at its sized load (perf/predict.py: TTFT with the wait for
  prefill + outputTokens x TPOT), which the engines' and the routers' drain must outlive.

The prefill and decode times are the planner's physical model (generator/perf/terms.py:
``prefill``, ``decode_step``), on the role's own layout, GPU and memory plan. Every derived
timeout is that prediction x :data:`MARGIN`, never below the component's own default:

==========================================  ================================================
pair                                        value (owner: moegen renders / checks a user's)
==========================================  ================================================
startup probe, VLLM_ENGINE_READY_TIMEOUT_S,  ``startup_s`` (rendered: manifests/pods.py,
router --worker-startup-timeout-secs, KEDA  engines/vllm.py, engines/routers.py,
scale-up period                             manifests/scaling.py; a lower user value: SRV060)
router --request-timeout-secs (vllm-router  ``request_timeout_s`` = max(1800, margin x
0.1.17, smg 1.13: default 1800)              longest request), rounded up to a minute
HTTPRoute timeouts.request (inference        ``request_timeout_s``
gateway)
SGLANG_DISAGGREGATION_WAITING_TIMEOUT        ``kv_wait_s`` = max(300, margin x longest
(decode)                                     prefill); a lower user value: PD060
vLLM --shutdown-timeout, pod                 ``drain_s`` = max(60, margin x mean request),
terminationGracePeriodSeconds                at most :data:`MAX_DRAIN_S`
engine HTTP keep-alive (VLLM_HTTP_TIMEOUT_   the idle time of the pooled client in front +
KEEP_ALIVE, SGLANG_TIMEOUT_KEEP_ALIVE)       :data:`KEEPALIVE_MARGIN_S` (SRV061)
==========================================  ================================================

A role without a memory plan (the sizing could not run) contributes nothing; a duration nobody
could predict is ``None`` and its consumers keep the component's default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .catalog import GPUS
from .roles import max_len as role_max_len
from .spec.bandwidth import of_deployment

#: Safety factor on every predicted duration a timeout is derived from: the performance model
#: is calibrated within 10-20 % of published figures (tests/test_planner.py), and a request's
#: real duration varies with load beyond that.
MARGIN = 1.5
#: Router request timeouts: vllm-router 0.1.17 and smg 1.13.0 both default
#: ``--request-timeout-secs`` to 1800 (vllm-project/router py_src/vllm_router/router_args.py
#: ``request_timeout_secs``; lightseekorg/smg py_src/smg/router_args.py); moegen never renders
#: less.
ROUTER_REQUEST_TIMEOUT_DEFAULT_S = 1800
#: SGLang's decode-side KV wait: SGLANG_DISAGGREGATION_WAITING_TIMEOUT, EnvInt(300) (sglang
#: 0.5.23 python/sglang/srt/environ.py): decode aborts a request whose transfer has not finished
#: that long after it sent prefill its KV indices (disaggregation/common/conn.py
#: ``_check_waiting_timeout``), which spans prefill's queue, its compute and the transfer. Its
#: prefill-side sibling SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT times decode's admission (the
#: wait for KV room on decode), which no duration of the model bounds: left at SGLang's default.
SGLANG_KV_TIMEOUT_DEFAULT_S = 300
#: Graceful drain bounds, s: the floor is moegen's long-standing drain (generator/pods.py
#: DRAIN_S); the ceiling keeps a rollout of many groups finite (each group waits for it).
MIN_DRAIN_S, MAX_DRAIN_S = 60, 900
#: Seconds an engine's HTTP keep-alive outlasts the idle time of the pooled client in front, so
#: the client always closes an idle connection first (llm-d/llm-d PR#1564: 120 s behind the
#: routing sidecar's 90 s).
KEEPALIVE_MARGIN_S = 30
#: The engines' own HTTP keep-alive, s: vLLM VLLM_HTTP_TIMEOUT_KEEP_ALIVE = 5 (vllm 0.33.0
#: vllm/envs.py), SGLang SGLANG_TIMEOUT_KEEP_ALIVE = EnvInt(5) (sglang 0.5.23
#: python/sglang/srt/environ.py, passed to uvicorn in entrypoints/http_server.py).
ENGINE_KEEPALIVE_DEFAULT_S = 5
KEEPALIVE_ENV = {"vllm": "VLLM_HTTP_TIMEOUT_KEEP_ALIVE", "sglang": "SGLANG_TIMEOUT_KEEP_ALIVE"}
SGLANG_KV_TIMEOUT_ENV = "SGLANG_DISAGGREGATION_WAITING_TIMEOUT"


@dataclass(frozen=True)
class RoleTimes:
    """Predicted durations of one role, s (``None``: not predicted for this role).

    Attributes:
        name, mode: the role.
        max_len: its maxModelLen, tokens.
        startup_s: its cold-start budget (sizing/host.py).
        prefill_s: one maxModelLen prompt on one instance (prefill and unified roles).
        transfer_s: that prompt's KV moved to decode over the network (prefill roles in PD).
        step_s: the worst decode step (decoding roles): admitted batch per rank at half of
            maxModelLen, one token per step.
        mean_s: a mean request of ``spec.traffic`` through this role (its prefill, or its
            decode of the mean output), or None without traffic.
    """

    name: str
    mode: str
    max_len: int
    startup_s: int | None = None
    prefill_s: float | None = None
    transfer_s: float | None = None
    step_s: float | None = None
    mean_s: float | None = None


@dataclass(frozen=True)
class Durations:
    """The deployment's predicted durations and the timeouts derived from them (module
    docstring). Seconds; ``None``: not predicted (consumers keep the component's default)."""

    roles: tuple[RoleTimes, ...] = ()
    startup_s: int | None = None
    longest_prefill_s: float | None = None
    longest_request_s: float | None = None
    mean_request_s: float | None = None
    #: Derived: router --request-timeout-secs and the HTTPRoute request timeout.
    request_timeout_s: int = ROUTER_REQUEST_TIMEOUT_DEFAULT_S
    #: Derived: SGLang decode's KV wait (SGLANG_DISAGGREGATION_WAITING_TIMEOUT).
    kv_wait_s: int = SGLANG_KV_TIMEOUT_DEFAULT_S
    #: Derived: the engines' graceful drain after SIGTERM.
    drain_s: int = MIN_DRAIN_S
    notes: list[str] = field(default_factory=list)

    def role(self, name: str) -> RoleTimes | None:
        """The predictions of role ``name``, or None."""
        return next((r for r in self.roles if r.name == name), None)


def keepalive_s(front_idle_s: int | None) -> int | None:
    """The engine HTTP keep-alive to render behind a pooled client that reuses an idle
    connection for ``front_idle_s`` seconds: that + :data:`KEEPALIVE_MARGIN_S`, or None when the
    client closes idle connections before the engines' default does (or there is none)."""
    if front_idle_s is None or front_idle_s < ENGINE_KEEPALIVE_DEFAULT_S:
        return None
    return front_idle_s + KEEPALIVE_MARGIN_S


def _ceil_minute(seconds: float) -> int:
    return int(math.ceil(seconds / 60.0)) * 60


def deployment_durations(spec, roles, sizing, host, prediction=None) -> Durations:
    """The durations of a checked spec (``spec``: the InferenceDeployment; ``roles``,
    ``sizing``, ``host``: per role of the spec, its RoleInput, memory plan and HostPlan, each
    possibly None or, for sizing, a reason string). Never raises for a role it cannot time: that
    role is left out."""
    from .sizing import RoleSizing
    times: list[RoleTimes] = []
    notes: list[str] = []
    pd = {r.mode for r in spec.spec.roles} >= {"prefill", "decode"}
    dest = _kv_destination(spec, roles, sizing) if pd else None
    for i, role_spec in enumerate(spec.spec.roles):
        role = roles[i] if i < len(roles) else None
        z = sizing[i] if i < len(sizing) else None
        h = host[i] if i < len(host) else None
        if role is None:
            continue
        startup = h.startup_s if h is not None else None
        if not isinstance(z, RoleSizing) or z.kv_cache <= 0:
            times.append(RoleTimes(role.name, role.mode, _max_len(role, spec.spec.engine.name), startup))
            continue
        try:
            times.append(_role_times(spec, role_spec, role, z, startup, pd, dest))
        except (KeyError, ValueError, ZeroDivisionError) as exc:   # a config the model lacks
            notes.append(f"role {role.name!r} not timed: {exc}")
            times.append(RoleTimes(role.name, role.mode, _max_len(role, spec.spec.engine.name), startup))
    return _combine(tuple(times), pd, spec.spec.traffic is not None, notes,
                    _predicted_mean(spec, prediction))


def _kv_destination(spec, roles, sizing) -> tuple[int, int] | None:
    """The decode side of a disaggregated KV transfer: (attention TP, KV bytes per token per
    GPU) of the decode role with the widest TP (the most readers per prefill GPU:
    perf/terms.py ``kv_readers``); None when no decode role has a memory plan."""
    from .sizing import RoleSizing
    best = None
    for i, role_spec in enumerate(spec.spec.roles):
        role = roles[i] if i < len(roles) else None
        z = sizing[i] if i < len(sizing) else None
        if role_spec.mode != "decode" or role is None or not isinstance(z, RoleSizing):
            continue
        if best is None or role.layout.tensor > best[0]:
            best = (role.layout.tensor, z.kv_bytes_per_token)
    return best


def _predicted_mean(spec, prediction) -> float | None:
    """The mean request at the sized load from the deployment's prediction
    (generator/perf/predict.py: the closed loop's TTFT, which includes the wait for prefill, +
    outputTokens x TPOT of the slowest roles), s; None without traffic or a timed prediction.
    S1: 20.67 s + 1200 x 19.4 ms = 43.95 s."""
    traffic = spec.spec.traffic
    if prediction is None or traffic is None or not getattr(prediction, "roles", None):
        return None
    ttft = max((r.ttft_ms or 0.0) for r in prediction.roles.values())
    tpot = max((r.tpot_ms or 0.0) for r in prediction.roles.values())
    return (ttft + traffic.outputTokens * tpot) / 1000 if ttft or tpot else None


def _max_len(role, engine: str) -> int:
    return role_max_len(role, engine)


def _role_times(spec, role_spec, role, z, startup, pd: bool,
                dest: tuple[int, int] | None = None) -> RoleTimes:
    """One role's predictions from the planner's physical model (perf/terms.py); ``dest``: the
    decode side a prefill role's KV goes to (:func:`_kv_destination`; None: the role's own
    KV bytes, one reader)."""
    from .perf import terms as perf
    from .perf.decode import (attention_fp8, bf16_compute, effective_overlap, kv_heads_of,
                              model_shape, persistent_mla)
    from .perf.kernels import moe_kernel
    s = spec.spec
    pool = s.nodePools[role_spec.nodePool]
    gpu = GPUS[pool.gpu]
    gbps = of_deployment(spec).gbps
    shape = model_shape(role.arch, s.model.weights, z.kv_bytes_per_token)
    lay = role.layout
    bf16 = bf16_compute(s.model.weights)
    max_len = z.max_model_len
    overlap = role.moe.overlap if role.moe is not None else None
    moe = moe_kernel(s.engine.name, gpu, s.model.weights,
                     role.moe.all2all if role.moe is not None else None, role_spec.engineArgs)
    traffic = s.traffic

    def prefill(isl: int) -> float:
        return perf.prefill(shape, gpu, isl=isl, tensor=lay.tensor, data=lay.data,
                            pipeline=lay.pipeline, expert=lay.expert_parallel,
                            gpus_per_node=pool.gpusPerNode, inter_gbps=gbps,
                            weights_bytes=z.weights * 2**30, bf16=bf16,
                            overlap=overlap, moe=moe, batch_tokens=z.batched_tokens,
                            chunk_tokens=perf.prefill_chunk(s.engine.name, z.batched_tokens,
                                                            lay.data),
                            graphs=s.engine.name == "vllm" and not role.serving.enforceEager
                            ).latency_s

    out = RoleTimes(role.name, role.mode, max_len, startup)
    if role.mode != "decode":
        mean = None
        if traffic is not None:
            mean = prefill(min(traffic.inputTokens, max_len))
        tensor, per_token = dest or (lay.tensor, z.kv_bytes_per_token)
        transfer = perf.kv_transfer_time(max_len, per_token, gbps,
                                         perf.kv_readers(lay.tensor, tensor)) if pd else None
        out = RoleTimes(role.name, role.mode, max_len, startup, prefill(max_len), transfer,
                        mean_s=mean)
    if role.mode == "prefill":
        return out
    draft = role.speculative.numSpeculativeTokens if role.speculative and \
        role.arch.mtp_layers else 0
    batch = max(1, -(-(role.admission or role.concurrency) // lay.data))
    nonexpert = (z.weights - z.weights_by_component.get("routed_experts", 0)) * 2**30
    local = z.weights_by_component.get("routed_experts", 0) * 2**30 \
        / max(shape.expert_bytes * shape.moe_layers, 1)
    fp8_attn = attention_fp8(s.engine.name, role.serving.kvCacheDtype,
                             shape.attn_window is not None, role_spec.engineArgs)
    persistent = persistent_mla(s.engine.name, gpu, role.serving.kvCacheDtype,
                                shape.heads // max(lay.tensor, 1),
                                kv_heads_of(role.arch) // max(lay.tensor * lay.data, 1),
                                role_spec.engineArgs)

    def step(ctx: float) -> float:
        return perf.decode_step(
            shape, gpu, overlap=effective_overlap(s.engine.name, role, batch * (1 + draft)),
            batch=batch, tensor=lay.tensor, data=lay.data, expert=lay.expert_parallel,
            nonexpert_bytes=nonexpert, local_experts_per_layer=local if lay.expert_parallel
            else 0, ctx=ctx, gpus_per_node=pool.gpusPerNode, inter_gbps=gbps, draft=draft,
            bf16=bf16, attn_fp8=fp8_attn, persistent_mla=persistent, engine=s.engine.name,
            moe=moe,
            all2all=role.moe.all2all if role.moe else None, mnnvl=s.network.computeDomain is not None,
            drafter="sglang_mtp" if s.engine.name == "sglang" else "vllm_mtp")[0]

    mean = out.mean_s
    if traffic is not None:
        accepted = perf.accepted_per_step(draft, traffic.acceptance) if draft else 1.0
        ctx = min(traffic.inputTokens + traffic.outputTokens / 2, max_len)
        decode_mean = traffic.outputTokens * step(ctx) / accepted
        mean = (mean or 0.0) + decode_mean
    return RoleTimes(role.name, role.mode, max_len, startup, out.prefill_s, out.transfer_s,
                     step(max_len / 2), mean)


def _combine(times: tuple[RoleTimes, ...], pd: bool, traffic: bool,
             notes: list[str], predicted_mean: float | None = None) -> Durations:
    """The deployment's figures from its roles' (module docstring); ``predicted_mean``: the
    prediction's mean request under load, which the mean request is never below (a request
    in flight at SIGTERM has waited for prefill too)."""
    startups = [t.startup_s for t in times if t.startup_s is not None]
    front = [t for t in times if t.mode == ("prefill" if pd else "unified")]
    prefills = [t.prefill_s + (t.transfer_s or 0.0) for t in front if t.prefill_s is not None]
    decoders = [t for t in times if t.mode != "prefill"]
    steps = [t.max_len * t.step_s for t in decoders if t.step_s is not None]
    longest_prefill = max(prefills) if prefills else None
    longest_request = (longest_prefill + max(steps)) if prefills and steps else None
    mean = None
    if traffic:
        firsts = [t.mean_s for t in front if t.mean_s is not None]
        seconds = [t.mean_s for t in decoders if t.mean_s is not None and t.mode == "decode"]
        if pd and firsts and seconds:
            mean = max(firsts) + max(seconds)
        elif not pd and firsts:
            mean = max(firsts)
    if predicted_mean is not None:
        mean = max(mean or 0.0, predicted_mean)
    request = ROUTER_REQUEST_TIMEOUT_DEFAULT_S
    if longest_request is not None:
        request = max(request, _ceil_minute(MARGIN * longest_request))
    kv_wait = SGLANG_KV_TIMEOUT_DEFAULT_S
    if longest_prefill is not None:
        kv_wait = max(kv_wait, int(math.ceil(MARGIN * longest_prefill)))
    drain = MIN_DRAIN_S
    if mean is not None:
        drain = min(MAX_DRAIN_S, max(MIN_DRAIN_S, int(math.ceil(MARGIN * mean))))
    return Durations(times, max(startups) if startups else None, longest_prefill,
                     longest_request, mean, request, kv_wait, drain, notes)


def front_idle_s(spec, mode: str) -> int | None:
    """How long the pooled HTTP client in front of a role of ``mode`` keeps an idle connection,
    s: the router Deployment's (engines/routers.py POOL_IDLE_S) for prefill/decode roles behind
    it; the routing sidecar's (engines/gateway.py SIDECAR_POOL_IDLE_S) for the prefill/decode
    roles of the inference gateway (the decode sidecar calls prefill, and its own decode engine);
    None otherwise (a Gateway's own proxy is the user's)."""
    from .engines import gateway as gw
    from .engines.routers import POOL_IDLE_S, rendered_router, router_kind
    if mode not in ("prefill", "decode"):
        return None
    rendered = rendered_router(spec.spec)
    if rendered == "deployment":
        return POOL_IDLE_S[router_kind(spec.spec.engine.name, spec.spec.router.kind)]
    if rendered == "gateway" and {r.mode for r in spec.spec.roles} >= {"prefill", "decode"}:
        return gw.SIDECAR_POOL_IDLE_S
    return None


def timing_env_names(spec, engine: str, mode: str) -> list[str]:
    """The names :func:`timing_env` sets for a role of ``mode``, in its order, known without
    timing the deployment (``gen validate``'s NET003 needs the names only, not the perf model)."""
    names = []
    if keepalive_s(front_idle_s(spec, mode)) is not None:
        names.append(KEEPALIVE_ENV[engine])
    if engine == "sglang" and mode == "decode":
        names.append(SGLANG_KV_TIMEOUT_ENV)
    return names


def timing_env(spec, engine: str, mode: str, d: Durations) -> dict[str, str]:
    """Engine variables of a role of ``mode`` that pair with another component (module
    docstring): the HTTP keep-alive above the pooled client in front (:func:`front_idle_s`), and
    SGLang decode's KV wait (:attr:`Durations.kv_wait_s`); the names are
    :func:`timing_env_names`."""
    return {name: str(d.kv_wait_s) if name == SGLANG_KV_TIMEOUT_ENV
            else str(keepalive_s(front_idle_s(spec, mode)))
            for name in timing_env_names(spec, engine, mode)}
