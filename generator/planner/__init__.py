"""``gen plan``: search deployments for a workload and SLO, rank them by throughput.

Candidates: per role a layout from a fixed family (tensor-parallel over one node, TP over two
nodes, PP2 x TP, and data/expert-parallel groups of 1..N nodes), prefill/decode splits of the
pools (or one unified role), and instance counts that fill the nodes. Feasibility comes from the
sizing validator (``generator.sizing.size_role``: the same code ``gen validate`` runs); speed from
``planner/perf.py``. All numbers are per second and milliseconds as named.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import GPUS, arch_from_config, builtin_config
from ..engines import sglang, vllm
from ..engines.common import RoleInput
from ..layout import compute_layout
from ..sizing import RoleSizing, size_role
from ..sizing.params import inventory
from ..sizing.weights import tensor_bytes
from ..spec import models as sm
from . import perf
from .request import PlanRequest

#: Upper bound of the decode batch per DP rank the search considers (SGLang/vLLM graph sizes).
MAX_BATCH_PER_RANK = 512


@dataclass
class Candidate:
    """One evaluated deployment (SPEC.md §5 JSON via :meth:`to_json`)."""

    roles: list[dict]
    gpus: int
    kv_tokens_per_rank: int
    ttft_ms: float
    tpot_ms: float
    output_tps: float
    total_tps: float
    fits: bool
    meets_slo: bool
    bound: str
    notes: list[str] = field(default_factory=list)
    rank: int = 0

    def to_json(self) -> dict:
        """The candidate as SPEC.md §5 shows it."""
        return {"rank": self.rank, "roles": self.roles, "gpus": self.gpus,
                "kvTokensPerRank": self.kv_tokens_per_rank, "ttftMs": round(self.ttft_ms, 1),
                "tpotMs": round(self.tpot_ms, 1), "outputTokensPerSec": round(self.output_tps),
                "totalTokensPerSec": round(self.total_tps),
                "outputTokensPerSecPerGpu": round(self.output_tps / self.gpus, 1),
                "fits": self.fits, "meetsSlo": self.meets_slo, "bound": self.bound,
                "notes": self.notes}


@dataclass
class PlanResult:
    """Ranked candidates, reachability of the throughput goal and the binding constraint.

    ``alternatives``: when the goal is not reachable, what changing one input would give
    (``{"change": ..., "totalTokensPerSec": ..., "reachable": ...}``).
    """

    candidates: list[Candidate]
    reachable: bool
    bound: str
    assumptions: list[str]
    alternatives: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        """SPEC.md §5 JSON (plus assumptions and alternatives)."""
        return {"reachable": self.reachable, "bound": self.bound,
                "assumptions": self.assumptions, "alternatives": self.alternatives,
                "candidates": [c.to_json() for c in self.candidates]}


def _assumptions(req: PlanRequest) -> list[str]:
    s = req.spec
    spec_txt = (f"MTP {s.speculative.numSpeculativeTokens} token(s), acceptance "
                f"{s.speculative.acceptance}" if s.speculative else "no speculative decoding")
    return [
        f"decode: max(HBM {perf.ETA_HBM:.0%} of peak, FP8 compute {perf.ETA_DECODE_COMPUTE:.0%} of "
        f"peak) + all-to-all/all-reduce (network {perf.ETA_NET:.0%}, NVLink {perf.ETA_NVLINK:.0%}) "
        f"+ {perf.STEP_OVERHEAD_S * 1000:.0f} ms per step",
        f"prefill: compute-bound at {perf.ETA_PREFILL:.0%} of the FP8 peak (calibrated on seed 000)",
        f"context per sequence: input + output/2 = "
        f"{s.workload.inputTokens + s.workload.outputTokens // 2} tokens (mean); {spec_txt}",
        f"inter-node RDMA {s.network.interNodeGbps:g} Gbit/s per GPU; KV cache {s.constraints.kvCacheDtype}",
        "memory feasibility from the sizing validator (same code as gen validate)",
    ]


def _shape(cfg: dict, fmt: str, kv_bytes_per_token: float) -> perf.ModelShape:
    inv = inventory(cfg)
    experts = cfg.get("n_routed_experts") or 0
    topk = cfg.get("num_experts_per_tok") or 0
    moe_tensors = [t for t in inv.kinds[inv.layer_kinds[-1]] if t.component == "routed_experts"]
    expert_params = sum(t.out_dim * t.in_dim for t in moe_tensors)
    expert_bytes = sum(tensor_bytes(t, fmt) / t.experts for t in moe_tensors)
    total = inv.total_params()
    routed = inv.component_params().get("routed_experts", 0)
    moe_layers = sum(1 for k in inv.layer_kinds
                     if any(t.component == "routed_experts" for t in inv.kinds[k]))
    active = total - routed + moe_layers * topk * expert_params
    heads = cfg["num_attention_heads"]
    qk = (cfg.get("qk_nope_head_dim") or 0) + (cfg.get("qk_rope_head_dim") or 0) or cfg.get("head_dim", 128)
    v = cfg.get("v_head_dim") or cfg.get("head_dim", 128)
    latent = (cfg.get("kv_lora_rank") or cfg.get("head_dim", 512)) + (cfg.get("qk_rope_head_dim") or 0)
    window = None
    if cfg.get("index_topk"):  # sparse attention: indexer top-k (+ V4's sliding window)
        window = cfg["index_topk"] + (cfg.get("sliding_window") or 0)
    return perf.ModelShape(active_params=active, layers=cfg["num_hidden_layers"],
                           moe_layers=moe_layers, hidden=cfg["hidden_size"], heads=heads,
                           topk=topk, experts=experts, expert_bytes=expert_bytes,
                           expert_params=expert_params, kv_bytes_per_token=kv_bytes_per_token,
                           qk_head=qk, v_head=v, latent=latent, attn_window=window)


def _layouts(gpn: int, gpus: int, heads: int, mode: str) -> list[tuple[int, int, int, bool]]:
    """(tensor, data, pipeline, expert) options that use whole nodes."""
    out = []
    for tp in (gpn, 2 * gpn):
        if heads % tp == 0 and tp <= gpus:
            out.append((tp, 1, 1, False))
    if 2 * gpn <= gpus and heads % gpn == 0:
        out.append((gpn, 1, 2, False))
    d = gpn
    while d <= gpus:
        out.append((1, d, 1, True))
        d *= 2
    if mode == "prefill":
        out = [o for o in out if o[1] <= 2 * gpn]
    return out


def _role_input(name, mode, model, arch, serving, layout_args, pool, replicas, spec_tokens,
                kv_transfer, concurrency, redundant):
    t, d, p, ep = layout_args
    lay = compute_layout(t, d, p, ep, "lws", pool.gpusPerNode, replicas)
    moe = None
    if ep and arch.routed_experts:
        all2all = "deepep_low_latency" if mode != "prefill" else "deepep_high_throughput"
        moe = sm.Moe(all2all=all2all,
                     eplb=sm.Eplb(enabled=True, redundantExperts=redundant) if redundant else None)
    spec = sm.Speculative(method="mtp", numSpeculativeTokens=spec_tokens) \
        if spec_tokens and arch.mtp_layers and mode != "prefill" else None
    return RoleInput(name=name, mode=mode, model=model, arch=arch, serving=serving,
                     parallel=sm.Parallel(tensor=t, data=d, pipeline=p, expert=ep), moe=moe,
                     speculative=spec, kv_transfer=kv_transfer, network=sm.Network(),
                     layout=lay, pd=mode != "unified", concurrency=concurrency)


def _min_redundant(experts: int, ep: int) -> int:
    return (ep - experts % ep) % ep if ep > 1 else 0


def plan(req: PlanRequest, progress=None) -> PlanResult:
    """Search, evaluate and rank deployments for ``req``; when the throughput goal or the SLO is
    out of reach, also evaluate single changes that could help (FP8 weights, FP8 KV cache, a
    400 Gbit/s RDMA network) and report them as alternatives.

    ``progress(done, total)``, if given, is called as the prefill/decode splits are searched.
    """
    result = _plan(req, progress)
    if result.reachable:
        return result
    s = req.spec
    variants = []
    if s.model.weights == "bf16":
        variants.append(("weights: fp8", {"model": s.model.model_copy(update={"weights": "fp8"})}))
    if s.constraints.kvCacheDtype == "auto":
        variants.append(("kvCacheDtype: fp8", {"constraints": s.constraints.model_copy(
            update={"kvCacheDtype": "fp8"})}))
    if s.network.interNodeGbps < 400:
        variants.append(("interNodeGbps: 400", {"network": s.network.model_copy(
            update={"interNodeGbps": 400.0})}))
    for label, update in variants:
        alt = _plan(req.model_copy(update={"spec": s.model_copy(update=update)}))
        best = alt.candidates[0] if alt.candidates else None
        result.alternatives.append({
            "change": label, "reachable": alt.reachable,
            "totalTokensPerSec": round(best.total_tps) if best else 0,
            "bound": alt.bound})
    return result


def _plan(req: PlanRequest, progress=None) -> PlanResult:
    """One search over the request as given."""
    s = req.spec
    cfg = builtin_config(s.model.architecture)
    arch = arch_from_config(cfg)
    engine = s.engine.name
    version = (vllm if engine == "vllm" else sglang).dialect(s.engine.version).version
    model = sm.Model(name=s.model.name or s.model.architecture, architecture=s.model.architecture,
                     weights=s.model.weights, path="/models/model")
    wl = s.workload
    ctx_avg = wl.inputTokens + wl.outputTokens / 2
    max_len = min(arch.max_position_embeddings, wl.inputTokens + wl.outputTokens)
    serving = dict(sm.SERVING_DEFAULTS, maxModelLen=max_len, kvCacheDtype=s.constraints.kvCacheDtype,
                   gpuMemoryUtilization=None, maxNumSeqs=None, maxNumBatchedTokens=None,
                   memFractionStatic=None)
    k = s.speculative.numSpeculativeTokens if s.speculative and arch.mtp_layers else 0
    bf16 = s.model.weights == "bf16"
    pools = list(s.nodePools.items())
    cands: list[Candidate] = []

    def sized(role: RoleInput, pool) -> RoleSizing | None:
        z = size_role(role, GPUS[pool.gpu], engine, version)
        return z if z.kv_cache > 0 and z.kv_tokens_per_rank >= max_len else None

    def decode_point(role, z, pool, per_rank_needed):
        return decode_estimate(req, role, z, pool, per_rank_needed)

    def prefill_rate(role, pool):
        gpu = GPUS[pool.gpu]
        shape = _shape(cfg, s.model.weights, 0)
        lay = role.layout
        t = perf.prefill_time(shape, gpu, isl=wl.inputTokens, gpus=lay.gpus_per_instance,
                              tensor=lay.tensor, bf16=bf16)
        return t

    # --- prefill/decode disaggregated ---
    if s.constraints.disaggregation != "forbidden":
        splits = []
        if len(pools) == 2:
            splits = [(pools[0], pools[1]), (pools[1], pools[0])]
        else:
            name, pool = pools[0]
            for pn in range(1, pool.nodes):
                splits.append(((name, pool.model_copy(update={"nodes": pn})),
                               (name, pool.model_copy(update={"nodes": pool.nodes - pn}))))
        conn = sm.KvTransfer(connector="nixl" if engine == "vllm" else "mooncake")
        for n_split, ((pname, ppool), (dname, dpool)) in enumerate(splits, 1):
            if progress is not None:
                progress(n_split, len(splits))
            for pl in _layouts(ppool.gpusPerNode, ppool.gpusPerNode * ppool.nodes,
                               arch.num_attention_heads, "prefill"):
                nodes_p = max(1, pl[0] * pl[1] * pl[2] // ppool.gpusPerNode)
                np_ = ppool.nodes // nodes_p
                if np_ < 1:
                    continue
                red_p = _min_redundant(arch.routed_experts, pl[0] * pl[1]) if pl[3] else 0
                prole = _role_input("prefill", "prefill", model, arch, serving, pl, ppool, np_, 0,
                                    conn, 1, red_p)
                if prole.layout.problem or sized(prole, ppool) is None:
                    continue
                t_p = prefill_rate(prole, ppool)
                for dl in _layouts(dpool.gpusPerNode, dpool.gpusPerNode * dpool.nodes,
                                   arch.num_attention_heads, "decode"):
                    nodes_d = max(1, dl[0] * dl[1] * dl[2] // dpool.gpusPerNode)
                    nd = dpool.nodes // nodes_d
                    if nd < 1:
                        continue
                    red = _min_redundant(arch.routed_experts, dl[0] * dl[1]) if dl[3] else 0
                    per_rank = None
                    if wl.concurrency:
                        per_rank = -(-wl.concurrency // (nd * dl[1]))
                    drole = _role_input("decode", "decode", model, arch, serving, dl, dpool, nd,
                                        k, conn, per_rank * dl[1] if per_rank else 1, red)
                    if drole.layout.problem:
                        continue
                    z = sized(drole, dpool)
                    if z is None:
                        continue
                    est = decode_point(drole, z, dpool, per_rank)
                    if est is None:
                        continue
                    cands.append(_pd_candidate(req, pname, dname, pl, dl, np_, nd, t_p, est, z,
                                               ctx_avg, k))
    # --- unified ---
    if s.constraints.disaggregation != "required":
        for name, pool in pools:
            for ul in _layouts(pool.gpusPerNode, pool.gpusPerNode * pool.nodes,
                               arch.num_attention_heads, "unified"):
                nodes_u = max(1, ul[0] * ul[1] * ul[2] // pool.gpusPerNode)
                nu = pool.nodes // nodes_u
                if nu < 1:
                    continue
                red = _min_redundant(arch.routed_experts, ul[0] * ul[1]) if ul[3] else 0
                per_rank = -(-wl.concurrency // (nu * ul[1])) if wl.concurrency else None
                role = _role_input("serve", "unified", model, arch, serving, ul, pool, nu, k,
                                   None, per_rank * ul[1] if per_rank else 1, red)
                if role.layout.problem:
                    continue
                z = sized(role, pool)
                if z is None:
                    continue
                est = decode_point(role, z, pool, per_rank)
                if est is None:
                    continue
                t_p = prefill_rate(role, pool)
                cands.append(_unified_candidate(req, name, ul, nu, t_p, est, z, ctx_avg, k))

    for c in cands:   # 0.01 % slack: TTFT is solved to sit exactly on its SLO
        c.meets_slo = c.fits and (not s.slo.tpotMs or c.tpot_ms <= s.slo.tpotMs * 1.0001) and \
            (not s.slo.ttftMs or c.ttft_ms <= s.slo.ttftMs * 1.0001)
    cands.sort(key=lambda c: (not c.meets_slo, -c.total_tps, c.gpus))
    for i, c in enumerate(cands, 1):
        c.rank = i
    goal = s.slo.throughputTokensPerSec
    best = cands[0] if cands else None
    if best is None:
        return PlanResult([], False, "no layout fits in memory: the weights and one request of "
                          f"{max_len} tokens exceed every GPU's budget", _assumptions(req))
    reachable = best.meets_slo and (goal is None or best.total_tps >= goal)
    bound = best.bound
    if goal is not None and best.total_tps < goal:
        bound = (f"{best.bound}: the best layout reaches {best.total_tps:,.0f} tokens/s, "
                 f"{best.total_tps / goal:.0%} of the {goal:,.0f} goal")
    elif not best.meets_slo:
        bound = f"SLO: no layout meets it; closest is bound by {best.bound}"
    return PlanResult(cands[:20], reachable, bound, _assumptions(req))


def decode_estimate(req: PlanRequest, role: RoleInput, z: RoleSizing, pool,
                    per_rank_needed: int | None) -> perf.DecodeEstimate | None:
    """Decode operating point of a sized role: the given batch per DP rank (None if it does not
    fit the KV cache), or the largest batch within the TPOT SLO and the KV capacity."""
    s = req.spec
    cfg = role.arch.config
    wl = s.workload
    ctx_avg = wl.inputTokens + wl.outputTokens / 2
    k = s.speculative.numSpeculativeTokens if s.speculative and role.arch.mtp_layers else 0
    accepted = perf.accepted_per_step(k, s.speculative.acceptance) if k else 1.0
    gpu = GPUS[pool.gpu]
    shape = _shape(cfg, s.model.weights, z.kv_bytes_per_token)
    nonexpert = (z.weights - z.weights_by_component.get("routed_experts", 0)) * 2**30
    local = (z.weights_by_component.get("routed_experts", 0) * 2**30) / \
        max(shape.expert_bytes * shape.moe_layers, 1)
    cap_b = int(z.kv_tokens_per_rank // ctx_avg)
    lay = role.layout

    def step(b):
        return perf.decode_step(shape, gpu, batch=b, tensor=lay.tensor, data=lay.data,
                                expert=lay.expert_parallel, nonexpert_bytes=nonexpert,
                                local_experts_per_layer=local if lay.expert_parallel else 0,
                                ctx=ctx_avg, gpus_per_node=pool.gpusPerNode,
                                inter_gbps=s.network.interNodeGbps, draft=k,
                                bf16=s.model.weights == "bf16")
    if per_rank_needed is not None:
        b = per_rank_needed
        # The validator's rule (SIZ003): the required sequences fit at maxModelLen.
        if b * z.max_model_len > z.kv_tokens_per_rank:
            return None
    else:
        b = min(cap_b, MAX_BATCH_PER_RANK)
        if s.slo.tpotMs:
            while b > 1 and step(b)[0] * lay.pipeline / accepted * 1000 > s.slo.tpotMs:
                b = int(b * 0.8)
    t, bound = step(b)
    pp = lay.pipeline
    tpot = t * pp / accepted
    return perf.DecodeEstimate(b, t, tpot, b * pp * accepted / (t * pp), bound)


def _role_json(mode, pool, replicas, layout) -> dict:
    t, d, p, ep = layout
    return {"mode": mode, "nodePool": pool, "replicas": replicas,
            "parallel": {"tensor": t, "data": d, "pipeline": p, "expert": ep}}


def _max_utilisation(t_service: float, extra: float, ttft_slo_ms: float | None) -> float:
    """Highest utilisation rho of a prefill server (M/D/1: wait = rho / (2 (1 - rho)) x service)
    whose TTFT = service x (1 + wait factor) + extra stays within the SLO (0.95 without one)."""
    if not ttft_slo_ms:
        return 0.95
    x = (ttft_slo_ms / 1000 - extra) / t_service - 1
    if x <= 0:
        return 0.0
    return min(0.95, 2 * x / (1 + 2 * x))


def _pd_candidate(req, pname, dname, pl, dl, np_, nd, t_p, est, z, ctx_avg, k) -> Candidate:
    wl = req.spec.workload
    kv_t = perf.kv_transfer_time(wl.inputTokens, z.kv_bytes_per_token,
                                 req.spec.network.interNodeGbps)
    prefill_cap = np_ / t_p                                      # requests/s at 100 % busy
    rho_max = _max_utilisation(t_p, kv_t, req.spec.slo.ttftMs)
    decode_seqs = nd * dl[1] * est.batch_per_rank * dl[2]
    decode_cap = decode_seqs / (wl.outputTokens * est.tpot_s)    # requests/s (Little)
    rate = min(prefill_cap * max(rho_max, 1e-9), decode_cap)
    if wl.requestsPerSecond:
        rate = min(rate, wl.requestsPerSecond)
    rho = min(rate / prefill_cap, 0.95)
    ttft = t_p * (1 + rho / (2 * (1 - rho))) + kv_t              # M/D/1 queueing at prefill
    bound = "prefill compute" if prefill_cap * rho_max < decode_cap else est.bound
    gpus = np_ * pl[0] * pl[1] * pl[2] + nd * dl[0] * dl[1] * dl[2]
    roles = [_role_json("prefill", pname, np_, pl), _role_json("decode", dname, nd, dl)]
    notes = [f"P:D = {np_}:{nd}", f"decode batch {est.batch_per_rank} per rank",
             f"prefill {rho:.0%} busy"]
    return Candidate(roles, gpus, z.kv_tokens_per_rank, ttft * 1000, est.tpot_s * 1000,
                     rate * wl.outputTokens, rate * (wl.inputTokens + wl.outputTokens), True,
                     False, bound, notes)


def _unified_candidate(req, name, ul, nu, t_p, est, z, ctx_avg, k) -> Candidate:
    """Prefill and decode share the GPUs: every request costs its prefill time on one instance,
    during which that instance's decode stalls. With S sequences decoding at TPOT t and a
    request rate R, the busy fraction is R x t_p / n and R = S (1 - busy) / (OSL x t), hence
    R = S / (OSL x t + S x t_p / n); TPOT stretches to t / (1 - busy)."""
    wl = req.spec.workload
    seqs = nu * ul[1] * est.batch_per_rank * ul[2]
    rate = seqs / (wl.outputTokens * est.tpot_s + seqs * t_p / nu)
    if wl.requestsPerSecond:
        rate = min(rate, wl.requestsPerSecond)
    busy = min(rate * t_p / nu, 0.95)
    tpot = est.tpot_s / (1 - busy)
    ttft = t_p * (1 + busy / (2 * (1 - busy)))
    gpus = nu * ul[0] * ul[1] * ul[2]
    bound = "prefill interrupting decode (shared GPUs)" if busy > 0.3 else est.bound
    return Candidate([_role_json("unified", name, nu, ul)], gpus, z.kv_tokens_per_rank,
                     ttft * 1000, tpot * 1000, rate * wl.outputTokens,
                     rate * (wl.inputTokens + wl.outputTokens), True, False, bound,
                     [f"{busy:.0%} of the time in prefill", f"batch {est.batch_per_rank} per rank"])
