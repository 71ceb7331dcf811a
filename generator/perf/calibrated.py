"""The calibration hook: per-term-group factors measured on the user's own cluster, applied where
the predicted figures are assembled.

``gen calibrate`` (generator/calibration) compares the engine's own benchmark client's results
with the prediction of the same configuration and fits one multiplicative factor per group of
terms (docs/calibration.md):

========== =================================================== ===============================
group      the terms it scales                                 figures it multiplies
========== =================================================== ===============================
``ttft``   per-request floor, prefill step, KV transfer, queue  ``ttftMs``, ``ttftMedianMs``
``tpot``   the decode step (weights/KV reads, MoE, dispatch)    ``tpotMs``
``output`` the closed loop's delivered rate                    ``outputTokensPerSec``,
                                                               ``inputTokensPerSec``, the
                                                               deployment's tokens/s
========== =================================================== ===============================

This module is the whole hook: :func:`apply` takes the model's :class:`Prediction` and returns a
calibrated copy (the model itself is never changed); :func:`apply_candidate` does the same for a
planner candidate. A reworked performance model keeps the hook by calling :func:`apply` on what it
assembles (``Deployment.prediction`` stays the uncalibrated model; ``pipeline.performance`` and
``gen plan --calibration`` apply the profile).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

#: Factor group -> the RolePrediction/JSON figures it multiplies (docs/calibration.md).
GROUPS = {"ttft": ("ttftMs", "ttftMedianMs"), "tpot": ("tpotMs",),
          "output": ("outputTokensPerSec", "inputTokensPerSec")}


@dataclass(frozen=True)
class Factor:
    """One group's factor: measured / predicted (geometric mean over ``runs`` runs);
    ``residual``: the largest relative difference between a run's measurement and the
    calibrated prediction of that run (0.0 with one run: nothing left to compare)."""

    value: float
    runs: int
    residual: float

    def describe(self) -> str:
        """``"calibrated x2.00 on 3 runs, residual 4 %"``."""
        return (f"calibrated x{self.value:.2f} on {self.runs} run{'s' if self.runs != 1 else ''}"
                f", residual {self.residual:.0%}")

    def to_json(self) -> dict:
        """``{"factor", "runs", "residual"}`` (residual a fraction: 0.04 = 4 %)."""
        return {"factor": round(self.value, 4), "runs": self.runs,
                "residual": round(self.residual, 4)}


@dataclass(frozen=True)
class Calibration:
    """A profile's factors as the prediction takes them: ``factors`` by group (:data:`GROUPS`;
    a group without measurement is absent and its figures stay the model's), ``profile``: the
    profile's name, ``note``: what differs from the configuration it was measured on (lengths,
    concurrency; "" when nothing does)."""

    factors: dict[str, Factor]
    profile: str
    note: str = ""

    def on(self, figure: str) -> Factor | None:
        """The factor that scales ``figure`` (a JSON figure name), or None."""
        return next((self.factors[g] for g, figs in GROUPS.items()
                     if figure in figs and g in self.factors), None)


def _scale(value, factor: Factor | None, inverse: bool = False, digits: int | None = 1):
    if value is None or factor is None:
        return value
    out = value / factor.value if inverse else value * factor.value
    return round(out) if digits is None else round(out, digits)


def apply(prediction, cal: Calibration | None):
    """A copy of ``prediction`` (:class:`~generator.perf.predict.Prediction`) with every figure a
    factor of ``cal`` covers multiplied by it, and per role ``calibrated`` (figure -> Factor) and
    ``calibration_note`` set; ``prediction`` itself when ``cal`` is None or there is nothing
    timed. Tokens/s are divided by the ``output`` factor (measured / predicted tokens/s is
    stored as its inverse: every factor says how much *slower* than predicted)."""
    if cal is None or prediction.reason:
        return prediction
    out = copy.deepcopy(prediction)
    out_f = cal.factors.get("output")
    for p in out.roles.values():
        for figure, attr in (("ttftMs", "ttft_ms"), ("ttftMedianMs", "ttft_median_ms"),
                             ("tpotMs", "tpot_ms")):
            f = cal.on(figure)
            if getattr(p, attr) is not None and f is not None:
                setattr(p, attr, _scale(getattr(p, attr), f))
                p.calibrated[figure] = f
        if p.ttft_parts_ms and cal.on("ttftMs") is not None:
            p.ttft_parts_ms = {k: v * cal.on("ttftMs").value for k, v in p.ttft_parts_ms.items()}
        for figure, attr in (("outputTokensPerSec", "output_total"),
                             ("inputTokensPerSec", "input_total")):
            if getattr(p, attr) is not None and out_f is not None:
                setattr(p, attr, _scale(getattr(p, attr), out_f, inverse=True, digits=None))
                p.calibrated[figure] = out_f
        if p.calibrated:
            p.calibration_note = f"profile {cal.profile}" + (f"; {cal.note}" if cal.note else "")
    if out_f is not None:
        out.total_tps /= out_f.value
        out.output_tps /= out_f.value
    return out


def apply_candidate(cand, cal: Calibration | None):
    """A copy of a planner :class:`~generator.perf.candidate.Candidate` with its TTFT, TPOT and
    tokens/s calibrated (as :func:`apply`); ``cand`` itself when ``cal`` is None."""
    if cal is None or not cand.fits:
        return cand
    out = copy.deepcopy(cand)
    ttft, tpot, rate = cal.factors.get("ttft"), cal.factors.get("tpot"), cal.factors.get("output")
    if ttft is not None:
        out.ttft_ms *= ttft.value
        if out.ttft_parts_ms:
            out.ttft_parts_ms = {k: v * ttft.value for k, v in out.ttft_parts_ms.items()}
        if out.ttft_median_ms is not None:
            out.ttft_median_ms *= ttft.value
    if tpot is not None:
        out.tpot_ms *= tpot.value
    if rate is not None:
        out.output_tps /= rate.value
        out.total_tps /= rate.value
    return out
