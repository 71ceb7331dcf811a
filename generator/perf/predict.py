"""What a deployment spec will do: each role's predicted TTFT, TPOT and tokens/s.

An InferenceDeployment with ``spec.traffic`` (mean input/output tokens, draft acceptance) is
timed by :func:`evaluate.evaluate`, the planner's model, on the deployment's own role inputs and
sizing (``generator.deployment.Deployment``: the layout, serving settings, speculative config
and HBM plan the rendered engines get, the MTP module a prefill role carries included); the
fixed-layout PlanRequest the spec describes (docs/spec.md §5.1; ``workload.concurrency`` = the
decoding roles' ``sizing.concurrency`` x replicas) carries the workload and network. ``gen size``, ``gen report`` and the Grafana dashboard show the result.
The spec itself was already checked by ``gen validate``; nothing is judged again here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from pydantic import ValidationError

from ..catalog import ARCHITECTURES
from ..sizing.host import LOAD_GBPS_DEFAULT
from ..spec.bandwidth import of_deployment
from ..spec.models import ENGINE_DEFAULT, InferenceDeployment
from ..spec.request import PlanModel, PlanRequest
from .candidate import ttft_split_json
from .evaluate import evaluate
from .inputs import prediction_inputs
from .regimes import roles_regimes

if TYPE_CHECKING:
    from ..roles import RoleInput
    from ..sizing import RoleSizing

#: The longest TTFT, as a multiple of the unloaded one, that a steady state of the model has: the
#: M/D/1 wait at prefill at its utilisation clamp 0.95 (perf/loop.py ``wait``):
#: 1 + 0.95 / (2 x 0.05) = 10.5. A prediction beyond it is the closed loop's overflow (the sized
#: concurrency exceeds the capacity: TTFT = concurrency / R - OSL x TPOT), i.e. requests queueing
#: without bound in front of prefill, not an operating point (rule PRF030).
QUEUE_BOUND = 1 + 0.95 / (2 * (1 - 0.95))
#: Where an InferenceDeployment states each workload input of its prediction
#: (perf/inputs.py ``prediction_inputs``); the concurrency is derived from the roles
#: (:func:`concurrency_input`).
WHERE = {"inputTokens": "spec.traffic.inputTokens", "outputTokens": "spec.traffic.outputTokens",
         "acceptance": "spec.traffic.acceptance"}


def concurrency_input(doc: InferenceDeployment, req: PlanRequest) -> tuple[str, str]:
    """The basis and arithmetic of the concurrency a deployment's prediction is for: the sum
    over its decoding roles of replicas x ``sizing.concurrency`` (``derived``), each role's
    count as the request carries it; ``assumed`` when a role sizes for ``engine-default`` (the
    engine's own default stands in). Example: ``derived``, ``decode: 1 x 200
    (roles[].replicas x sizing.concurrency)``."""
    stated = {r.name: r for r in doc.spec.roles}
    terms, basis = [], "derived"
    for r in req.spec.roles or []:
        if r.mode == "prefill":
            continue
        terms.append(f"{r.name}: {r.replicas} x {r.sizing.concurrency}")
        own = stated.get(r.name)
        if own is not None and own.sizing is not None \
                and own.sizing.concurrency == ENGINE_DEFAULT:
            basis = "assumed"
            terms[-1] += " (the engine's default)"
    return basis, " + ".join(terms) + " (roles[].replicas x sizing.concurrency)"


@dataclass
class RolePrediction:
    """One role at the predicted operating point. Times in ms; rates in tokens/s.

    Attributes:
        name, mode: the role.
        ttft_ms: mean time to first token of a request (prefill/unified roles; PD: prefill +
            KV transfer), None for decode roles.
        ttft_median_ms: its median (the queue before prefill at its median, none below half
            load: perf/loop.py ``median_wait``).
        tpot_ms: time per output token (decode/unified), None for prefill.
        output_per_node, input_per_node: the role's own capacity per node (decode/unified:
            output tokens/s at its batch; prefill/unified: input tokens/s with every GPU busy).
        output_total: decode/unified output tokens/s the role delivers at the sized load (what
            the sum of its pods' ``generation_tokens`` rates reaches: the deployment's output
            rate, below the role's capacity when prefill binds).
        input_total: prefill/unified input tokens/s the role processes at that load.
        batch_per_rank: sequences per decode rank the role is sized for (``sizing.concurrency``).
        fed_batch: sequences per decode rank at the predicted operating point (fewer when
            prefill cannot feed the sized batch); TPOT is timed at this batch.
        weights_gib, kv_tokens_per_rank: what the timing assumed of the role's memory: its
            weights per GPU (GiB) and KV tokens per rank, the deployment's sizing.
        ttft_parts_ms: the mean TTFT's terms, ms, service and queueing (perf/loop.py
            ``ttft_parts``; JSON ``ttftServiceMs``, ``ttftQueueMs``, ``ttftPartsMs``).
        regimes: per figure this role quotes (``ttftMs``, ``tpotMs``, ``outputTokensPerSec``,
            ``inputTokensPerSec``), its regime and measured bench error
            (:class:`~generator.perf.regimes.RegimeError`).
        calibrated: per figure a calibration profile scaled, its factor
            (:class:`~generator.perf.calibrated.Factor`); ``calibration_note``: which profile, and
            what differs from the configuration it was measured on (perf/calibrated.py ``apply``).
    """

    name: str
    mode: str
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    ttft_median_ms: float | None = None
    output_per_node: int | None = None
    input_per_node: int | None = None
    output_total: int | None = None
    input_total: int | None = None
    batch_per_rank: int | None = None
    fed_batch: int | None = None
    weights_gib: float | None = None
    kv_tokens_per_rank: int | None = None
    regimes: dict = field(default_factory=dict)
    calibrated: dict = field(default_factory=dict)
    calibration_note: str = ""
    ttft_parts_ms: dict | None = None

    def to_json(self) -> dict:
        """Camel-case JSON, absent figures left out; ``regimes`` per figure quoted; with a
        calibration profile, ``calibration``: ``{"profile": note, "figures": {figure: {"factor",
        "runs", "residual"}}}``."""
        out = {"ttftMs": self.ttft_ms, "ttftMedianMs": self.ttft_median_ms,
               "tpotMs": self.tpot_ms,
               "outputTokensPerSecPerNode": self.output_per_node,
               "inputTokensPerSecPerNode": self.input_per_node,
               "outputTokensPerSec": self.output_total,
               "inputTokensPerSec": self.input_total,
               "batchPerRank": self.batch_per_rank, "fedBatchPerRank": self.fed_batch,
               "weightsGiB": self.weights_gib, "kvTokensPerRank": self.kv_tokens_per_rank}
        out = {k: v for k, v in out.items() if v is not None} | ttft_split_json(self.ttft_parts_ms)
        if self.regimes:
            out["regimes"] = {k: e.to_json() for k, e in self.regimes.items()}
        if self.calibrated:
            out["calibration"] = {"profile": self.calibration_note, "figures": {
                k: f.to_json() for k, f in sorted(self.calibrated.items())}}
        return out


@dataclass
class Prediction:
    """The deployment's predicted figures, or why there are none (``reason``).

    Attributes:
        roles: per role name.
        total_tps, output_tps: input + output and output tokens/s of the whole deployment.
        bound: the binding term (``decode HBM bandwidth``, ``prefill compute``, ...).
        assumptions: the model's stated assumptions (perf.py constants, the request shape).
        inputs: what the prediction rests on, each stated, derived, assumed or from the
            catalog (perf/inputs.py ``prediction_inputs``).
        notes: the model's warnings (e.g. an overlap the engine skips).
    """

    roles: dict[str, RolePrediction] = field(default_factory=dict)
    total_tps: float = 0.0
    output_tps: float = 0.0
    bound: str = ""
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reason: str | None = None
    inputs: list[dict] = field(default_factory=list)
    #: Sanity hits on the prediction itself, ``(code, path, message, hint)`` (:func:`sanity`);
    #: ``generator/pipeline.py`` turns them into located findings.
    sanity: list[tuple[str, tuple, str, str]] = field(default_factory=list)
    findings: list = field(default_factory=list)

    def to_json(self) -> dict:
        """``{"totalTokensPerSec", "outputTokensPerSec", "bound", "assumptions", "notes",
        "inputs"}`` or ``{"reason"}``."""
        if self.reason:
            return {"reason": self.reason}
        out = {"totalTokensPerSec": round(self.total_tps),
               "outputTokensPerSec": round(self.output_tps), "bound": self.bound,
               "assumptions": self.assumptions, "notes": self.notes, "inputs": self.inputs}
        if self.findings:
            out["findings"] = [f.to_json() for f in self.findings]
        return out


def plan_request(doc: InferenceDeployment,
                 loads: Sequence[int] | None = None) -> PlanRequest | str:
    """The fixed-layout PlanRequest ``doc`` describes (its workload, network, speculative
    acceptance and roles: what the timing needs besides the deployment's role inputs and
    sizing), or why it cannot be timed. A model given as ``config:`` has no catalog id: the
    request's ``model.architecture`` is then None (the timing reads the deployment's
    capabilities, never the id). ``loads``: each role's sequences per instance as the deployment
    model resolved them (``RoleInput.concurrency``: ``sizing.concurrency: engine-default`` is
    the engine's own default there), per role of ``doc``; without it the stated numbers."""
    s = doc.spec
    roles = [r if loads is None or not r.sizing or r.sizing.concurrency != ENGINE_DEFAULT
             else r.model_copy(update={"sizing": r.sizing.model_copy(
                 update={"concurrency": loads[i]})})
             for i, r in enumerate(s.roles)]
    if s.traffic is None:
        return "set spec.traffic (mean inputTokens/outputTokens) for predicted TTFT/TPOT"
    modes = sorted(r.mode for r in s.roles)
    if modes not in (["decode", "prefill"], ["unified"]):
        return ("the performance model times one prefill + one decode role, or one unified "
                f"role; this spec has {', '.join(modes)}")
    unsized = [r.name for r in roles if r.mode != "prefill"
               and (r.sizing is None or not isinstance(r.sizing.concurrency, int))]
    if unsized:
        return (f"set roles[].sizing.concurrency on {', '.join(unsized)}: the load the "
                "prediction is for")
    concurrency = sum(r.replicas * r.sizing.concurrency for r in roles if r.mode != "prefill")
    builtin = s.model.architecture in ARCHITECTURES
    spec = {
        "model": {"architecture": s.model.architecture if builtin else next(iter(ARCHITECTURES)),
                  "weights": s.model.weights, "name": s.model.name},
        "engine": {"name": s.engine.name, "version": s.engine.version},
        "nodePools": {n: {"gpu": p.gpu, "gpusPerNode": p.gpusPerNode, "nodes": p.nodes}
                      for n, p in s.nodePools.items()},
        "network": {"interNodeGbps": of_deployment(doc).gbps,
                    "mnnvl": s.network.computeDomain is not None},
        "workload": {"inputTokens": s.traffic.inputTokens,
                     "outputTokens": s.traffic.outputTokens, "concurrency": concurrency},
        "roles": [r.model_dump(exclude_none=True) for r in roles],
    }
    if s.serving is not None:
        spec["serving"] = s.serving.model_dump(exclude_none=True)
        if s.serving.kvCacheDtype:
            spec["constraints"] = {"kvCacheDtype": s.serving.kvCacheDtype}
    spec_roles = [r for r in s.roles if r.speculative is not None]
    if spec_roles:
        spec["speculative"] = {"numSpeculativeTokens":
                               spec_roles[0].speculative.numSpeculativeTokens}
        if "acceptance" in s.traffic.model_fields_set:   # else the same default, assumed
            spec["speculative"]["acceptance"] = s.traffic.acceptance
    try:
        req = PlanRequest.model_validate({"apiVersion": "moegen.dev/v1alpha1",
                                          "kind": "PlanRequest",
                                          "metadata": {"name": doc.metadata.name},
                                          "spec": spec})
    except ValidationError as exc:   # a value the planner's request does not take (a format)
        first = exc.errors()[0]
        return (f"the performance model cannot take {'.'.join(map(str, first['loc']))}: "
                f"{first['msg']}")
    if builtin:
        return req
    model = PlanModel.model_construct(architecture=None, weights=s.model.weights,
                                      name=s.model.name)
    return req.model_copy(update={"spec": req.spec.model_copy(update={"model": model})})


def predict(doc: InferenceDeployment,
            deployed: Sequence[tuple[RoleInput, RoleSizing]]) -> Prediction:
    """Each role's predicted TTFT, TPOT and tokens/s (see the module docstring) of the
    deployment's own role inputs and sizing (``deployed``, per role of ``doc``); a
    :class:`Prediction` with ``reason`` set when the spec cannot be timed."""
    req = plan_request(doc, [r.concurrency for r, _ in deployed])
    if isinstance(req, str):
        return Prediction(reason=req)
    res = evaluate(req, deployed=deployed)
    cand = res.candidates[0]
    if not cand.fits:
        return Prediction(reason=f"not timed: {cand.bound}")
    s = doc.spec
    out = Prediction(total_tps=cand.total_tps, output_tps=cand.output_tps, bound=cand.bound,
                     assumptions=res.assumptions, notes=list(cand.notes),
                     inputs=_inputs(doc, req))
    regimes = roles_regimes(s.roles, s.nodePools, deployed[0][0].arch, s.engine.name,
                            s.engine.version, s.model.weights,
                            any(r.speculative is not None for r in s.roles))
    for r, j in zip(s.roles, cand.roles):
        p = RolePrediction(r.name, r.mode, batch_per_rank=j.get("batchPerRank"),
                           output_per_node=j.get("outputTokensPerSecPerNode"),
                           input_per_node=j.get("inputTokensPerSecPerNode"),
                           weights_gib=j.get("weightsGiB"),
                           kv_tokens_per_rank=j.get("kvTokensPerRank"))
        if r.mode != "decode":
            p.ttft_ms = round(cand.ttft_ms, 1)
            if cand.ttft_median_ms is not None:
                p.ttft_median_ms = round(cand.ttft_median_ms, 1)
            p.ttft_parts_ms = cand.ttft_parts_ms
            p.input_total = round(cand.total_tps - cand.output_tps)
            p.regimes |= {k: regimes[k] for k in ("ttftMs", "inputTokensPerSec")}
        if r.mode != "prefill":
            p.tpot_ms = round(cand.tpot_ms, 1)
            p.fed_batch = cand.decode_batch or p.batch_per_rank
            p.output_total = round(cand.output_tps)
            p.regimes |= {k: regimes[k] for k in ("tpotMs", "outputTokensPerSec")}
        out.roles[r.name] = p
    out.sanity = sanity(doc, req, cand.ttft_ms, out, deployed)
    return out


def _inputs(doc: InferenceDeployment, req: PlanRequest) -> list[dict]:
    """The prediction's inputs (perf/inputs.py): the request's, the concurrency derived from
    the roles (:func:`concurrency_input`)."""
    basis, how = concurrency_input(doc, req)
    out = prediction_inputs(req, of_deployment(doc), WHERE | {"concurrency": how},
                            {"concurrency": basis})
    return out + [weight_load_input(doc.spec.model.loadGBps)]


def weight_load_input(load_gbps: float | None) -> dict:
    """The weights volume's read rate the cold start and the startup probe rest on
    (sizing/host.py ``host_plan``; generator/durations.py), GB/s: ``model.loadGBps`` (stated)
    or :data:`~generator.sizing.host.LOAD_GBPS_DEFAULT` (assumed)."""
    if load_gbps:
        return {"name": "weightLoadGBps", "value": float(load_gbps), "unit": "GB/s",
                "basis": "stated", "from": "spec.model.loadGBps (cold start, startup probe)"}
    return {"name": "weightLoadGBps", "value": LOAD_GBPS_DEFAULT, "unit": "GB/s",
            "basis": "assumed",
            "from": "spec.model.loadGBps unset: a network file system or block volume's rate "
                    "(cold start, startup probe)"}


def _unloaded_ttft_ms(req: PlanRequest, deployed) -> float | None:
    """The TTFT of one request alone on the same layout (concurrency 1), ms."""
    wl = req.spec.workload.model_copy(update={"concurrency": 1, "requestsPerSecond": None})
    alone = req.model_copy(update={"spec": req.spec.model_copy(update={"workload": wl})})
    try:
        cand = evaluate(alone, deployed=deployed).candidates[0]
    except IndexError:
        return None
    return cand.ttft_ms if cand.fits and cand.ttft_ms > 0 else None


def sanity(doc: InferenceDeployment, req: PlanRequest, ttft_ms: float,
           pred: Prediction, deployed) -> list[tuple[str, tuple, str, str]]:
    """Predictions that are not an operating point (rule PRF030): a TTFT beyond
    :data:`QUEUE_BOUND` x the unloaded TTFT means the sized concurrency overflows the capacity and
    requests queue for prefill without bound. Returns ``(code, path, message, hint)``."""
    alone = _unloaded_ttft_ms(req, deployed)
    if alone is None or ttft_ms <= QUEUE_BOUND * alone:
        return []
    out = []
    for i, role in enumerate(doc.spec.roles):
        p = pred.roles.get(role.name)
        if p is None or role.mode == "prefill" or p.fed_batch is None:
            continue
        fed = (f"; decode keeps {p.fed_batch} of the {p.batch_per_rank} sequences per rank it is "
               "sized for" if p.batch_per_rank and p.fed_batch < p.batch_per_rank else "")
        out.append(("PRF030", ("spec", "roles", i, "sizing", "concurrency"),
                    f"role {role.name!r}: predicted TTFT {ttft_ms:,.0f} ms is "
                    f"{ttft_ms / alone:.0f}x the {alone:,.0f} ms of a request alone, beyond the "
                    f"{QUEUE_BOUND:g}x wait of a 95%-busy prefill: {role.sizing.concurrency} "
                    f"sequences overflow what the deployment serves, and requests queue for "
                    f"prefill without bound{fed}",
                    "add prefill capacity (prefill replicas or nodes), or size for fewer "
                    "sequences (sizing.concurrency)"))
        break
    return out
