"""One role serving both phases: decode steps interleaved with prefill steps (:func:`interleaved`),
each engine's way (SGLang: a prefill batch is its own step; vLLM: the prompt chunk rides in the
decode step), attention DP holding every rank."""

from __future__ import annotations

from dataclasses import dataclass

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
    """

    busy: float
    tpot_s: float
    per_step: float


def interleaved(rate: float, t_decode: float, pre: PrefillEstimate, *, data: int, engine: str,
                sequences: float, osl: int) -> Interleave:
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

    A sequence then makes (1 - busy) / t_decode + advance x rate / k tokens per second; TPOT
    is its inverse. busy is capped at 0.95.
    """
    k = max(1.0, sequences / max(osl, 1))
    work = pre.work_s * max(1.0, k / max(data, 1))
    if engine in SEPARATE_PREFILL_STEP:
        hold, advance = step_time(pre.step_s, work), (data - 1) / data
    else:
        hold, advance = t_decode + work, 1.0
    steps = rate / k
    busy = min(steps * hold, 0.95)
    tokens = (1 - busy) / t_decode + advance * steps
    return Interleave(busy, 1 / tokens, k)
