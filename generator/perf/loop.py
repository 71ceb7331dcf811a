"""Queueing and the closed loop: a deployment's rate, TTFT and TPOT under its workload.

Prefill is an M/D/1 server; decode runs at the batch the rate keeps decoding
(:class:`~generator.perf.decode.DecodeCurve`); a fixed concurrency is a closed loop solved for the
rate at which the sequences in flight equal it. :func:`pd_candidate` (disaggregated) and
:func:`unified_candidate` (prefill and decode on the same GPUs) return a
:class:`~generator.perf.candidate.Candidate`.
"""

from __future__ import annotations

import math

from ..facts.versions import parse_version
from ..sizing import RoleSizing
from ..sizing.vllm_budget import async_scheduling
from ..spec.request import PlanRequest
from . import terms as perf
from .candidate import QUEUE_PARTS, SERVICE_PARTS, Candidate, RoleChoice
from .decode import decode_curve
from .interleave import Interleave, interleaved


def _in_flight(wl, capacity: int) -> int:
    """Sequences decoding at once: the workload's concurrency if given, at most the capacity."""
    return min(wl.concurrency, capacity) if wl.concurrency else capacity


def _max_utilisation(t_service: float, extra: float, ttft_slo_ms: float | None) -> float:
    """Highest utilisation rho of a prefill server (M/D/1: wait = rho / (2 (1 - rho)) x service)
    whose TTFT = service x (1 + wait factor) + extra stays within the SLO (0.95 without one)."""
    if not ttft_slo_ms:
        return 0.95
    x = (ttft_slo_ms / 1000 - extra) / t_service - 1
    if x <= 0:
        return 0.0
    return min(0.95, 2 * x / (1 + 2 * x))


def ttft_parts(pre: perf.PrefillEstimate, ttft_s: float, *, kv_s: float = 0.0,
               step_wait_s: float = 0.0, rho: float = 0.0, delay_s: float = 0.0,
               first_s: float = 0.0) -> dict[str, float]:
    """A TTFT of ``ttft_s`` split into its terms, ms (they add up to it). Service
    (:data:`SERVICE_PARTS`): ``request`` (the per-request cost off the GPU,
    ``pre.request_s``), ``prefill`` (the prefill's latency on its rank, ``pre.latency_s``:
    compute, its all-to-all and all-reduces over NVLink or the RDMA network) and
    ``kvTransfer`` (disaggregated: ``kv_s`` over the RDMA network) and ``decodeFirstStep``
    (disaggregated: ``first_s``, the decode instance's way from the KV's arrival to the first
    streamed token, :func:`decode_first_token`). Queueing
    (:data:`QUEUE_PARTS`): ``stepWait`` (a unified role's wait for the decode step its prefill
    can join, :func:`arrival_wait`), ``prefillQueue`` (the M/D/1 wait at the prefill's
    utilisation ``rho``: latency x rho / (2 (1 - rho))), ``prefillDelayer`` (SGLang's prefill
    delayer, half its hold ``delay_s``) and ``overflow`` (a closed loop beyond the capacity:
    the sequences the deployment cannot keep decoding wait, the rest of ``ttft_s``)."""
    parts = {"request": pre.request_s, "prefill": pre.latency_s, "kvTransfer": kv_s,
             "decodeFirstStep": first_s, "stepWait": step_wait_s,
             "prefillQueue": pre.latency_s * rho / (2 * (1 - rho)) if rho < 1 else 0.0,
             "prefillDelayer": delay_s}
    parts["overflow"] = max(0.0, ttft_s - sum(parts.values()))
    assert tuple(parts) == SERVICE_PARTS + QUEUE_PARTS
    return {k: v * 1000 for k, v in parts.items()}


def _solve_closed_loop(concurrency: int, r_max: float, in_loop) -> tuple[float, bool]:
    """The request rate R of a closed loop of ``concurrency`` sequences: ``in_loop(R)``, the
    sequences the system holds at rate R (R x (TTFT + OSL x TPOT), increasing in R), equals
    the concurrency (regula falsi); when even ``r_max`` (the capacity) holds fewer, R = r_max and
    the rest wait for prefill. Returns (R, capacity binds)."""
    if r_max <= 0:
        return 0.0, True
    if in_loop(r_max) <= concurrency:
        return r_max, True
    # Regula falsi (Illinois) on the increasing in_loop(R) - concurrency, bracketed in
    # [0, r_max]: a few evaluations to 0.1 % of the concurrency (far inside the model's error).
    lo, f_lo = 0.0, -float(concurrency)
    hi, f_hi = r_max, in_loop(r_max) - concurrency
    side = 0
    for _ in range(60):
        mid = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        f_mid = in_loop(mid) - concurrency
        if abs(f_mid) <= 1e-3 * concurrency or hi - lo <= 1e-4 * r_max:
            return mid, False
        if f_mid < 0:
            lo, f_lo = mid, f_mid
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = mid, f_mid
            if side == 1:
                f_lo /= 2
            side = 1
    return lo, False


def decode_first_token(engine: str, kv_s: float, step_s: float,
                       async_sched: bool = False) -> float:
    """Seconds a disaggregated request spends on its decode instance besides the KV transfer
    (``kv_s``) before its first token streams, with the decode role stepping every ``step_s``
    (its decode step at the operating batch).

    * vLLM (NixlConnector): the proxy sends the request to decode after prefill answered; the
      decode scheduler takes it in at its next step (half a step on average), allocates its
      blocks and parks it in ``WAITING_FOR_REMOTE_KVS`` while that step's forward starts the
      NIXL read; the read's end reaches the scheduler in the output of the step it finishes in
      (``_update_from_kv_xfer_finished``: at least that first step, else the transfer plus half
      a step), and the step after recomputes the last prompt token inside the running decode
      batch (``_update_waiting_for_remote_kv`` sets ``num_computed_tokens = num_tokens - 1``)
      and samples the first token. The read starts with a step and its end is reported with
      the output of the step it finishes in (vllm/distributed/kv_transfer/kv_connector/v1/
      nixl ``start_load_kv`` / ``get_finished``): max(1, ceil(kv_s / step)) steps. So
      0.5 x step + max(1, ceil(kv_s / step)) x step + step - kv_s (vLLM 0.33.0
      vllm/v1/core/sched/scheduler.py). With asynchronous scheduling (``async_sched``:
      sizing/vllm_budget.py :func:`async_scheduling`) step k+1 is already scheduled when step
      k's output is processed (vllm/v1/engine/core.py ``step_with_batch_queue``): the request is
      taken in one step later and its recompute runs one step after the read is reported: two
      steps more.
    * SGLang (Mooncake, NIXL): the router sends the request to prefill and decode at once, so
      decode has preallocated its KV before prefill pushes it; the prefill samples the first
      token and sends it with the KV's metadata. The decode scheduler polls the transfer queue
      once per loop iteration (one decode step) and streams that token from its prebuilt batch
      (``process_batch_result_prebuilt``) without a forward: half a step on average (SGLang
      0.5.23 python/sglang/srt/disaggregation/decode.py ``event_loop_overlap_disagg_decode``,
      ``_commit_transfer_to_req``)."""
    if engine == "vllm":
        read = max(1, math.ceil(kv_s / step_s - 1e-9)) * step_s if step_s > 0 else kv_s
        return 0.5 * step_s + read + step_s - kv_s + (2 * step_s if async_sched else 0.0)
    return 0.5 * step_s


def _open_bound(wl, sustains: bool, capacity_bound: str) -> str:
    """What binds a candidate's throughput: under an open load (``requestsPerSecond``) the
    offered load when the candidate sustains it (every such candidate delivers exactly it; what
    bounds its capacity follows), else the load exceeding that capacity; without one, what
    bounds the capacity."""
    if not wl.requestsPerSecond:
        return capacity_bound
    if sustains:
        return f"the offered load ({wl.requestsPerSecond:g} req/s; capacity bound by " \
               f"{capacity_bound})"
    return f"offered load {wl.requestsPerSecond:g} req/s exceeds capacity ({capacity_bound})"


def exposed_kv(engine: str, kv_s: float, pre: perf.PrefillEstimate) -> float:
    """The part of a request's KV transfer (``kv_s``, s) that adds to its TTFT after its
    prefill. SGLang's prefill sends each chunk's KV as soon as the chunk is computed (SGLang
    0.5.23 python/sglang/srt/disaggregation/prefill.py: ``send_kv_chunk(last_chunk=False)``
    per chunk), so of ``c`` chunks of ``latency / c`` each the later chunks' compute hides
    all but max(kv / c, kv - (c - 1) x latency / c). vLLM's decode pulls the KV once the
    prefill has finished (NixlConnector): all of it."""
    if engine != "sglang" or pre.chunks <= 1:
        return kv_s
    chunk_s = pre.latency_s / pre.chunks
    return max(kv_s / pre.chunks, kv_s - (pre.chunks - 1) * chunk_s)


def _async(req: PlanRequest, pipeline: int) -> bool:
    """The request's vLLM release schedules asynchronously for ``pipeline`` stages."""
    try:
        return async_scheduling(parse_version(req.spec.engine.version), pipeline)
    except ValueError:
        return False


def pd_candidate(req: PlanRequest, prefill: RoleChoice, decode: RoleChoice,
                  pre: perf.PrefillEstimate, est: perf.DecodeEstimate, z: RoleSizing,
                  retime=None, draft: int = 0) -> Candidate:
    """Disaggregated: prefill instances feed decode instances.

    Open load (``requestsPerSecond``, or no load: capacity): the rate is the least of the
    prefill rate that keeps TTFT within its SLO (M/D/1 at prefill) and the decode capacity.
    Fixed ``concurrency`` (a closed loop of that many sequences): the rate R at which the
    sequences in the loop, R x (TTFT(R) + OSL x TPOT(R)), equal the concurrency, with TTFT the
    M/D/1 wait at prefill + the KV transfer + the decode instance's first step
    (:func:`decode_first_token`, at the decode step of that batch) and TPOT timed at the batch
    R keeps decoding
    (:class:`DecodeCurve`, ``retime`` times batch 1); when prefill at 95 % busy or decode at
    its sized batch cannot reach that, R is that capacity and the remaining sequences wait
    for prefill: TTFT = concurrency / R - OSL x TPOT."""
    wl = req.spec.workload
    osl = wl.outputTokens
    kv_t = perf.kv_transfer_time(wl.inputTokens, z.kv_bytes_per_token,
                                 req.spec.network.interNodeGbps,
                                 perf.kv_readers(prefill.layout.tensor, decode.layout.tensor))
    kv_t = exposed_kv(req.spec.engine.name, kv_t, pre)
    prefill_cap = prefill.instances * pre.requests_per_s
    dl = decode.layout
    ranks = decode.instances * dl.data * dl.pipeline
    decode_cap = ranks * est.batch_per_rank / (osl * est.tpot_s)

    engine = req.spec.engine.name
    per_token = est.step_s / est.tpot_s          # decode step per TPOT (MTP, pipeline)
    async_sched = engine == "vllm" and _async(req, dl.pipeline)

    def first(tpot_s: float) -> float:
        return decode_first_token(engine, kv_t, tpot_s * per_token, async_sched)

    def wait(rate: float, tpot_s: float) -> float:
        rho = min(rate / prefill_cap, 0.95) if prefill_cap else 0.95
        return pre.request_s + pre.latency_s * (1 + rho / (2 * (1 - rho))) + kv_t \
            + first(tpot_s)   # M/D/1

    def median_of(rate: float, tpot_s: float) -> float:
        rho = min(rate / prefill_cap, 0.95) if prefill_cap else 0.95
        return pre.request_s + pre.latency_s + median_wait(pre.latency_s, rho) + kv_t \
            + first(tpot_s)

    if wl.concurrency:
        rho_max = 0.95
        curve = decode_curve(req, est, ranks, retime, draft)

        lat, fed_at, tpot_of, b_max = pre.latency_s, curve.fed, curve.tpot, curve.b_max

        def in_loop(r: float) -> float:   # wait(r) + OSL x TPOT at the fed batch, inlined
            rho = min(r / prefill_cap, 0.95)
            b = fed_at(r, osl)
            tpot_b = tpot_of(b if b is not None else b_max)
            return r * (pre.request_s + lat * (1 + rho / (2 * (1 - rho))) + kv_t
                        + first(tpot_b) + osl * tpot_b)

        r_max = min(prefill_cap * rho_max, decode_cap)
        rate, capped = _solve_closed_loop(wl.concurrency, r_max, in_loop)
        fed = curve.fed(rate, osl) or curve.b_max
        tpot_s = curve.tpot(fed)
        ttft = ttft_open = wait(rate, tpot_s)
        median = median_of(rate, tpot_s)
        if capped and rate:   # the sequences the capacity does not keep decoding wait
            ttft = max(ttft, wl.concurrency / rate - osl * tpot_s)
            median = max(median, ttft)
        est = perf.DecodeEstimate(fed, est.step_s, tpot_s, est.tokens_per_s_per_rank, est.bound)
        at = rate
    else:
        tpot_s = est.tpot_s
        rho_max = _max_utilisation(pre.latency_s, kv_t + first(tpot_s), req.spec.slo.ttftMs)
        rate = min(prefill_cap * rho_max, decode_cap)
        offered = min(rate, wl.requestsPerSecond) if wl.requestsPerSecond else rate
        ttft = ttft_open = wait(offered, tpot_s)
        median = median_of(offered, tpot_s)
        at = offered
    parts = ttft_parts(pre, ttft, kv_s=kv_t, first_s=first(tpot_s),
                       rho=min(at / prefill_cap, 0.95) if prefill_cap else 0.95)
    sustains = True
    if wl.requestsPerSecond:
        sustains = rate >= wl.requestsPerSecond * 0.999
        rate = min(rate, wl.requestsPerSecond)
    binding = {pre.bound: prefill_cap * rho_max, est.bound: decode_cap}
    if wl.concurrency:
        binding["the workload's concurrency"] = wl.concurrency / (ttft_open
                                                                 + wl.outputTokens * est.tpot_s)
    bound = _open_bound(wl, sustains, min(binding, key=binding.get))
    gpus = prefill.gpus + decode.gpus
    roles = [prefill.as_json(), decode.as_json()]
    notes = [f"P:D = {prefill.instances}:{decode.instances}",
             f"decode batch {est.batch_per_rank} per rank",
             f"prefill {min(rate / prefill_cap, 1):.0%} busy" if prefill_cap else "prefill idle"]
    return Candidate(roles, gpus, z.kv_tokens_per_rank, ttft * 1000, est.tpot_s * 1000,
                     rate * wl.outputTokens, rate * (wl.inputTokens + wl.outputTokens), True,
                     False, bound, notes, sustains=sustains, decode_batch=est.batch_per_rank,
                     ttft_median_ms=median * 1000, ttft_parts_ms=parts)


def median_wait(latency_s: float, rho: float) -> float:
    """Median of the M/D/1 waiting time (s) before a prefill of ``latency_s`` at utilisation
    ``rho`` (< 1): a request finds the prefill idle with probability 1 - rho, so the median
    wait is 0 while rho <= 0.5; above, a waiting request's wait is taken as exponential with
    the mean E[W] / rho (E[W] = latency_s x rho / (2 (1 - rho)), the M/D/1 mean the TTFT
    means use): (E[W] / rho) x ln(2 rho). A published median TTFT has no queue in it below
    half load; its mean does (generator/perf/predict.py quotes both)."""
    if rho <= 0.5:
        return 0.0
    return latency_s / (2 * (1 - rho)) * math.log(2 * rho)


#: Engines whose scheduler launches the next step before it takes in new requests, so that a
#: request arriving during a decode step waits for the rest of it and one more: SGLang's
#: default ``event_loop_overlap`` (python/sglang/srt/managers/scheduler.py: it receives
#: requests, schedules and launches batch k+1, then waits for batch k). Off with
#: --disable-overlap-schedule (not read), with pipeline parallelism, and with speculative
#: decoding before spec v2 (0.5.7's ``_handle_speculative_decoding``; 0.5.23 keeps it on): a
#: drafting role is timed without the extra step at every release (the release spec v2 became
#: the default is not among moegen's facts). vLLM's asynchronous scheduling does the same where
#: it is on (sizing/vllm_budget.py :func:`async_scheduling`: from 0.26.0 without pipeline
#: parallelism; MTP keeps it on, vllm/config/vllm.py): the caller says whether it is.
OVERLAP_SCHEDULERS = frozenset({"sglang", "vllm"})


def arrival_wait(busy: float, decode_step_s: float, engine: str, decoding: float = 1.0,
                 overlap: bool = True) -> float:
    """Mean wait (s) of a request arriving at a unified role for the step its prefill can
    join: when the role is decoding (the chance ``decoding`` that other sequences are in
    flight: (S - 1) / S of S sequences in a closed loop, 0 at concurrency 1, whose role is idle
    when its one request returns) and not in prefill (1 - busy), it waits the rest of the
    decode step (half a step) and one more under an overlap scheduler
    (:data:`OVERLAP_SCHEDULERS`, ``overlap``: the role's scheduler is not forced synchronous)."""
    steps = 1.5 if engine in OVERLAP_SCHEDULERS and overlap else 0.5
    return (1 - busy) * decoding * decode_step_s * steps


def unified_ttft(pre: perf.PrefillEstimate, busy: float, decode_step_s: float,
                 engine: str = "vllm", decoding: float = 1.0, overlap: bool = True) -> float:
    """TTFT (s) on a role serving both phases whose prefill takes the time share ``busy``
    (< 1) between decode steps of ``decode_step_s``: the request's cost off the GPU
    (``pre.request_s``), its wait for a step (:func:`arrival_wait`), then its prefill
    (``pre.latency_s``) with the M/D/1 wait at utilisation ``busy``:
    request_s + arrival_wait + latency_s x (1 + busy / (2 (1 - busy)))."""
    return pre.request_s + arrival_wait(busy, decode_step_s, engine, decoding, overlap) \
        + pre.latency_s * (1 + busy / (2 * (1 - busy)))


def unified_ttft_median(pre: perf.PrefillEstimate, busy: float, decode_step_s: float,
                        engine: str = "vllm", decoding: float = 1.0,
                        overlap: bool = True) -> float:
    """The median of :func:`unified_ttft` (s): the prefill's wait at its median
    (:func:`median_wait`); the wait for a step, a short term, at its mean."""
    return pre.request_s + arrival_wait(busy, decode_step_s, engine, decoding, overlap) \
        + pre.latency_s + median_wait(pre.latency_s, busy)


def unified_candidate(req: PlanRequest, unified: RoleChoice, pre: perf.PrefillEstimate,
                       est: perf.DecodeEstimate, z: RoleSizing, retime=None,
                       draft: int = 0, delayer_passes: int = 0) -> Candidate:
    """Prefill and decode share the GPUs (:func:`~generator.perf.interleave.interleaved`: prefill steps hold the
    instance's decode, attention DP synchronises its ranks), so a decoding sequence's TPOT
    stretches with the arrival rate R; TTFT = the per-request cost + its wait for a step
    (:func:`arrival_wait`) + the prefill latency with its M/D/1 wait at the time share
    ``busy`` prefill takes (:func:`unified_ttft`; the median: :func:`unified_ttft_median`).

    Open load: S sequences decode (the sized batch over the ranks, or the workload's
    concurrency), R x OSL x TPOT(R) = S. Fixed ``concurrency`` (a closed loop): the sequences
    decoding and those waiting for prefill add up to it, R x (TTFT(R) + OSL x TPOT(R)) =
    concurrency, with the decode step timed at the batch R keeps decoding
    (:class:`DecodeCurve`); beyond the capacity (busy 95 % or the sized batch) the rest wait:
    TTFT = concurrency / R - OSL x TPOT."""
    wl = req.spec.workload
    osl = wl.outputTokens
    ul = unified.layout
    ranks = unified.instances * ul.data * ul.pipeline
    per_inst = ul.data * ul.pipeline
    engine = req.spec.engine.name

    per_token = est.step_s / est.tpot_s          # decode step per TPOT (MTP, pipeline)

    # see OVERLAP_SCHEDULERS: SGLang's overlap loop without a drafter or pipeline; vLLM's
    # asynchronous scheduling where the release has it on
    overlap = (not draft and ul.pipeline == 1) if engine != "vllm" else _async(req, ul.pipeline)
    # The chance other sequences are decoding when a request arrives, per instance: a closed
    # loop of S sequences leaves S - 1 ((S - 1) / S); an open load of L sequences in flight
    # (Poisson) 1 - e^-L, set once the rate is known.
    decoding = max(0.0, 1 - unified.instances / max(wl.concurrency, 1)) \
        if wl.concurrency else 1.0

    def mix(r: float, t_dec: float, b: float) -> Interleave:
        return interleaved(r / unified.instances, t_dec, pre, data=ul.data, engine=engine,
                           sequences=b * per_inst, osl=osl, delayer_passes=delayer_passes)

    def wait(m: Interleave, tpot_step: float) -> float:
        return unified_ttft(pre, m.busy, tpot_step * per_token, engine, decoding, overlap) \
            + m.delay_s / 2

    curve = decode_curve(req, est, ranks, retime, draft) if wl.concurrency else None

    def point(r: float) -> tuple[Interleave, int]:
        """The interleave at rate r and the batch per rank it keeps decoding (the sized batch
        beyond the capacity)."""
        if curve is None:
            return mix(r, est.tpot_s, est.batch_per_rank), est.batch_per_rank
        b = curve.fed(r, osl) or curve.b_max
        m = mix(r, curve.tpot(b), b)
        b = curve.fed(r, osl, m.tpot_s / curve.tpot(b)) or curve.b_max
        return mix(r, curve.tpot(b), b), b

    def capacity(seqs: float) -> float:
        """The rate at which ``seqs`` sequences decode: R x OSL x TPOT(R) = seqs (bisection;
        at most where prefill takes 95 % of the time)."""
        lo, hi = 0.0, seqs / (osl * est.tpot_s)
        for _ in range(60):
            mid = (lo + hi) / 2
            m = point(mid)[0]
            if m.busy < 0.95 and mid * osl * m.tpot_s < seqs:
                lo = mid
            else:
                hi = mid
        return lo

    if wl.concurrency:
        def in_loop(r: float) -> float:
            m, b = point(r)
            return r * (wait(m, curve.tpot(b)) + osl * m.tpot_s)

        rate, capped = _solve_closed_loop(wl.concurrency,
                                          capacity(ranks * est.batch_per_rank), in_loop)
        m, batch = point(rate)
        busy, tpot = m.busy, m.tpot_s
        step_s = curve.tpot(batch) * per_token
        ttft = wait(m, curve.tpot(batch))
        median = unified_ttft_median(pre, busy, curve.tpot(batch) * per_token, engine,
                                     decoding, overlap) + m.delay_s / 2
        if capped and rate:
            ttft = max(ttft, wl.concurrency / rate - osl * tpot)
            median = max(median, ttft)
        sustains = True
    else:
        seqs = _in_flight(wl, ranks * est.batch_per_rank)
        rate = capacity(seqs)
        sustains = True
        if wl.requestsPerSecond:
            sustains = rate >= wl.requestsPerSecond * 0.999
            rate = min(rate, wl.requestsPerSecond)
        m = mix(rate, est.tpot_s, est.batch_per_rank)
        busy, tpot = m.busy, m.tpot_s
        decoding = 1 - math.exp(-rate * osl * tpot / unified.instances)
        step_s = est.tpot_s * per_token
        ttft = wait(m, est.tpot_s)
        median = unified_ttft_median(pre, busy, est.tpot_s * per_token, engine, decoding,
                                     overlap) + m.delay_s / 2
        batch = est.batch_per_rank
    parts = ttft_parts(pre, ttft, rho=busy, delay_s=m.delay_s / 2,
                       step_wait_s=arrival_wait(busy, step_s, engine, decoding, overlap))
    gpus = unified.gpus
    bound = _open_bound(wl, sustains, f"prefill interrupting decode (shared GPUs; {pre.bound})"
                        if busy > 0.3 else est.bound)
    return Candidate([unified.as_json()], gpus, z.kv_tokens_per_rank,
                     ttft * 1000, tpot * 1000, rate * wl.outputTokens,
                     rate * (wl.inputTokens + wl.outputTokens), True, False, bound,
                     [f"{busy:.0%} of the time in prefill", f"batch {batch} per rank"],
                     sustains=sustains, decode_batch=batch, ttft_median_ms=median * 1000,
                     ttft_parts_ms=parts)
