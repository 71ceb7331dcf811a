"""``gen plan``: search deployments for a workload and SLO, rank them by throughput.

Candidates: per role a layout from a fixed family (tensor-parallel over one node, TP over two
nodes, PP2 x TP, and data/expert-parallel groups of 1..N nodes), prefill/decode splits of the
pools (or one unified role), and instance counts that fill the nodes. Feasibility comes from the
sizing validator (``generator.sizing.size_role``: the same code ``gen validate`` runs); speed from
``planner/perf.py``. All numbers are per second and milliseconds as named.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from ..catalog import GPUS, arch_from_config, builtin_config
from ..engines import deepep
from ..engines.base import RoleInput
from ..engines.options import option_flags, option_value
from ..engines.registry import dialect_for
from ..engines.versions import parse_version
from ..layout import compute_layout, min_redundant_experts
from ..sizing import RoleSizing, size_role
from ..sizing.formats import storage
from ..sizing.params import inventory
from ..sizing.sglang_budget import fraction_with_room
from ..sizing.weights import tensor_bytes
from ..spec import models as sm
from . import perf
from .request import PlanRequest, Speculation

#: Upper bound of the decode batch per DP rank the search considers (SGLang/vLLM graph sizes).
MAX_BATCH_PER_RANK = 512


@dataclass
class Candidate:
    """One evaluated deployment (docs/spec.md §5 JSON via :meth:`to_json`)."""

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
    sustains: bool = True
    #: Why a fixed layout does not fit (docs/spec.md §5.1): error-level
    #: :class:`~generator.errors.Finding` objects with the validator's rule codes (LAY001,
    #: SIZ001, SIZ003) at the request's field paths.
    findings: list = field(default_factory=list)
    #: Sequences per decode rank at the operating point (below the sized batch when prefill
    #: cannot feed it); 0 when not computed.
    decode_batch: int = 0

    def to_json(self) -> dict:
        """The candidate as docs/spec.md §5 shows it."""
        return {"rank": self.rank, "roles": self.roles, "gpus": self.gpus,
                "kvTokensPerRank": self.kv_tokens_per_rank, "ttftMs": round(self.ttft_ms, 1),
                "tpotMs": round(self.tpot_ms, 1), "outputTokensPerSec": round(self.output_tps),
                "totalTokensPerSec": round(self.total_tps),
                "outputTokensPerSecPerGpu": round(self.output_tps / self.gpus, 1),
                "fits": self.fits, "meetsSlo": self.meets_slo, "bound": self.bound,
                "notes": self.notes} | (
                    {"findings": [f.to_json() for f in self.findings]} if self.findings else {})


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
        """docs/spec.md §5 JSON (plus assumptions and alternatives)."""
        return {"reachable": self.reachable, "bound": self.bound,
                "assumptions": self.assumptions, "alternatives": self.alternatives,
                "candidates": [c.to_json() for c in self.candidates]}


def assumptions(req: PlanRequest) -> list[str]:
    s = req.spec
    spec_txt = (f"{'DSpark' if s.speculative.method == 'dspark' else 'MTP'} "
                f"{s.speculative.numSpeculativeTokens} token(s), acceptance "
                f"{s.speculative.acceptance}" if s.speculative else "no speculative decoding")
    peak = "BF16" if bf16_compute(s.model.weights) else "FP8"
    return [
        (f"decode: max(HBM {perf.ETA_HBM:.0%} of peak, GEMMs {perf.ETA_DECODE_COMPUTE:.0%} of the "
         f"{peak} peak (H20: {perf.ETA_DECODE_COMPUTE_BY_GPU['H20-96GB']:.0%}) + MLA attention "
         f"{perf.ETA_ATTN:.0%} of the BF16 peak, x{perf.ATTN_FP8_SPEEDUP:g} with an FP8 KV cache "
         "where the attention kernel computes in FP8) + expert all-to-all (RDMA "
         f"{perf.ETA_A2A:.0%}, NVLink {perf.ETA_NVLINK:.0%} per direction) + TP all-reduce + "
         "collective latencies + MTP draft passes + "
         "fixed costs per decode layer and per expert slice by GPU family (perf.FIXED_COSTS); "
         "the search assumes no all-to-all "
         f"overlap (moe.overlap in a fixed layout: two_batch hides {perf.OVERLAP_TWO_BATCH:.0%} "
         f"of the shorter of computation and all-to-all, single_batch "
         f"{perf.OVERLAP_SINGLE_BATCH:.0%} of the combine)"),
        (f"prefill: GEMMs at {perf.ETA_PREFILL:.0%} of the {peak} peak (H20: "
         f"{perf.ETA_PREFILL_BY_GPU['H20-96GB']:.0%}; 4-bit experts without FP4 cores at "
         f"{perf.DEQUANT_4BIT_PREFILL:.0%} of that), attention at {perf.ETA_ATTN:.0%} of the BF16 "
         "peak, plus TP all-reduce and DeepEP all-to-all (bench/published_cases.yaml); TTFT adds "
         "the per-request cost and the prefill step's launches (perf.FIXED_COSTS); a unified "
         "role's decode waits for its prefill steps (perf.interleaved)"),
        (f"context per sequence: input + output/2 = "
        f"{s.workload.inputTokens + s.workload.outputTokens // 2} tokens (mean); {spec_txt}"),
        f"inter-node RDMA {s.network.interNodeGbps:g} Gbit/s per GPU; KV cache {s.constraints.kvCacheDtype}",
        "memory feasibility from the sizing validator (same code as gen validate)",
    ]


#: SGLang attention backends whose MLA decode computes in FP8 with an FP8 KV cache (q quantized
#: to FP8: python/sglang/srt/layers/attention/flashmla_backend.py, 0.5.1-0.5.23). SGLang's
#: default for MLA on Hopper is fa3, which upcasts the FP8 cache to BF16
#: (layers/attention/flashattention_backend.py ``get_key_buffer(...).to(q.dtype)``).
SGLANG_FP8_MLA_BACKENDS = frozenset({"flashmla"})


def attention_fp8(engine: str, kv_cache_dtype: str | None, sparse: bool,
                  engine_args: list[str] | tuple = ()) -> bool:
    """Decode attention runs at the FP8 rate: an FP8 KV cache with a dense-MLA kernel that
    computes in FP8. vLLM: FlashMLA, its MLA backend on Hopper, quantizes q to FP8 with an FP8
    cache in every supported release (vllm/v1/attention/backends/mla/common.py
    ``scaled_fp8_quant``, 0.11.0; ``flash_mla_with_kvcache_fp8`` from 0.16.0). SGLang: only with
    ``--attention-backend`` / ``--decode-attention-backend`` flashmla in the role's engineArgs
    (:data:`SGLANG_FP8_MLA_BACKENDS`). Sparse attention (DeepSeek-V3.2/V4) dequantizes its FP8
    cache and computes in BF16 (FlashMLA's sparse FP8 kernels) in both engines."""
    if not (kv_cache_dtype or "").startswith("fp8") or sparse:
        return False
    if engine == "vllm":
        return True
    args = list(engine_args)
    for j, a in option_flags(args):
        if a.partition("=")[0] in ("--attention-backend", "--decode-attention-backend") \
                and option_value(args, j) in SGLANG_FP8_MLA_BACKENDS:
            return True
    return False


#: vLLM's dual-batch overlap engages only above these tokens per rank per step
#: (ParallelConfig.dbo_decode_token_threshold / dbo_prefill_token_threshold defaults,
#: vllm/config/parallel.py; vllm/v1/worker/ubatch_utils.py).
VLLM_DBO_DECODE_TOKENS = 32


def effective_overlap(engine: str, role: RoleInput, tokens_per_rank: int) -> str | None:
    """The overlap a decode step actually runs with: ``moe.overlap``, except where the engine
    silently skips it: vLLM DBO below :data:`VLLM_DBO_DECODE_TOKENS` tokens per rank, SGLang
    TBO on DeepSeek-V4 decode (prefill-only there: models/deepseek_v4.py ``_can_run_tbo``,
    0.5.23)."""
    mode = role.moe.overlap if role.moe is not None else None
    if mode == "two_batch":
        if engine == "vllm" and tokens_per_rank < VLLM_DBO_DECODE_TOKENS:
            return None
        if engine == "sglang" and role.arch.family == "deepseek_v4":
            return None
    return mode


#: (id(config), format, KV bytes) -> (config, shape); holding the config keeps its id unique.
_SHAPES: dict[tuple, tuple[dict, perf.ModelShape]] = {}


def model_shape(cfg: dict, fmt: str, kv_bytes_per_token: float) -> perf.ModelShape:
    """The performance model's view of a model config in checkpoint format ``fmt`` with
    ``kv_bytes_per_token`` of KV per token per GPU (memoized per config object)."""
    key = (id(cfg), fmt, kv_bytes_per_token)
    hit = _SHAPES.get(key)
    if hit is None:
        hit = _SHAPES[key] = (cfg, _model_shape(cfg, fmt, kv_bytes_per_token))
    return hit[1]


def _model_shape(cfg: dict, fmt: str, kv_bytes_per_token: float) -> perf.ModelShape:
    inv = inventory(cfg)
    experts = cfg.get("n_routed_experts") or 0
    topk = cfg.get("num_experts_per_tok") or 0
    moe_tensors = [t for t in inv.kinds[inv.layer_kinds[-1]] if t.component == "routed_experts"]
    expert_params = sum(t.out_dim * t.in_dim for t in moe_tensors)
    expert_bytes = sum(tensor_bytes(t, fmt) / t.experts for t in moe_tensors)
    total = inv.total_params()
    routed = inv.component_params().get("routed_experts", 0)
    moe_layers = sum(n for k, n in inv.kind_counts().items()
                     if any(t.component == "routed_experts" for t in inv.kinds[k]))
    active = total - routed + moe_layers * topk * expert_params
    heads = cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim", 128)
    if cfg.get("qk_nope_head_dim"):      # MLA (V3, V3.2): nope + rope query-key dims
        qk = cfg["qk_nope_head_dim"] + (cfg.get("qk_rope_head_dim") or 0)
    else:                                 # DeepSeek-V4: head_dim includes the rope dims
        qk = head_dim
    v = cfg.get("v_head_dim") or head_dim
    if cfg.get("kv_lora_rank"):
        latent, latent_v = cfg["kv_lora_rank"] + (cfg.get("qk_rope_head_dim") or 0), \
            cfg["kv_lora_rank"]
    else:
        latent = latent_v = head_dim
    window = None
    if cfg.get("index_topk"):  # sparse attention: indexer top-k (+ V4's sliding window)
        window = cfg["index_topk"] + (cfg.get("sliding_window") or 0)
    return perf.ModelShape(active_params=active, layers=cfg["num_hidden_layers"],
                           moe_layers=moe_layers, hidden=cfg["hidden_size"], heads=heads,
                           topk=topk, experts=experts, expert_bytes=expert_bytes,
                           expert_params=expert_params, kv_bytes_per_token=kv_bytes_per_token,
                           qk_head=qk, v_head=v, latent=latent, attn_window=window,
                           n_group=cfg.get("n_group") or 0, topk_group=cfg.get("topk_group") or 0,
                           lm_head_bytes=2.0 * cfg["vocab_size"] * cfg["hidden_size"],
                           expert_bits=4 if fmt in ("w4a8", "mxfp4", "nvfp4", "nvfp4-v2",
                                                    "w4a16")
                           else 16 if fmt == "bf16"
                           else 8, latent_v=latent_v,
                           sparse_mla=bool(cfg.get("index_topk")) and not cfg.get("compress_ratios"),
                           indexer_heads=cfg.get("index_n_heads") or 0,
                           indexer_dim=cfg.get("index_head_dim") or 0)


class LayoutChoice(NamedTuple):
    """One instance's parallel layout in the search: GPUs = tensor x data x pipeline."""

    tensor: int
    data: int
    pipeline: int
    expert: bool

    @property
    def gpus(self) -> int:
        """GPUs of one instance."""
        return self.tensor * self.data * self.pipeline

    @property
    def ep(self) -> int:
        """Expert-parallel size (1 without EP)."""
        return self.tensor * self.data if self.expert else 1

    def as_json(self) -> dict:
        """The ``parallel`` block of the spec."""
        return {"tensor": self.tensor, "data": self.data, "pipeline": self.pipeline,
                "expert": self.expert}


def _layouts(gpn: int, gpus: int, heads: int, mode: str,
             experts: int = 1 << 30) -> list[LayoutChoice]:
    """Layout options that use whole nodes: TP over one or two nodes, TP x PP2, and DP-EP over
    any whole number of nodes (redundant experts make the experts divide, as in the LMSYS EP72
    and DeepSeek EP144 deployments); an expert-parallel group never has more GPUs than routed
    experts. Prefill roles take the same options (EP prefill over several nodes)."""
    out = []
    for tp in (gpn, 2 * gpn):
        if heads % tp == 0 and tp <= gpus:
            out.append(LayoutChoice(tp, 1, 1, False))
    if 2 * gpn <= gpus and heads % gpn == 0:
        out.append(LayoutChoice(gpn, 1, 2, False))
    d = gpn
    normal = set(deepep.normal_rank_counts(max(gpus, 1)))
    while d <= gpus and d <= experts:
        # Prefill runs DeepEP's normal kernels, compiled for some rank counts only (A2A009).
        if mode != "prefill" or d in normal:
            out.append(LayoutChoice(1, d, 1, True))
        d += gpn
    return out


#: Checkpoint formats whose GEMMs run in BF16: unquantized, and weight-only 4-bit (``w4a16``:
#: BF16 activations, the INT4 experts dequantized in the Marlin/Humming/Triton W4A16 kernels,
#: every other tensor BF16; generator/sizing/formats.py).
BF16_COMPUTE = ("bf16", "w4a16")


def bf16_compute(weights: str) -> bool:
    """Whether the perf model times ``weights``' GEMMs at the BF16 peak (else the FP8 one)."""
    return weights in BF16_COMPUTE


def all2all_for(gpu_id: str, mode: str, ep: int, gpus_per_node: int,
                choices: list[str], engine: str = "", weights: str = "") -> str:
    """The expert all-to-all backend the planner deploys on ``gpu_id`` (engine-neutral name,
    one of the release's ``choices``), by what the GPU can run (rules GPU001-GPU003):
    DeepEP low-latency for decode, normal for prefill, on NVLink-connected NVIDIA Hopper and
    newer; on AMD MoRI-EP (``mori_low_latency``/``mori_high_throughput``, or ``mori`` in vLLM
    0.15-0.22); on Ampere DeepEP normal within one node only; elsewhere (PCIe cards, releases
    without the backend) the engine's all-gather / reduce-scatter. SGLang (``engine``) with
    ``nvfp4``/``w4a16`` checkpoints (``weights``) gets all-gather / reduce-scatter everywhere:
    its DeepEP/MoRI MoE layer has no kernel for them (rule QNT005; the one exception needs an
    engine argument the planner does not write)."""
    g = GPUS[gpu_id]
    decode = mode != "prefill"
    if engine == "sglang" and weights in ("nvfp4", "nvfp4-v2", "w4a16"):
        want = []
    elif g.vendor == "amd":
        want = ["mori_low_latency" if decode else "mori_high_throughput", "mori"]
    elif not g.nvlink:
        want = []
    elif g.generation in ("ampere", "ada"):
        want = ["deepep_high_throughput"] if ep <= gpus_per_node else []
    else:
        want = ["deepep_low_latency" if decode else "deepep_high_throughput"]
    return next((w for w in want if w in choices), "allgather_reducescatter")


def _role_input(name, mode, model, arch, serving, layout_args: LayoutChoice, pool, replicas,
                spec_tokens, kv_transfer, concurrency, redundant, choices=None, engine=""):
    t, d, p, ep = layout_args
    lay = compute_layout(t, d, p, ep, "lws", pool.gpusPerNode, replicas)
    moe = None
    if ep and arch.routed_experts:
        all2all = all2all_for(pool.gpu, mode, t * d, pool.gpusPerNode,
                              choices if choices is not None else
                              ["deepep_low_latency", "deepep_high_throughput"],
                              engine=engine, weights=model.weights)
        moe = sm.Moe(all2all=all2all,
                     eplb=sm.Eplb(enabled=True, redundantExperts=redundant) if redundant else None)
    spec = sm.Speculative(method="mtp", numSpeculativeTokens=spec_tokens) \
        if spec_tokens and arch.mtp_layers and mode != "prefill" else None
    return RoleInput(name=name, mode=mode, model=model, arch=arch, serving=serving,
                     parallel=sm.Parallel(tensor=t, data=d, pipeline=p, expert=ep), moe=moe,
                     speculative=spec, kv_transfer=kv_transfer, network=sm.Network(),
                     layout=lay, pd=mode != "unified", concurrency=concurrency)


def plan(req: PlanRequest, progress=None, prov=None) -> PlanResult:
    """Search, evaluate and rank deployments for ``req``; when the throughput goal or the SLO is
    out of reach, also evaluate single changes that could help (FP8 weights, FP8 KV cache, a
    400 Gbit/s RDMA network) and report them as alternatives. A request with ``spec.roles``
    is evaluated as given instead (capacity/evaluate.py, docs/spec.md §5.1).

    ``progress(done, total)``, if given, is called as the prefill/decode splits are searched;
    ``prov`` (the request file's :class:`~generator.spec.load.Provenance`) locates a fixed
    layout's findings in the file.
    """
    if req.spec.roles:
        from .evaluate import evaluate
        return evaluate(req, prov)
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
    dialect = dialect_for(engine, s.engine.version)
    model = sm.Model(name=s.model.name or s.model.architecture, architecture=s.model.architecture,
                     weights=s.model.weights, path="/models/model")
    wl = s.workload
    max_len = workload_max_len(arch, wl)
    serving = sm.merged_serving(sm.Serving(maxModelLen=max_len,
                                           kvCacheDtype=s.constraints.kvCacheDtype), s.serving)
    k = s.speculative.numSpeculativeTokens if s.speculative and arch.mtp_layers else 0
    bf16 = bf16_compute(s.model.weights)
    cands: list[Candidate] = []
    rejected: Counter = Counter()
    pools = []
    for name, pool in s.nodePools.items():
        row = storage(engine, s.model.weights, GPUS[pool.gpu])
        if row is not None and not row.kernel and arch.routed_experts:   # rule QNT002
            rejected[f"{engine} has no MoE kernel for {s.model.weights} on {pool.gpu}"] += 1
        else:
            pools.append((name, pool))

    def fits(z: RoleSizing) -> bool:
        return z.kv_cache > 0 and z.kv_tokens_per_rank >= max_len

    def sized(role: RoleInput, pool) -> tuple[RoleInput, RoleSizing | None]:
        """The role's memory plan; SGLang roles whose default mem_fraction_static leaves no
        room (its reserve grows with the attention-DP ranks) are planned with the largest
        fraction that still leaves activations and graphs outside the pool, which the
        candidate pins (deployments at DP64+ pin 0.8-0.9 for the same reason)."""
        z = size_role(role, GPUS[pool.gpu], dialect)
        if engine == "sglang" and not fits(z) and serving.memFractionStatic is None \
                and serving.gpuMemoryUtilization is None:
            room = fraction_with_room(z)
            if room is not None:
                role = replace(role, serving=replace(role.serving, memFractionStatic=room))
                z = size_role(role, GPUS[pool.gpu], dialect)
        return role, (z if fits(z) else None)

    def pinned(role: RoleInput) -> dict | None:
        mfs = role.serving.memFractionStatic
        return {"memFractionStatic": mfs} if mfs != serving.memFractionStatic else None

    def decode_point(role, z, pool, per_rank_needed):
        return decode_estimate(req, role, z, pool, per_rank_needed,
                               ranks=role.layout.replicas * role.layout.data)

    def prefill_rate(role, pool, z):
        lay = role.layout
        return perf.prefill(model_shape(cfg, s.model.weights, 0), GPUS[pool.gpu], isl=wl.inputTokens,
                            tensor=lay.tensor, data=lay.data, pipeline=lay.pipeline,
                            expert=lay.expert_parallel, gpus_per_node=pool.gpusPerNode,
                            inter_gbps=s.network.interNodeGbps, weights_bytes=z.weights * 2**30,
                            bf16=bf16, overlap=role.moe.overlap if role.moe else None,
                            batch_tokens=z.batched_tokens,
                            graphs=engine == "vllm" and not role.serving.enforceEager)

    memo: dict = {}

    dspark = s.speculative is not None and s.speculative.method == "dspark"
    retimed: dict = {}

    def retimer(drole, z, dpool, ranks):
        """The decode step at a smaller batch than sized (pd_candidate's closed loop),
        memoized per decode role and batch: it does not depend on the prefill side."""
        def retime(b):
            key = (id(drole), b)
            if key not in retimed:
                retimed[key] = decode_estimate(req, drole, z, dpool, b, ranks=ranks)
            return retimed[key]
        return retime

    def decoding_role(name, mode, lay, pool, conn):
        """Instances, sizing and decode point of a decoding role on ``pool`` (None, with the
        reason counted in ``rejected``, when it cannot be placed, sized or hold the load);
        memoized: the decode side does not depend on the prefill layout it is paired with."""
        key = (name, mode, lay, pool.gpu, pool.gpusPerNode, pool.nodes, conn is None)
        if key not in memo:
            memo[key] = _decoding_role(name, mode, lay, pool, conn)
        return memo[key]

    def _decoding_role(name, mode, lay, pool, conn):
        n = pool.nodes // max(1, lay.gpus // pool.gpusPerNode)
        if n < 1:
            return None
        red = min_redundant_experts(arch.routed_experts, lay.ep) if lay.expert else 0
        per_rank = -(-wl.concurrency // (n * lay.data)) if wl.concurrency else None
        choices = dialect.all2all_choices
        if dspark:
            if lay.pipeline > 1:
                rejected["DSpark decodes without pipeline parallelism"] += 1
                return None
            if lay.data > 1:   # DSpark with attention DP: TP MoE, MegaMoE or MoRI, no DeepEP
                choices = [c for c in choices if c in DSPARK_DP_ALL2ALL]
        role = _role_input(name, mode, model, arch, serving, lay, pool, n, k, conn,
                           per_rank * lay.data if per_rank else 1, red, choices,
                           engine=engine)
        if role.layout.problem:
            return None
        role, z = sized(role, pool)
        if z is None:
            rejected[f"{mode} layouts do not fit in memory"] += 1
            return None
        est = decode_point(role, z, pool, per_rank)
        if est is None:
            rejected[f"the KV cache cannot hold {wl.concurrency} sequences of {max_len} "
                     "tokens"] += 1
            return None
        return n, z, est, role

    # --- prefill/decode disaggregated ---
    if s.constraints.disaggregation != "forbidden":
        # Every ordered pair of pools (prefill on one, decode on the other); with one pool,
        # every split of its nodes.
        splits = [(a, b) for a in pools for b in pools if a[0] != b[0]]
        if len(pools) == 1:
            name, pool = pools[0]
            if pool.nodes < 2:
                rejected["prefill/decode needs at least two nodes"] += 1
            for pn in range(1, pool.nodes):
                splits.append(((name, pool.model_copy(update={"nodes": pn})),
                               (name, pool.model_copy(update={"nodes": pool.nodes - pn}))))
        conn = sm.KvTransfer(connector="nixl" if engine == "vllm" else "mooncake")
        for n_split, ((pname, ppool), (dname, dpool)) in enumerate(splits, 1):
            if progress is not None:
                progress(n_split, len(splits))
            for pl in _layouts(ppool.gpusPerNode, ppool.gpusPerNode * ppool.nodes,
                               arch.num_attention_heads, "prefill", arch.routed_experts):
                nodes_p = max(1, pl.gpus // ppool.gpusPerNode)
                np_ = ppool.nodes // nodes_p
                if np_ < 1 or (len(pools) == 1 and ppool.nodes % nodes_p):
                    # A split that leaves prefill nodes idle is dominated by the split that
                    # gives them to decode (same prefill instances, more decode).
                    continue
                red_p = min_redundant_experts(arch.routed_experts, pl.ep) if pl.expert else 0
                prole = _role_input("prefill", "prefill", model, arch, serving, pl, ppool, np_, 0,
                                    conn, 1, red_p, dialect.all2all_choices,
                                    engine=engine)
                if prole.layout.problem:
                    continue
                prole, zp = sized(prole, ppool)
                if zp is None:
                    rejected["prefill layouts do not fit in memory"] += 1
                    continue
                t_p = prefill_rate(prole, ppool, zp)
                for dl in _layouts(dpool.gpusPerNode, dpool.gpusPerNode * dpool.nodes,
                                   arch.num_attention_heads, "decode", arch.routed_experts):
                    found = decoding_role("decode", "decode", dl, dpool, conn)
                    if found is not None:
                        nd, z, est, drole = found
                        cands.append(pd_candidate(
                            req, RoleChoice("prefill", pname, pl, np_, pinned(prole)),
                            RoleChoice("decode", dname, dl, nd, pinned(drole)), t_p, est, z,
                            retime=retimer(drole, z, dpool, nd * dl.data), draft=k))
    # --- unified ---
    if s.constraints.disaggregation != "required":
        for name, pool in pools:
            for ul in _layouts(pool.gpusPerNode, pool.gpusPerNode * pool.nodes,
                               arch.num_attention_heads, "unified", arch.routed_experts):
                found = decoding_role("serve", "unified", ul, pool, None)
                if found is not None:
                    nu, z, est, role = found
                    cands.append(unified_candidate(
                        req, RoleChoice("unified", name, ul, nu, pinned(role)),
                        prefill_rate(role, pool, z), est, z,
                        retime=retimer(role, z, pool, nu * ul.data), draft=k))

    unique: dict[str, Candidate] = {}
    for c in cands:   # the same roles reached twice (e.g. two splits of one pool): keep the best
        key = repr(c.roles)
        if c.total_tps > 0 and (key not in unique or c.total_tps > unique[key].total_tps):
            unique[key] = c
    cands = list(unique.values())
    for c in cands:   # 0.01 % slack: TTFT is solved to sit exactly on its SLO
        c.meets_slo = c.fits and c.sustains and \
            (not s.slo.tpotMs or c.tpot_ms <= s.slo.tpotMs * 1.0001) and \
            (not s.slo.ttftMs or c.ttft_ms <= s.slo.ttftMs * 1.0001)
    cands.sort(key=lambda c: (not c.meets_slo, -round(c.total_tps), c.tpot_ms + c.ttft_ms / 10,
                              c.gpus))
    for i, c in enumerate(cands, 1):
        c.rank = i
    goal = s.slo.throughputTokensPerSec
    best = cands[0] if cands else None
    if best is None:
        why = "; ".join(f"{reason} ({n})" for reason, n in rejected.most_common(3)) or \
            "no layout of whole nodes exists for these pools"
        return PlanResult([], False, f"no feasible layout: {why}", assumptions(req))
    reachable = best.meets_slo and (goal is None or best.total_tps >= goal)
    bound = best.bound
    if goal is not None and best.total_tps < goal:
        bound = (f"{best.bound}: the best layout reaches {best.total_tps:,.0f} tokens/s, "
                 f"{best.total_tps / goal:.0%} of the {goal:,.0f} goal")
    elif not best.meets_slo:
        bound = f"SLO: no layout meets it; closest is bound by {best.bound}"
    return PlanResult(cands[:20], reachable, bound, assumptions(req))


def draft_tokens(req: PlanRequest, role: RoleInput) -> int:
    """MTP draft tokens per step of a decoding role: the role's own speculative config, else
    the request's (0 without MTP layers or for prefill)."""
    if role.mode == "prefill" or not role.arch.mtp_layers:
        return 0
    if role.speculative is not None:
        return role.speculative.numSpeculativeTokens
    return req.spec.speculative.numSpeculativeTokens if req.spec.speculative else 0


#: The smallest maxModelLen the spec takes (docs/spec.md §2 ``serving.maxModelLen`` >= 16).
MIN_MODEL_LEN = 16


def workload_max_len(arch, wl) -> int:
    """The maxModelLen a request shape needs: input + output tokens, within the model's context
    and at least :data:`MIN_MODEL_LEN`."""
    return max(MIN_MODEL_LEN, min(arch.max_position_embeddings, wl.inputTokens + wl.outputTokens))


#: The expert all-to-all SGLang runs DSpark with under attention DP (0.5.23
#: arg_groups/speculative_hook.py ``_handle_dspark``: moe_a2a_backend none, megamoe or mori, and
#: --enable-dp-lm-head), in moegen's names; DeepEP is refused at start.
DSPARK_DP_ALL2ALL = ("allgather_reducescatter", "mori", "mori_low_latency",
                     "mori_high_throughput")


def drafter(req: PlanRequest) -> str:
    """The draft-pass pattern of the decoding roles (:func:`perf.decode_terms`): ``dspark`` when the
    request plans DSpark (for every decoding role; PLN004 limits it to SGLang), else the
    engine's MTP loop."""
    spec = req.spec.speculative
    if spec is not None and spec.method == "dspark":
        return "dspark"
    return "sglang_mtp" if req.spec.engine.name == "sglang" else "vllm_mtp"


def decode_estimate(req: PlanRequest, role: RoleInput, z: RoleSizing, pool,
                    per_rank_needed: int | None, ranks: int = 1,
                    engine_args: list[str] | tuple = ()) -> perf.DecodeEstimate | None:
    """Decode operating point of a sized role over ``ranks`` DP ranks in total (``engine_args``:
    the role's engineArgs, for the attention backend).

    * concurrency given: ``per_rank_needed`` sequences per rank (None if they do not fit the KV
      cache at maxModelLen, the validator's rule);
    * requestsPerSecond given: the batch Little's law implies (rate x output tokens x TPOT over
      the ranks), solved by fixed-point iteration, capped by the KV cache;
    * neither: the largest batch within the TPOT SLO and the KV cache (saturation).
    """
    s = req.spec
    cfg = role.arch.config
    wl = s.workload
    ctx_avg = wl.inputTokens + wl.outputTokens / 2
    k = draft_tokens(req, role)
    # A role with MTP in a request without spec.speculative: the request's default acceptance.
    acceptance = (s.speculative or Speculation()).acceptance
    accepted = perf.accepted_per_step(k, acceptance) if k else 1.0
    gpu = GPUS[pool.gpu]
    shape = model_shape(cfg, s.model.weights, z.kv_bytes_per_token)
    nonexpert = (z.weights - z.weights_by_component.get("routed_experts", 0)) * 2**30
    local = (z.weights_by_component.get("routed_experts", 0) * 2**30) / \
        max(shape.expert_bytes * shape.moe_layers, 1)
    cap_b = max(0, min(int(z.kv_tokens_per_rank // ctx_avg), MAX_BATCH_PER_RANK))
    lay = role.layout
    pp = lay.pipeline

    fp8_attn = attention_fp8(s.engine.name, role.serving.kvCacheDtype,
                             shape.attn_window is not None, engine_args)

    def step(b):
        overlap = effective_overlap(s.engine.name, role, b * (1 + k))
        return perf.decode_step(shape, gpu, overlap=overlap, batch=b, tensor=lay.tensor,
                                data=lay.data, expert=lay.expert_parallel,
                                nonexpert_bytes=nonexpert,
                                local_experts_per_layer=local if lay.expert_parallel else 0,
                                ctx=ctx_avg, gpus_per_node=pool.gpusPerNode,
                                inter_gbps=s.network.interNodeGbps, draft=k,
                                bf16=bf16_compute(s.model.weights), attn_fp8=fp8_attn,
                                drafter=drafter(req),
                                all2all=role.moe.all2all if role.moe else None)
    if cap_b < 1:
        return None
    if per_rank_needed is not None:
        b = per_rank_needed
        # The validator's rule (SIZ003): the required sequences fit at the workload's mean
        # context (input + output / 2, within maxModelLen).
        if not z.holds(b, min(z.max_model_len, wl.inputTokens + wl.outputTokens // 2)):
            return None
    elif wl.requestsPerSecond:
        b = 1
        for _ in range(40):
            tpot = step(b)[0] * pp / accepted
            need = max(1, math.ceil(wl.requestsPerSecond * wl.outputTokens * tpot / (ranks * pp)))
            nb = min(need, cap_b)
            if nb == b:
                break
            b = nb
    else:
        b = cap_b
        if s.slo.tpotMs:
            while b > 1 and step(b)[0] * pp / accepted * 1000 > s.slo.tpotMs:
                b = int(b * 0.8)
    t, bound = step(b)
    tpot = t * pp / accepted
    return perf.DecodeEstimate(b, t, tpot, b * pp * accepted / (t * pp), bound)


def _in_flight(wl, capacity: int) -> int:
    """Sequences decoding at once: the workload's concurrency if given, at most the capacity."""
    return min(wl.concurrency, capacity) if wl.concurrency else capacity


@dataclass(frozen=True)
class RoleChoice:
    """A role of a candidate: its pool, layout and instance count."""

    mode: str
    pool: str
    layout: LayoutChoice
    instances: int
    #: Serving settings the planner pinned for this role (SGLang's ``memFractionStatic`` where
    #: its default formula leaves no room), or None.
    serving: dict | None = None

    @property
    def gpus(self) -> int:
        """GPUs of all instances."""
        return self.instances * self.layout.gpus

    def as_json(self) -> dict:
        """The role as docs/spec.md §5 shows it."""
        doc = {"mode": self.mode, "nodePool": self.pool, "replicas": self.instances,
               "parallel": self.layout.as_json()}
        if self.serving:
            doc["serving"] = dict(self.serving)
        return doc


def _max_utilisation(t_service: float, extra: float, ttft_slo_ms: float | None) -> float:
    """Highest utilisation rho of a prefill server (M/D/1: wait = rho / (2 (1 - rho)) x service)
    whose TTFT = service x (1 + wait factor) + extra stays within the SLO (0.95 without one)."""
    if not ttft_slo_ms:
        return 0.95
    x = (ttft_slo_ms / 1000 - extra) / t_service - 1
    if x <= 0:
        return 0.0
    return min(0.95, 2 * x / (1 + 2 * x))


#: Decode batch sizes the engines capture CUDA graphs for, below 256: vLLM
#: vllm/config/vllm.py default cudagraph_capture_sizes ``[1, 2, 4] + range(8, 256, 8)`` (0.33);
#: SGLang python/sglang/srt/arg_groups/cuda_graph_hook.py
#: ``generate_decode_cuda_graph_batch_sizes`` (0.5.23), finer with speculative decoding.
GRAPH_BATCHES = {
    "vllm": [1, 2, 4, *range(8, 256, 8)],
    "sglang": [1, 2, 4, 8, 12, *range(16, 257, 8)],
    "sglang-spec": [*range(1, 9), *range(10, 33, 2), *range(40, 65, 4), *range(72, 257, 8)],
}


@functools.lru_cache(maxsize=None)
def _graph_sequences(engine: str, draft: int) -> tuple[int, ...]:
    """The decode batches (sequences per step) the engine captures CUDA graphs for, below 256
    (:data:`GRAPH_BATCHES`): a step of b sequences runs at the next one. vLLM captures tokens:
    with ``draft`` speculative tokens a step of b sequences is b x (1 + draft) tokens, padded to
    the next capture size rounded up to a multiple of 1 + draft (vllm/config/compilation.py
    ``adjust_cudagraph_sizes_for_spec_decode``); SGLang captures sequences, from its finer list
    when it drafts."""
    if engine == "vllm" and draft:
        q = 1 + draft
        return tuple(sorted({-(-s // q) for s in GRAPH_BATCHES["vllm"]}))
    return tuple(GRAPH_BATCHES["sglang-spec" if engine == "sglang" and draft else engine])


class DecodeCurve:
    """TPOT of a decode role as a function of its batch per rank: affine between batch 1 and
    the sized batch B (the step is weights + per-sequence KV and compute; both ends are timed
    by the performance model), the batch padded up to the engine's next CUDA-graph size.
    ``ranks``: DP ranks x pipeline stages holding sequences. (A plain class with its slope and
    capture sizes precomputed: the planner evaluates it ~10^5 times per search.)"""

    __slots__ = ("t1", "tb", "b_max", "ranks", "slope", "sizes")

    def __init__(self, t1: float, tb: float, b_max: int, ranks: int, engine: str, draft: int):
        self.t1, self.tb, self.b_max, self.ranks = t1, tb, b_max, ranks
        self.slope = (tb - t1) / (b_max - 1) if b_max > 1 else 0.0
        self.sizes = _graph_sequences(engine, draft)

    def tpot(self, b: int) -> float:
        """TPOT (s) at ``b`` sequences per rank."""
        return self.t1 + self.slope * (b - 1) if self.b_max > 1 else self.tb

    def fed(self, rate: float, osl: int, stretch: float = 1.0) -> int | None:
        """The batch per rank that keeps ``rate`` requests/s decoding (Little's law: rate x OSL
        x TPOT(b) x stretch = ranks x b), padded to the next capture size, or None beyond the
        sized batch. ``stretch``: TPOT's slowdown by interleaved prefill (unified roles)."""
        a = rate * osl * stretch / self.ranks
        if self.b_max > 1:
            if a * self.slope >= 1:
                return None
            b = a * (self.t1 - self.slope) / (1 - a * self.slope)
        else:
            b = a * self.tb
        if b > self.b_max * (1 + 1e-9):
            return None
        n = math.ceil(b - 1e-9) if b > 1 else 1
        i = bisect.bisect_left(self.sizes, n)
        return min(self.sizes[i] if i < len(self.sizes) else n, self.b_max)


def decode_curve(req: PlanRequest, est: perf.DecodeEstimate, ranks: int, retime,
                 draft: int = 0) -> DecodeCurve:
    """The :class:`DecodeCurve` of a decode operating point ``est`` (its sized batch) over
    ``ranks``, ``draft`` speculative tokens per step; ``retime(batch)`` times batch 1 (None: a
    flat curve at ``est``)."""
    one = retime(1) if retime is not None and est.batch_per_rank > 1 else None
    return DecodeCurve(one.tpot_s if one else est.tpot_s, est.tpot_s, est.batch_per_rank,
                       ranks, req.spec.engine.name, draft)


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


def pd_candidate(req: PlanRequest, prefill: RoleChoice, decode: RoleChoice,
                  pre: perf.PrefillEstimate, est: perf.DecodeEstimate, z: RoleSizing,
                  retime=None, draft: int = 0) -> Candidate:
    """Disaggregated: prefill instances feed decode instances.

    Open load (``requestsPerSecond``, or no load: capacity): the rate is the least of the
    prefill rate that keeps TTFT within its SLO (M/D/1 at prefill) and the decode capacity.
    Fixed ``concurrency`` (a closed loop of that many sequences): the rate R at which the
    sequences in the loop, R x (TTFT(R) + OSL x TPOT(R)), equal the concurrency, with TTFT the
    M/D/1 wait at prefill + the KV transfer and TPOT timed at the batch R keeps decoding
    (:class:`DecodeCurve`, ``retime`` times batch 1); when prefill at 95 % busy or decode at
    its sized batch cannot reach that, R is that capacity and the remaining sequences wait
    for prefill: TTFT = concurrency / R - OSL x TPOT."""
    wl = req.spec.workload
    osl = wl.outputTokens
    kv_t = perf.kv_transfer_time(wl.inputTokens, z.kv_bytes_per_token,
                                 req.spec.network.interNodeGbps)
    prefill_cap = prefill.instances * pre.requests_per_s
    dl = decode.layout
    ranks = decode.instances * dl.data * dl.pipeline
    decode_cap = ranks * est.batch_per_rank / (osl * est.tpot_s)

    def wait(rate: float) -> float:
        rho = min(rate / prefill_cap, 0.95) if prefill_cap else 0.95
        return pre.request_s + pre.latency_s * (1 + rho / (2 * (1 - rho))) + kv_t   # M/D/1

    if wl.concurrency:
        rho_max = 0.95
        curve = decode_curve(req, est, ranks, retime, draft)

        lat, fed_at, tpot_of, b_max = pre.latency_s, curve.fed, curve.tpot, curve.b_max

        def in_loop(r: float) -> float:   # wait(r) + OSL x TPOT at the fed batch, inlined
            rho = min(r / prefill_cap, 0.95)
            b = fed_at(r, osl)
            return r * (pre.request_s + lat * (1 + rho / (2 * (1 - rho))) + kv_t
                        + osl * tpot_of(b if b is not None else b_max))

        r_max = min(prefill_cap * rho_max, decode_cap)
        rate, capped = _solve_closed_loop(wl.concurrency, r_max, in_loop)
        fed = curve.fed(rate, osl) or curve.b_max
        tpot_s = curve.tpot(fed)
        ttft = ttft_open = wait(rate)
        if capped and rate:   # the sequences the capacity does not keep decoding wait
            ttft = max(ttft, wl.concurrency / rate - osl * tpot_s)
        est = perf.DecodeEstimate(fed, est.step_s, tpot_s, est.tokens_per_s_per_rank, est.bound)
    else:
        rho_max = _max_utilisation(pre.latency_s, kv_t, req.spec.slo.ttftMs)
        rate = min(prefill_cap * rho_max, decode_cap)
        offered = min(rate, wl.requestsPerSecond) if wl.requestsPerSecond else rate
        ttft = ttft_open = wait(offered)
    sustains = True
    if wl.requestsPerSecond:
        sustains = rate >= wl.requestsPerSecond * 0.999
        rate = min(rate, wl.requestsPerSecond)
    binding = {pre.bound: prefill_cap * rho_max, est.bound: decode_cap}
    if wl.concurrency:
        binding["the workload's concurrency"] = wl.concurrency / (ttft_open
                                                                 + wl.outputTokens * est.tpot_s)
    bound = min(binding, key=binding.get)
    if not sustains:
        bound = f"offered load {wl.requestsPerSecond:g} req/s exceeds capacity ({bound})"
    gpus = prefill.gpus + decode.gpus
    roles = [prefill.as_json(), decode.as_json()]
    notes = [f"P:D = {prefill.instances}:{decode.instances}",
             f"decode batch {est.batch_per_rank} per rank",
             f"prefill {min(rate / prefill_cap, 1):.0%} busy" if prefill_cap else "prefill idle"]
    return Candidate(roles, gpus, z.kv_tokens_per_rank, ttft * 1000, est.tpot_s * 1000,
                     rate * wl.outputTokens, rate * (wl.inputTokens + wl.outputTokens), True,
                     False, bound, notes, sustains=sustains, decode_batch=est.batch_per_rank)


def unified_candidate(req: PlanRequest, unified: RoleChoice, pre: perf.PrefillEstimate,
                       est: perf.DecodeEstimate, z: RoleSizing, retime=None,
                       draft: int = 0) -> Candidate:
    """Prefill and decode share the GPUs (:func:`perf.interleaved`: prefill steps hold the
    instance's decode, attention DP synchronises its ranks), so a decoding sequence's TPOT
    stretches with the arrival rate R; TTFT = the per-request cost + the prefill latency with
    its M/D/1 wait at the time share ``busy`` prefill takes.

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

    def wait(busy: float) -> float:
        return pre.request_s + pre.latency_s * (1 + busy / (2 * (1 - busy)))

    def mix(r: float, t_dec: float, b: float) -> perf.Interleave:
        return perf.interleaved(r / unified.instances, t_dec, pre, data=ul.data, engine=engine,
                                sequences=b * per_inst, osl=osl)

    curve = decode_curve(req, est, ranks, retime, draft) if wl.concurrency else None

    def point(r: float) -> tuple[perf.Interleave, int]:
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
            m = point(r)[0]
            return r * (wait(m.busy) + osl * m.tpot_s)

        rate, capped = _solve_closed_loop(wl.concurrency,
                                          capacity(ranks * est.batch_per_rank), in_loop)
        m, batch = point(rate)
        busy, tpot = m.busy, m.tpot_s
        ttft = wait(busy)
        if capped and rate:
            ttft = max(ttft, wl.concurrency / rate - osl * tpot)
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
        ttft = wait(busy)
        batch = est.batch_per_rank
    gpus = unified.gpus
    bound = f"prefill interrupting decode (shared GPUs; {pre.bound})" if busy > 0.3 \
        else est.bound
    if not sustains:
        bound = f"offered load {wl.requestsPerSecond:g} req/s exceeds capacity ({bound})"
    return Candidate([unified.as_json()], gpus, z.kv_tokens_per_rank,
                     ttft * 1000, tpot * 1000, rate * wl.outputTokens,
                     rate * (wl.inputTokens + wl.outputTokens), True, False, bound,
                     [f"{busy:.0%} of the time in prefill", f"batch {batch} per rank"],
                     sustains=sustains, decode_batch=batch)
