"""``gen plan`` on a PlanRequest with ``spec.roles`` (docs/spec.md §5.1): evaluate exactly those
roles under the workload, search nothing.

The roles are the InferenceDeployment's role objects on the request's pools. Each is timed with
the planner's performance model on the deployment's own role input and sizing (``deployed``: the
``generator.deployment.Deployment`` of the spec the request describes, built by
``capacity/judge.py``, or of the spec ``gen size`` predicts); a layout that has none (a role
whose layout is impossible) is sized here with the validator's code only to report why it does
not fit; the deployment is one prefill and
one decode role, or one unified role. ``workload.concurrency`` is the number of sequences in
flight over the whole deployment: each decode rank holds ceil(concurrency / decode ranks).
The result is the only candidate (rank 1), with per role ``outputTokensPerSecPerNode`` (decode,
unified) and ``inputTokensPerSecPerNode`` (prefill, unified); ``fits`` is false, with the reasons
in its notes, when a role does not fit its GPUs or cannot hold its sequences.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..catalog import GPUS, builtin_arch
from ..engines.registry import dialect_for
from ..errors import Finding, Location, Severity
from ..layout import compute_layout
from ..roles import RoleInput
from ..sizing import RoleSizing, size_role
from ..spec import models as sm
from ..spec.load import Provenance, json_path
from ..spec.request import PlanRequest
from . import terms as perf
from .candidate import Candidate, LayoutChoice, PlanResult, RoleChoice, assumptions
from .decode import (
    bf16_compute,
    decode_estimate,
    draft_tokens,
    model_shape,
    workload_max_len,
)
from .interleave import prefill_delayer_passes
from .kernels import moe_kernel
from .loop import pd_candidate, unified_candidate


def _role_input(req: PlanRequest, role: sm.Role, arch, model: sm.Model) -> RoleInput:
    s = req.spec
    pool = s.nodePools[role.nodePool]
    p = role.parallel
    lay = compute_layout(p.tensor, p.data, p.pipeline, p.expert, role.workload,
                         pool.gpusPerNode, role.replicas)
    # The request's constraints are the defaults its serving blocks override.
    wl = s.workload
    base = sm.Serving(kvCacheDtype=s.constraints.kvCacheDtype,
                      maxModelLen=workload_max_len(arch, wl))
    serving = sm.merged_serving(base, s.serving, role.serving)
    speculative = role.speculative
    if speculative is None and s.speculative and arch.mtp_layers and role.mode != "prefill":
        speculative = sm.Speculative(method="mtp",
                                     numSpeculativeTokens=s.speculative.numSpeculativeTokens)
    return RoleInput(name=role.name, mode=role.mode, model=model, arch=arch, serving=serving,
                     parallel=p, moe=role.moe, speculative=speculative,
                     kv_transfer=role.kvTransfer, network=sm.Network(), layout=lay,
                     pd=role.mode != "unified", concurrency=1)


def evaluate(req: PlanRequest, prov: Provenance | None = None,
             judged: list[Finding] | tuple = (),
             deployed: Sequence[tuple[RoleInput, RoleSizing]] | None = None) -> PlanResult:
    """The request's roles as the only candidate (see the module docstring); ``prov`` locates
    the findings of a layout that does not fit in the request file. ``judged``: what the
    validator's rules say about the layout (``generator.capacity.judge.judge``;
    empty when the layout comes from a checked deployment). ``deployed``: per role of the
    request, the deployment's own role input and sizing (``generator.deployment.Deployment``
    ``roles`` and ``sizing``), timed as they are: the prediction times what is rendered, the
    MTP module a prefill role carries and the maxModelLen the engine is given included;
    without it each role is built and sized from the request (:func:`_role_input`)."""
    s = req.spec
    wl = s.workload
    roles = list(s.roles or [])
    if deployed is not None:
        inputs = [ri for ri, _ in deployed]
        arch = inputs[0].arch
    else:
        arch = builtin_arch(s.model.architecture)
        model = sm.Model(name=s.model.name or s.model.architecture,
                         architecture=s.model.architecture, weights=s.model.weights, path="/m")
        inputs = [_role_input(req, r, arch, model) for r in roles]
    decoding = [(r, ri) for r, ri in zip(roles, inputs) if r.mode in ("decode", "unified")]
    ranks = sum(r.replicas * ri.layout.data for r, ri in decoding) or 1
    per_rank = -(-wl.concurrency // ranks) if wl.concurrency else None
    findings: list[Finding] = [f for f in judged if f.severity is Severity.ERROR]

    finding = _finder(findings, prov)
    sizings = [z for _, z in deployed] if deployed is not None else None
    sized = _size_fixed(req, roles, inputs, sizings, per_rank, ranks, finding)
    findings = list({(f.code, f.path): f for f in findings}.values())   # one per code and field
    warned = [f"warning {f.code}: {f.message}" for f in judged if f.severity is Severity.WARNING]
    notes = [f.message for f in findings] + warned
    fits = not findings
    modes = sorted(r.mode for r in roles)   # request_findings (PLN002) checked the modes
    if not fits:
        cand = Candidate([_role_json(r) for r in roles], _gpus(roles, inputs), 0, 0, 0, 0, 0,
                         False, False, "the layout does not fit", notes, rank=1,
                         findings=findings)
        return PlanResult([cand], False, "the layout does not fit: " + "; ".join(notes),
                          assumptions(req))

    def choice(name: str) -> RoleChoice:
        r, ri, _ = sized[name]
        lay = ri.layout
        return RoleChoice(r.mode, r.nodePool, LayoutChoice(lay.tensor, lay.data, lay.pipeline,
                                                           lay.expert_parallel), r.replicas)

    def prefill_rate(name: str) -> perf.PrefillEstimate:
        r, ri, z = sized[name]
        lay, pool = ri.layout, s.nodePools[r.nodePool]
        gpu = GPUS[pool.gpu]
        moe = moe_kernel(s.engine.name, gpu, s.model.weights,
                         ri.moe.all2all if ri.moe else None, r.engineArgs)
        return perf.prefill(model_shape(arch, s.model.weights, 0), gpu,
                            isl=wl.inputTokens, tensor=lay.tensor, data=lay.data,
                            pipeline=lay.pipeline, expert=lay.expert_parallel,
                            gpus_per_node=pool.gpusPerNode,
                            inter_gbps=s.network.interNodeGbps, weights_bytes=z.weights * 2**30,
                            bf16=bf16_compute(s.model.weights),
                            overlap=ri.moe.overlap if ri.moe else None, mnnvl=s.network.mnnvl,
                            batch_tokens=z.batched_tokens,
                            graphs=s.engine.name == "vllm" and not ri.serving.enforceEager,
                            moe=moe, chunk_tokens=perf.prefill_chunk(
                                s.engine.name, z.batched_tokens, lay.data))

    dec_name = next(r.name for r in roles if r.mode in ("decode", "unified"))
    r, ri, z = sized[dec_name]
    pool = s.nodePools[r.nodePool]
    est = decode_estimate(req, ri, z, pool, per_rank, ranks=r.replicas * ri.layout.data,
                          engine_args=r.engineArgs)
    if est is None:   # the KV cache holds less than one sequence of the mean context
        i = roles.index(r)
        finding("SIZ002", i, "parallel",
                f"role {r.name!r}: its {z.kv_tokens_per_rank:,} KV tokens per rank hold no "
                f"sequence of {wl.inputTokens + wl.outputTokens // 2:,} tokens (input + "
                "output / 2)", "raise expert/tensor parallelism or use a GPU with more memory")
        cand = Candidate([_role_json(x) for x in roles], _gpus(roles, inputs),
                         z.kv_tokens_per_rank, 0, 0, 0, 0, False, False,
                         "the KV cache cannot hold the sequences", [f.message for f in findings],
                         rank=1, findings=findings)
        return PlanResult([cand], False, "the KV cache cannot hold the sequences",
                          assumptions(req))
    if modes == ["unified"]:
        cand = unified_candidate(req, choice(dec_name), prefill_rate(dec_name), est, z,
                                 retime=lambda b: decode_estimate(
                                     req, ri, z, pool, b, ranks=r.replicas * ri.layout.data,
                                     engine_args=r.engineArgs), draft=draft_tokens(req, ri),
                                 delayer_passes=prefill_delayer_passes(
                                     s.engine.name, r.engineArgs, ri.layout.data))
    else:
        pre_name = next(x.name for x in roles if x.mode == "prefill")
        cand = pd_candidate(req, choice(pre_name), choice(dec_name), prefill_rate(pre_name),
                            est, z, retime=lambda b: decode_estimate(
                                req, ri, z, pool, b, ranks=r.replicas * ri.layout.data,
                                engine_args=r.engineArgs), draft=draft_tokens(req, ri))
    cand.roles = [_role_capacity(x, xi, sized[x.name][2], s, est, prefill_rate)
                  for x, xi in zip(roles, inputs)]
    cand.notes += warned
    slo = s.slo
    cand.meets_slo = cand.fits and cand.sustains and \
        (not slo.tpotMs or cand.tpot_ms <= slo.tpotMs * 1.0001) and \
        (not slo.ttftMs or cand.ttft_ms <= slo.ttftMs * 1.0001)
    cand.rank = 1
    goal = slo.throughputTokensPerSec
    reachable = cand.meets_slo and (goal is None or cand.total_tps >= goal)
    return PlanResult([cand], reachable, cand.bound, assumptions(req))


def _role_capacity(x: sm.Role, xi: RoleInput, zx: RoleSizing, s, est: perf.DecodeEstimate,
                   prefill_rate) -> dict:
    """A role's own capacity at the evaluated operating point (what a published per-node figure
    measures): decode tokens/s of its ranks at their batch; prefill input tokens/s with every GPU
    busy (``prefill_rate(name)``); with what the timing assumed of its memory (the role's weights
    and KV per rank, ``zx``). The deployment's end-to-end rate is totalTokensPerSec."""
    doc = _role_json(x)
    doc["weightsGiB"], doc["kvTokensPerRank"] = round(zx.weights, 2), zx.kv_tokens_per_rank
    gpn = s.nodePools[x.nodePool].gpusPerNode
    nodes = -(-x.replicas * xi.layout.gpus_per_instance // gpn)
    if x.mode in ("decode", "unified"):
        doc["outputTokensPerSecPerNode"] = round(
            est.tokens_per_s_per_rank * x.replicas * xi.layout.data / nodes)
        doc["batchPerRank"] = est.batch_per_rank
        doc["tpotMsAtBatch"] = round(est.tpot_s * 1000, 1)   # the candidate's is at its load
    if x.mode in ("prefill", "unified"):
        doc["inputTokensPerSecPerNode"] = round(
            prefill_rate(x.name).requests_per_s * x.replicas * s.workload.inputTokens / nodes)
    return doc


def mean_len(z, wl) -> int:
    """Tokens a decoding sequence holds on average under the workload (input + output / 2,
    within maxModelLen): the length SIZ003 admits the concurrency at."""
    return min(z.max_model_len, wl.inputTokens + wl.outputTokens // 2)


def _role_json(r: sm.Role) -> dict:
    return {"name": r.name, "mode": r.mode, "nodePool": r.nodePool, "replicas": r.replicas,
            "parallel": r.parallel.model_dump(exclude_none=True)}


def _gpus(roles, inputs) -> int:
    return sum(r.replicas * ri.layout.gpus_per_instance for r, ri in zip(roles, inputs))


def _finder(findings: list[Finding], prov: Provenance | None):
    """A function appending an error finding at ``spec.roles[i].<field>`` to ``findings``."""
    def finding(code: str, i: int, field: str, message: str, hint: str) -> None:
        path = ("spec", "roles", i, field)
        findings.append(Finding(code, Severity.ERROR, json_path(path), message, hint,
                                prov.locate(path) if prov else Location()))
    return finding


def _size_fixed(req: PlanRequest, roles: list, inputs: list[RoleInput],
                sizings: list[RoleSizing | str | None] | None, per_rank: int | None, ranks: int,
                finding) -> dict:
    """Size each fixed role with the validator's code (or take the deployment's ``sizings``);
    report through ``finding`` a layout that is impossible (LAY001), does not fit (SIZ001),
    cannot take the workload's requests (PLN003) or cannot hold its share of the sequences at
    the mean context (SIZ003). Returns {role name: (role, role input, sizing)} of the roles
    sized."""
    s = req.spec
    wl = s.workload
    dialect = dialect_for(s.engine.name, s.engine.version) if sizings is None else None
    sized = {}
    for i, (r, ri) in enumerate(zip(roles, inputs)):
        if ri.layout.problem:
            finding("LAY001", i, "parallel", f"role {r.name!r}: {ri.layout.problem}",
                    "change tensor/data/pipeline or the pool's gpusPerNode")
            continue
        if sizings is not None:
            z = sizings[i]
            if not isinstance(z, RoleSizing):   # the deployment could not size it: a finding
                continue                        # of its own (SIZ005) says why
        else:
            ri = replace(ri, concurrency=per_rank * ri.layout.data
                         if per_rank and r.mode != "prefill" else 1)
            z = size_role(ri, GPUS[s.nodePools[r.nodePool].gpu], dialect)
        sized[r.name] = (r, ri, z)
        if z.kv_cache <= 0:
            finding("SIZ001", i, "parallel",
                    f"role {r.name!r} does not fit: weights and buffers leave no KV cache in "
                    f"the {z.gpu} budget of {z.budget:.1f} GiB (short by {-z.kv_cache:.1f} GiB)",
                    "raise expert/tensor parallelism, quantize, or use a GPU with more memory")
        need = wl.inputTokens + (wl.outputTokens if r.mode != "prefill" else 0)
        if z.max_model_len < need:
            finding("PLN003", i, "serving",
                    f"role {r.name!r}: its maxModelLen {z.max_model_len} is shorter than the "
                    f"workload's {need}-token requests, which the engine refuses",
                    f"maxModelLen >= {need}, or shorter workload.inputTokens/outputTokens")
        if z.kv_cache <= 0:
            pass
        elif r.mode != "prefill" and per_rank and not z.holds(per_rank, mean_len(z, wl)):
            finding("SIZ003", i, "parallel",
                    f"role {r.name!r}: {per_rank} sequences of {mean_len(z, wl)} tokens on "
                    f"average (input + output / 2) per rank (workload.concurrency over "
                    f"{ranks} decode ranks) exceed its {z.kv_tokens_per_rank:,} KV tokens",
                    f"at most {z.kv_tokens_per_rank // mean_len(z, wl)} sequences per rank: "
                    "lower workload.concurrency or add decode ranks")
    return sized
