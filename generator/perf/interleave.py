"""One role serving both phases: decode steps interleaved with prefill steps (:func:`interleaved`),
each engine's way (SGLang: a prefill batch is its own step; vLLM: the prompt chunk rides in the
decode step), attention DP holding every rank."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..engines.options import option_flags, option_value
from .fixed import step_time
from .terms import PrefillEstimate


#: Engines whose unified roles run a prefill batch as its own forward step (SGLang: no mixed
#: chunk unless --enable-mixed-chunk, python/sglang/srt/managers/scheduler.py
#: ``get_next_batch_to_run`` runs a new prefill batch before the running decode batch); vLLM's
#: V1 scheduler mixes prompt chunks into the decode step (chunked prefill, always on in V1).
SEPARATE_PREFILL_STEP = frozenset({"sglang"})


@dataclass(frozen=True)
class Interleave:
    """Decode interleaved with prefill on one unified instance (see :func:`interleaved`).

    Attributes:
        busy: fraction of the time in steps that hold a prefill.
        tpot_s: time per output token of a decoding sequence, s.
        per_step: requests one prefill step carries.
        delay_s: how long SGLang's prefill delayer holds a request back before its prefill
            (0 without it), s.
    """

    busy: float
    tpot_s: float
    per_step: float
    delay_s: float = 0.0


#: SGLang's default ``--prefill-delayer-max-delay-passes`` (python/sglang/srt/arg_groups/fields/
#: schedule.py ``prefill_delayer_max_delay_passes``, 0.5.23: "Maximum forward passes to delay
#: prefill"; 30 in every release that has the delayer, 0.5.10-0.5.23).
PREFILL_DELAYER_PASSES = 30


def prefill_delayer_passes(engine: str, engine_args: list[str] | tuple, data: int) -> int:
    """The forward passes SGLang's prefill delayer may hold a prefill back: with
    ``--enable-prefill-delayer`` in a role's engineArgs under attention DP (``data`` > 1),
    ``--prefill-delayer-max-delay-passes`` or :data:`PREFILL_DELAYER_PASSES`; 0 otherwise (the
    delayer off, vLLM, one DP rank)."""
    if engine != "sglang" or data <= 1:
        return 0
    args = list(engine_args)
    enabled, passes = False, PREFILL_DELAYER_PASSES
    for j, a in option_flags(args):
        flag = a.partition("=")[0]
        if flag == "--enable-prefill-delayer":
            enabled = True
        elif flag == "--prefill-delayer-max-delay-passes":
            value = option_value(args, j)
            passes = int(value) if value and value.isdigit() else passes
    return passes if enabled else 0


def delayer_wait(rate: float, t_decode: float, data: int, passes: int) -> float:
    """How long SGLang's prefill delayer holds the first request of a prefill back, s: until
    every attention-DP rank has a request to prefill (``prefillable_status == "all"``) or
    ``passes`` forward passes went by (python/sglang/srt/managers/prefill_delayer.py
    ``_negotiate_should_allow_prefill_pure``, 0.5.23). With requests arriving at ``rate`` spread
    over ``data`` ranks (Poisson, rate / data each), the other data - 1 ranks each wait for their
    first: the mean of the largest of data - 1 exponential times is H(data - 1) x data / rate
    (H the harmonic number); capped at ``passes`` decode steps of ``t_decode``."""
    if data <= 1 or rate <= 0 or passes <= 0:
        return 0.0
    harmonic = sum(1 / i for i in range(1, data))
    return min(passes * t_decode, harmonic * data / rate)


def interleaved(rate: float, t_decode: float, pre: PrefillEstimate, *, data: int, engine: str,
                sequences: float, osl: int, delayer_passes: int = 0) -> Interleave:
    """Decode steps of ``t_decode`` s interleaved with the prefills of ``rate`` requests/s on one
    unified instance of ``data`` attention-DP ranks holding ``sequences`` decoding sequences of
    ``osl`` output tokens.

    New requests arrive as others finish (a closed loop: ``sequences / osl`` finish per decode
    step), so a prefill step carries k = max(1, sequences / osl) requests, spread over the DP
    ranks: it lasts T = :func:`step_time` (step_s, work_s x max(1, k / data)) (:class:`PrefillEstimate`) and the
    instance runs rate / k of them per second: busy = rate / k x T.

    * SGLang (:data:`SEPARATE_PREFILL_STEP`): the prefill step is its own forward. The rank
      that prefills does not decode in it; under attention DP the other ``data - 1`` ranks run
      their decode batch in the same step, whose MoE layers synchronise every rank, so they
      advance one token per T instead of per ``t_decode`` (sgl-project/sglang's DP-attention
      MLP sync; vLLM's blog 2025-12-17 "a single compute-bound prefill request can delay the
      forward pass of the entire EP group").
    * vLLM: the prompt chunk rides in a decode step (no fixed prefill step cost), which lasts
      ``t_decode`` + work_s x max(1, k / data) and advances every sequence.

    A prompt longer than the per-rank chunk prefills in several SGLang steps
    (:attr:`PrefillEstimate.chunks`), each with the prefill step's fixed cost, during each of
    which the other ranks advance a token.

    SGLang's prefill delayer (``--enable-prefill-delayer``, ``delayer_passes`` its
    ``--prefill-delayer-max-delay-passes``; attention DP only) holds a rank's prefill back until
    every rank has one to run or the passes are spent (:func:`delayer_wait`), then all ranks
    prefill in the same step: it carries k = max(k, 1 + rate x wait) requests, nobody decodes
    in it (advance 0), and there are rate / k of them.

    A sequence then makes (1 - busy) / t_decode + advance x rate / k tokens per second; TPOT
    is its inverse. busy is capped at 0.95.
    """
    k = max(1.0, sequences / max(osl, 1))
    delay = 0.0
    if engine in SEPARATE_PREFILL_STEP and delayer_passes and data > 1:
        delay = delayer_wait(rate, t_decode, data, delayer_passes)
        k = max(k, 1.0 + rate * delay)
    per_rank = max(1.0, k / max(data, 1))
    work = pre.work_s * per_rank
    if engine in SEPARATE_PREFILL_STEP:
        chunks = max(pre.chunks, math.ceil(per_rank * pre.chunk_share - 1e-9))
        advance = 0.0 if delay else chunks * (data - 1) / data
        hold = step_time(chunks * pre.step_s, work)
    else:
        hold, advance = t_decode + work, 1.0
    steps = rate / k
    busy = min(steps * hold, 0.95)
    tokens = (1 - busy) / t_decode + advance * steps
    return Interleave(busy, 1 / tokens, k, delay)
