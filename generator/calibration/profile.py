"""Calibration profiles: per-term-group factors fitted on benchmark runs of one configuration.

``fit`` predicts each run at its own traffic (its mean input/output lengths and the requests it
held in flight) with the deployment's model and fits, per group of terms
(:data:`generator.perf.calibrated.GROUPS`), the geometric mean of measured / predicted (for
tokens/s: predicted / measured, so every factor says how much slower than predicted); the
residual is the largest relative difference left between a run and its calibrated prediction.
``calibration_for`` turns a profile into the factors the prediction takes, or says why not
(CAL001: another model, GPU, engine release or layout; docs/calibration.md).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import Finding, Location, Severity
from ..perf.calibrated import GROUPS, Calibration, Factor
from ..deployment import Deployment, at_spec
from ..perf.predict import Prediction
from ..spec.load import parse_yaml_file
from ..spec.models import InferenceDeployment, Sizing, Traffic
from ..spec.validate import pydantic_findings
from .config import configuration, differences
from .results import MemoryLine, Run

#: The figure each group is fitted on (the client's mean; medians and p99 are compared only).
FITTED = {"ttft": "ttftMs", "tpot": "tpotMs", "output": "outputTokensPerSec"}


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FactorDoc(_M):
    """One group's factor (perf/calibrated.py ``Factor``)."""

    factor: float = Field(gt=0, le=1e6, allow_inf_nan=False)
    runs: int = Field(ge=1)
    residual: float = Field(ge=0, allow_inf_nan=False)


class RunDoc(_M):
    """One run the profile was fitted on: its file, client, traffic, predicted and measured
    figures (ms, tokens/s)."""

    file: str
    client: str
    traffic: dict[str, float]
    predicted: dict[str, float | None]
    measured: dict[str, float | None]


class ProfileSpec(_M):
    """``spec`` of a CalibrationProfile."""

    configuration: dict = Field(description="model, engine, roles (GPU, layout): where the "
                                "factors hold; key: their hash")
    factors: dict[Literal["ttft", "tpot", "output"], FactorDoc]
    runs: list[RunDoc] = Field(min_length=1)
    memory: list[dict] = Field(default_factory=list)


class CalibrationProfile(_M):
    """The document ``gen calibrate -o`` writes (docs/calibration.md)."""

    apiVersion: Literal["moegen.dev/v1alpha1"]
    kind: Literal["CalibrationProfile"]
    metadata: dict[str, str]
    spec: ProfileSpec


def at_traffic(doc: InferenceDeployment, input_tokens: int, output_tokens: int,
               concurrency: float) -> InferenceDeployment:
    """``doc`` with ``spec.traffic`` at these mean lengths and the decoding roles sized for
    ``concurrency`` requests in flight over the deployment (split over their replicas)."""
    s = doc.spec
    replicas = sum(r.replicas for r in s.roles if r.mode != "prefill") or 1
    per = max(1, round(concurrency / replicas))
    roles = [r if r.mode == "prefill" else r.model_copy(update={
        "sizing": (r.sizing or Sizing()).model_copy(update={"concurrency": per})})
        for r in s.roles]
    acceptance = s.traffic.acceptance if s.traffic is not None else 0.7
    traffic = Traffic(inputTokens=max(1, input_tokens), outputTokens=max(1, output_tokens),
                      acceptance=acceptance)
    return doc.model_copy(update={"spec": s.model_copy(update={"roles": roles,
                                                               "traffic": traffic})})


def predicted_figures(pred: Prediction) -> dict[str, float | None]:
    """The deployment-level figures a benchmark client measures, from a prediction: TTFT of
    the role that prefills, TPOT of the role that decodes, the deployment's output tokens/s."""
    ttft = next((p for p in pred.roles.values() if p.ttft_ms is not None), None)
    tpot = next((p for p in pred.roles.values() if p.tpot_ms is not None), None)
    return {"ttftMs": ttft.ttft_ms if ttft else None,
            "ttftMedianMs": ttft.ttft_median_ms if ttft else None,
            "tpotMs": tpot.tpot_ms if tpot else None,
            "outputTokensPerSec": round(pred.output_tps, 1) if not pred.reason else None}


def _ratio(group: str, measured: float | None, predicted: float | None) -> float | None:
    if not measured or not predicted or measured <= 0 or predicted <= 0:
        return None
    return predicted / measured if group == "output" else measured / predicted


def fit_factors(rows: list[tuple[dict, dict]]) -> dict[str, Factor]:
    """Per group, the geometric mean of the runs' ratios and the largest residual left
    (``rows``: (predicted, measured) figures per run)."""
    out = {}
    for group, figure in FITTED.items():
        ratios = [x for x in (_ratio(group, m.get(figure), p.get(figure)) for p, m in rows)
                  if x is not None]
        if not ratios:
            continue
        factor = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        out[group] = Factor(factor, len(ratios), max(abs(x / factor - 1) for x in ratios))
    return out


def fit(model: Deployment, runs: list[Run], memory: list[tuple[MemoryLine, dict]],
        name: str) -> tuple[dict, list[tuple[Run, dict]]]:
    """The profile document (a plain dict, :class:`CalibrationProfile`'s form) fitted on
    ``runs`` of the deployment ``model``'s configuration, and each run with its prediction at
    its own traffic (the same deployment model at that traffic: ``deployment.at_spec``).
    ``memory``: each log's line with the sizing it is compared with (shown, not applied)."""
    doc = model.spec
    rows = []
    for run in runs:
        pred = at_spec(model, at_traffic(doc, run.input_tokens, run.output_tokens,
                                         run.concurrency)).prediction
        rows.append((run, predicted_figures(pred)))
    factors = fit_factors([(p, r.figures()) for r, p in rows])
    runs_doc = [{"file": r.file, "client": r.client,
                 "traffic": {"inputTokens": r.input_tokens, "outputTokens": r.output_tokens,
                             "concurrency": round(r.concurrency, 2)},
                 "predicted": p, "measured": {k: (round(v, 3) if v is not None else None)
                                              for k, v in r.figures().items()}}
                for r, p in rows]
    mem_doc = [{"role": m.role, "file": m.file, "engine": m.engine,
                "weightsGiB": {"measured": m.weights_gib, "predicted": z.get("weightsGiB")},
                "kvTokensPerRank": {"measured": m.kv_tokens, "predicted": z.get("kvTokensPerRank")}}
               for m, z in memory]
    profile = {"apiVersion": "moegen.dev/v1alpha1", "kind": "CalibrationProfile",
               "metadata": {"name": name},
               "spec": {"configuration": configuration(doc),
                        "factors": {g: f.to_json() for g, f in factors.items()},
                        "runs": runs_doc, "memory": mem_doc}}
    return profile, rows


def load_profile(path: Path) -> tuple[CalibrationProfile | None, list[Finding]]:
    """Read and check a profile file (LOAD/SCH findings at its own lines)."""
    data, prov, findings = parse_yaml_file(path)
    if findings:
        return None, findings
    return pydantic_findings(CalibrationProfile, data, prov)


def calibration_for(profile: CalibrationProfile, doc: InferenceDeployment, where: Location,
                    path: str) -> tuple[Calibration | None, list[Finding]]:
    """The factors ``doc``'s prediction takes from ``profile``, or None with a CAL001 warning
    when the profile was measured on another configuration (it is then not applied); a CAL003
    notice when the spec's traffic is not the runs' (the factors are applied as measured)."""
    here = configuration(doc)
    diff = differences(profile.spec.configuration, here)
    name = profile.metadata.get("name", "")
    if diff:
        return None, [Finding(
            "CAL001", Severity.WARNING, path,
            f"calibration profile {name!r} was measured on another configuration: "
            + "; ".join(diff) + ": not applied, the predictions are the model's",
            "run gen bench on this deployment and gen calibrate its results", where)]
    factors = {g: Factor(f.factor, f.runs, f.residual) for g, f in profile.spec.factors.items()
               if g in GROUPS}
    note, findings = _traffic_note(profile, doc), []
    if note:
        findings.append(Finding("CAL003", Severity.NOTICE, path,
                                f"calibration profile {name!r}: {note}; its factors are "
                                "applied as measured", "", where))
    return Calibration(factors, name, note), findings


def _traffic_note(profile: CalibrationProfile, doc: InferenceDeployment) -> str:
    """What differs between the runs' traffic and the spec's ("" when a run matches it)."""
    s = doc.spec
    if s.traffic is None:
        return ""
    conc = sum(r.replicas * (r.sizing.concurrency if r.sizing
                             and isinstance(r.sizing.concurrency, int) else 1)
               for r in s.roles if r.mode != "prefill")
    want = (s.traffic.inputTokens, s.traffic.outputTokens, conc)
    seen = [(int(r.traffic.get("inputTokens", 0)), int(r.traffic.get("outputTokens", 0)),
             r.traffic.get("concurrency", 0)) for r in profile.spec.runs]
    if any(abs(i - want[0]) <= 0.05 * want[0] and abs(o - want[1]) <= 0.05 * want[1]
           and abs(c - want[2]) <= 0.05 * want[2] for i, o, c in seen):
        return ""
    runs = ", ".join(f"{i}/{o} tokens at concurrency {c:g}" for i, o, c in seen)
    return (f"measured at {runs}; this spec predicts at {want[0]}/{want[1]} tokens at "
            f"concurrency {want[2]}")


def read_calibration(doc: InferenceDeployment, prov, override: Path | None
                     ) -> tuple[Calibration | None, list[Finding]]:
    """The profile of ``--calibration`` (``override``) or ``spec.calibration`` (a path relative
    to the file that set it), read and matched to ``doc``: (factors or None, findings). A
    profile that cannot be read is an error at the field (or ``--calibration``)."""
    field_path = ("spec", "calibration")
    if override is not None:
        path, where, at = Path(override), Location("--calibration"), "$.spec.calibration"
    else:
        where = prov.locate(field_path)
        base = Path(where.file).parent if where.file else Path(".")
        path = Path(doc.spec.calibration)
        path = path if path.is_absolute() else base / path
        at = "$.spec.calibration"
    profile, findings = load_profile(path)
    if profile is None:
        head = Finding("CAL002", Severity.ERROR, at,
                       f"calibration profile {path} cannot be used: " + "; ".join(
                           f"{f.path or f.location.file}: {f.message}" for f in findings[:3]),
                       "give a file gen calibrate -o wrote (the path is relative to the spec "
                       "file that sets spec.calibration)", where)
        return None, [head]
    return calibration_for(profile, doc, where, at)
