"""``gen plan``: search deployments for a workload and SLO, rank them by throughput.

Candidates: per role a layout from a fixed family (tensor-parallel over one node, TP over two
nodes, PP2 x TP, and data/expert-parallel groups of 1..N nodes), prefill/decode splits of the
pools (or one unified role), and instance counts that fill the nodes. Feasibility comes from the
sizing validator (``generator.sizing.size_role``: the same code ``gen validate`` runs); speed from
``generator/perf`` (the performance model). All numbers are per second and milliseconds as named.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from ..catalog import GPUS, builtin_arch
from ..engines.registry import dialect_for
from ..layout import min_redundant_experts
from ..perf import terms as perf
from ..perf.candidate import (
    Candidate,
    LayoutChoice,
    PlanResult,
    RoleChoice,
    assumptions,
)
from ..perf.decode import bf16_compute, decode_estimate, model_shape, workload_max_len
from ..perf.kernels import moe_kernel
from ..perf.evaluate import evaluate
from ..perf.inputs import prediction_inputs
from ..perf.loop import pd_candidate, unified_candidate
from ..roles import RoleInput
from ..sizing import RoleSizing, placement_for, size_role
from ..sizing.formats import storage
from ..sizing.params import inventory
from ..sizing.sglang_budget import fraction_with_room
from ..sizing.weights import block_misfits
from ..spec import models as sm
from ..spec.bandwidth import resolved
from ..spec.request import PlanRequest
from .judge import judge
from .layouts import DSPARK_DP_ALL2ALL, _layouts, _role_input, instances_on


def plan(req: PlanRequest, progress=None, prov=None) -> PlanResult:
    """Search, evaluate and rank deployments for ``req``; when the throughput goal or the SLO is
    out of reach, also evaluate single changes that could help (FP8 weights, FP8 KV cache, a
    400 Gbit/s RDMA network) and report them as alternatives. A request with ``spec.roles``
    is evaluated as given instead (generator/perf/evaluate.py, docs/spec.md §5.1).

    ``progress(done, total)``, if given, is called as the prefill/decode splits are searched;
    ``prov`` (the request file's :class:`~generator.spec.load.Provenance`) locates a fixed
    layout's findings in the file.

    ``network.interNodeGbps`` not stated in ``req`` is derived from ``network.rdma``
    (generator/spec/bandwidth.py); the result lists the inputs its predictions rest on
    (perf/inputs.py).
    """
    req = resolved(req)
    result = _search_or_judge(req, progress, prov)
    result.inputs = prediction_inputs(req)
    return result


def _search_or_judge(req: PlanRequest, progress, prov) -> PlanResult:
    if req.spec.roles:
        findings, deployed = judge(req, prov)
        return evaluate(req, prov, findings, deployed)
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
    search = _Search(req)
    if req.spec.constraints.disaggregation != "forbidden":
        search.disaggregated(progress)
    if req.spec.constraints.disaggregation != "required":
        search.unified()
    return search.ranked()


class _Search:
    """One search's state: the request's model, engine release and serving settings, the pools
    that can run the model, the candidates found, why layouts were rejected (counted), and the
    memos of decoding roles and re-timed decode steps (the decode side does not depend on the
    prefill layout it is paired with)."""

    def __init__(self, req: PlanRequest):
        s = self.s = req.spec
        self.req = req
        #: Instances smaller than a node pack onto it unless their pods bind the node's ports.
        self.share = not s.network.hostNetwork
        self.arch = arch = builtin_arch(s.model.architecture)
        self.engine = s.engine.name
        self.dialect = dialect_for(self.engine, s.engine.version)
        self.model = sm.Model(name=s.model.name or s.model.architecture,
                              architecture=s.model.architecture, weights=s.model.weights,
                              path="/models/model")
        self.wl = s.workload
        self.max_len = workload_max_len(arch, self.wl)
        self.serving = sm.merged_serving(sm.Serving(maxModelLen=self.max_len,
                                                    kvCacheDtype=s.constraints.kvCacheDtype),
                                         s.serving)
        self.k = s.speculative.numSpeculativeTokens if s.speculative and arch.mtp_layers else 0
        self.bf16 = bf16_compute(s.model.weights)
        self.dspark = s.speculative is not None and s.speculative.method == "dspark"
        self.cands: list[Candidate] = []
        self.rejected: Counter = Counter()
        self.memo: dict = {}
        self.retimed: dict = {}
        self.pools = []
        for name, pool in s.nodePools.items():
            row = storage(self.engine, s.model.weights, GPUS[pool.gpu])
            if row is not None and not row.kernel and arch.routed_experts:   # rule QNT002
                self.rejected[f"{self.engine} has no MoE kernel for {s.model.weights} on "
                              f"{pool.gpu}"] += 1
            else:
                self.pools.append((name, pool))

    def fits(self, z: RoleSizing) -> bool:
        """The role has KV cache for one sequence of maxModelLen per rank."""
        return z.kv_cache > 0 and z.kv_tokens_per_rank >= self.max_len

    def sized(self, role: RoleInput, pool) -> tuple[RoleInput, RoleSizing | None]:
        """The role's memory plan; SGLang roles whose default mem_fraction_static leaves no
        room (its reserve grows with the attention-DP ranks) are planned with the largest
        fraction that still leaves activations and graphs outside the pool, which the
        candidate pins (deployments at DP64+ pin 0.8-0.9 for the same reason)."""
        z = size_role(role, GPUS[pool.gpu], self.dialect)
        if self.engine == "sglang" and not self.fits(z) \
                and self.serving.memFractionStatic is None \
                and self.serving.gpuMemoryUtilization is None:
            room = fraction_with_room(z)
            if room is not None:
                role = replace(role, serving=replace(role.serving, memFractionStatic=room))
                z = size_role(role, GPUS[pool.gpu], self.dialect)
        return role, (z if self.fits(z) else None)

    def cuts_blocks(self, role: RoleInput) -> bool:
        """The layout splits FP8 weights through their 128 x 128 quantization blocks, which
        both engines refuse to load (QNT001, checks/model.py; the reason is counted)."""
        if block_misfits(inventory(role.arch), role.arch, role.model.weights,
                         placement_for(role, self.engine)):
            self.rejected["layouts that split FP8 quantization blocks (QNT001)"] += 1
            return True
        return False

    def pinned(self, role: RoleInput) -> dict | None:
        """The serving settings the candidate pins for ``role`` (its planned fraction)."""
        mfs = role.serving.memFractionStatic
        return {"memFractionStatic": mfs} if mfs != self.serving.memFractionStatic else None

    def prefill_rate(self, role: RoleInput, pool, z: RoleSizing) -> perf.PrefillEstimate:
        """The prefill rate of one instance of ``role``."""
        lay, s = role.layout, self.s
        gpu = GPUS[pool.gpu]
        moe = moe_kernel(self.engine, gpu, s.model.weights, role.moe.all2all if role.moe else None)
        return perf.prefill(model_shape(self.arch, s.model.weights, 0), gpu,
                            isl=self.wl.inputTokens, tensor=lay.tensor, data=lay.data,
                            pipeline=lay.pipeline, expert=lay.expert_parallel,
                            gpus_per_node=pool.gpusPerNode, inter_gbps=s.network.interNodeGbps,
                            weights_bytes=z.weights * 2**30, bf16=self.bf16,
                            overlap=role.moe.overlap if role.moe else None,
                            mnnvl=s.network.mnnvl, batch_tokens=z.batched_tokens,
                            graphs=s.engine.name == "vllm" and not role.serving.enforceEager,
                            moe=moe, chunk_tokens=perf.prefill_chunk(self.engine,
                                                                     z.batched_tokens, lay.data))

    def retimer(self, drole: RoleInput, z: RoleSizing, dpool, ranks: int):
        """The decode step at a smaller batch than sized (the closed loop's), memoized per
        decode role and batch."""
        def retime(b):
            key = (id(drole), b)
            if key not in self.retimed:
                self.retimed[key] = decode_estimate(self.req, drole, z, dpool, b, ranks=ranks)
            return self.retimed[key]
        return retime

    def decoding_role(self, name: str, mode: str, lay: LayoutChoice, pool, conn):
        """Instances, sizing and decode point of a decoding role on ``pool``, memoized (None,
        with the reason counted in ``rejected``, when it cannot be placed, sized or hold the
        load)."""
        key = (name, mode, lay, pool.gpu, pool.gpusPerNode, pool.nodes, conn is None)
        if key not in self.memo:
            self.memo[key] = self._decoding_role(name, mode, lay, pool, conn)
        return self.memo[key]

    def _decoding_role(self, name: str, mode: str, lay: LayoutChoice, pool, conn):
        wl, arch = self.wl, self.arch
        n = instances_on(lay, pool.gpusPerNode, pool.nodes, self.share)
        if n < 1:
            return None
        red = min_redundant_experts(arch.routed_experts, lay.ep) if lay.expert else 0
        per_rank = -(-wl.concurrency // (n * lay.data)) if wl.concurrency else None
        choices = self.dialect.all2all_choices
        if self.dspark:
            if lay.pipeline > 1:
                self.rejected["DSpark decodes without pipeline parallelism"] += 1
                return None
            if lay.data > 1:   # DSpark with attention DP: TP MoE, MegaMoE or MoRI, no DeepEP
                choices = [c for c in choices if c in DSPARK_DP_ALL2ALL]
        role = _role_input(name, mode, self.model, arch, self.serving, lay, pool, n, self.k,
                           conn, per_rank * lay.data if per_rank else 1, red, choices,
                           engine=self.engine, share=self.share)
        if role.layout.problem or self.cuts_blocks(role):
            return None
        role, z = self.sized(role, pool)
        if z is None:
            self.rejected[f"{mode} layouts do not fit in memory"] += 1
            return None
        est = decode_estimate(self.req, role, z, pool, per_rank,
                              ranks=role.layout.replicas * role.layout.data)
        if est is None:
            self.rejected[f"the KV cache cannot hold {wl.concurrency} sequences of "
                          f"{self.max_len} tokens"] += 1
            return None
        return n, z, est, role

    def _splits(self) -> list:
        """Every ordered pair of pools (prefill on one, decode on the other); with one pool,
        every split of its nodes."""
        pools = self.pools
        splits = [(a, b) for a in pools for b in pools if a[0] != b[0]]
        if len(pools) == 1:
            name, pool = pools[0]
            if pool.nodes < 2:
                self.rejected["prefill/decode needs at least two nodes"] += 1
            for pn in range(1, pool.nodes):
                splits.append(((name, pool.model_copy(update={"nodes": pn})),
                               (name, pool.model_copy(update={"nodes": pool.nodes - pn}))))
        return splits

    def disaggregated(self, progress=None) -> None:
        """Prefill/decode disaggregated candidates over every split of the pools."""
        arch = self.arch
        conn = sm.KvTransfer(connector="nixl" if self.engine == "vllm" else "mooncake")
        splits = self._splits()
        for n_split, ((pname, ppool), (dname, dpool)) in enumerate(splits, 1):
            if progress is not None:
                progress(n_split, len(splits))
            for pl in _layouts(ppool.gpusPerNode, ppool.gpusPerNode * ppool.nodes,
                               arch.num_attention_heads, "prefill", arch.routed_experts):
                prefill = self._prefill(pl, ppool, conn)
                if prefill is None:
                    continue
                np_, prole, t_p = prefill
                for dl in _layouts(dpool.gpusPerNode, dpool.gpusPerNode * dpool.nodes,
                                   arch.num_attention_heads, "decode", arch.routed_experts):
                    found = self.decoding_role("decode", "decode", dl, dpool, conn)
                    if found is not None:
                        nd, z, est, drole = found
                        self.cands.append(pd_candidate(
                            self.req, RoleChoice("prefill", pname, pl, np_, self.pinned(prole)),
                            RoleChoice("decode", dname, dl, nd, self.pinned(drole)), t_p, est,
                            z, retime=self.retimer(drole, z, dpool, nd * dl.data),
                            draft=self.k))

    def _prefill(self, pl: LayoutChoice, ppool, conn):
        """(instances, role, rate) of a prefill layout on ``ppool``, or None."""
        arch = self.arch
        nodes_p = max(1, pl.gpus // ppool.gpusPerNode)
        np_ = instances_on(pl, ppool.gpusPerNode, ppool.nodes, self.share)
        if np_ < 1 or (len(self.pools) == 1 and ppool.nodes % nodes_p):
            # A split that leaves prefill nodes idle is dominated by the split that
            # gives them to decode (same prefill instances, more decode).
            return None
        red_p = min_redundant_experts(arch.routed_experts, pl.ep) if pl.expert else 0
        prole = _role_input("prefill", "prefill", self.model, arch, self.serving, pl, ppool,
                            np_, self.k, conn, 1, red_p, self.dialect.all2all_choices,
                            engine=self.engine, share=self.share)
        if prole.layout.problem or self.cuts_blocks(prole):
            return None
        prole, zp = self.sized(prole, ppool)
        if zp is None:
            self.rejected["prefill layouts do not fit in memory"] += 1
            return None
        return np_, prole, self.prefill_rate(prole, ppool, zp)

    def unified(self) -> None:
        """Unified candidates (prefill and decode on the same GPUs) on every pool."""
        arch = self.arch
        for name, pool in self.pools:
            for ul in _layouts(pool.gpusPerNode, pool.gpusPerNode * pool.nodes,
                               arch.num_attention_heads, "unified", arch.routed_experts):
                found = self.decoding_role("serve", "unified", ul, pool, None)
                if found is not None:
                    nu, z, est, role = found
                    self.cands.append(unified_candidate(
                        self.req, RoleChoice("unified", name, ul, nu, self.pinned(role)),
                        self.prefill_rate(role, pool, z), est, z,
                        retime=self.retimer(role, z, pool, nu * ul.data), draft=self.k))

    def ranked(self) -> PlanResult:
        """The candidates found, deduplicated, judged against the SLO and ranked."""
        s, req = self.s, self.req
        unique: dict[str, Candidate] = {}
        for c in self.cands:   # the same roles reached twice (two splits of one pool): the best
            key = repr(c.roles)
            if c.total_tps > 0 and (key not in unique or c.total_tps > unique[key].total_tps):
                unique[key] = c
        cands = list(unique.values())
        for c in cands:   # 0.01 % slack: TTFT is solved to sit exactly on its SLO
            c.meets_slo = c.fits and c.sustains and \
                (not s.slo.tpotMs or c.tpot_ms <= s.slo.tpotMs * 1.0001) and \
                (not s.slo.ttftMs or c.ttft_ms <= s.slo.ttftMs * 1.0001)
        cands.sort(key=lambda c: (not c.meets_slo, -round(c.total_tps),
                                  c.tpot_ms + c.ttft_ms / 10, c.gpus))
        for i, c in enumerate(cands, 1):
            c.rank = i
        goal = s.slo.throughputTokensPerSec
        best = cands[0] if cands else None
        if best is None:
            why = "; ".join(f"{reason} ({n})" for reason, n in self.rejected.most_common(3)) \
                or "no layout that fills whole nodes exists for these pools"
            return PlanResult([], False, f"no feasible layout: {why}", assumptions(req))
        reachable = best.meets_slo and (goal is None or best.total_tps >= goal)
        bound = best.bound
        if goal is not None and best.total_tps < goal:
            bound = (f"{best.bound}: the best layout reaches {best.total_tps:,.0f} tokens/s, "
                     f"{best.total_tps / goal:.0%} of the {goal:,.0f} goal")
        elif not best.meets_slo:
            bound = f"SLO: no layout meets it; closest is bound by {best.bound}"
        return PlanResult(cands[:20], reachable, bound, assumptions(req))


