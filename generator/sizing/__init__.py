"""The HBM sizing validator: per-GPU memory of the most loaded GPU of every role.

:func:`size_role` combines the weight placement (``weights.py``), the KV bytes per token
(``kv.py``) and the engine budget (``budget.py``) into a :class:`RoleSizing`, whose JSON form is
SPEC.md §4's sizing report. The checks on it (SIZ* rules) live in ``spec/rules.py``.
All memory figures are GiB (2^30 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import Gpu
from ..engines.common import RoleInput
from ..engines.versions import parse_version
from .budget import (GIB, V4_WORKSPACE_GIB, VllmBudget, default_max_num_batched_tokens,
                     v4_gather_gib, vllm_budget)
from .kv import kv_bytes_per_token, v4_sequence_bytes
from .params import NotSized, inventory, v4_ratios
from .sglang_budget import default_mem_fraction_static, tier_defaults
from .weights import Placement, stage_weights

__all__ = ["NotSized", "RoleSizing", "placement_for", "size_role"]


@dataclass
class RoleSizing:
    """Memory of the most loaded GPU of a role, and what it means for capacity.

    Attributes:
        name, gpu, engine: role name, GPU catalog id, engine name.
        gpu_memory: torch-visible memory, GiB; budget: what the engine may use, GiB.
        weights, activation, overhead, kv_cache: per-GPU GiB (kv_cache may be negative: the
            weights and fixed terms do not fit).
        weights_by_component: GiB per component on the most loaded GPU.
        kv_bytes_per_token: bytes per token on that GPU (latent replicated per TP rank).
        kv_tokens_per_rank: KV tokens one data-parallel rank holds (what the engine prints).
        max_model_len: the role's maxModelLen.
        max_concurrency: sequences of max_model_len per DP rank (engine's "maximum concurrency").
        required_concurrency: ``sizing.concurrency`` of one instance; per_rank_required:
            ceil(required / data).
        data: DP ranks per instance; batched_tokens: profile batch; comm: all-to-all buffers GiB;
        cuda_graph_outside: graphs taken from the headroom, GiB; utilization: the fraction used
            (vLLM gpu_memory_utilization; SGLang mem_fraction_static).
        outside_pool: SGLang: memory left outside the static pool for activations, graphs and
            buffers, GiB (0 for vLLM).
    """

    name: str
    gpu: str
    engine: str
    gpu_memory: float
    budget: float
    weights: float
    activation: float
    overhead: float
    kv_cache: float
    weights_by_component: dict[str, float]
    kv_bytes_per_token: int
    kv_tokens_per_rank: int
    max_model_len: int
    max_concurrency: float
    required_concurrency: int
    per_rank_required: int
    data: int
    batched_tokens: int
    comm: float
    cuda_graph_outside: float
    utilization: float
    outside_pool: float = 0.0
    seq_layout: tuple = ()
    findings: list = field(default_factory=list)

    def longest_len_for(self, sequences: int) -> int:
        """Longest maxModelLen at which ``sequences`` fit one DP rank's KV cache. Linear for
        MLA; DeepSeek-V4's windowed/compressed cache is solved by bisection (``seq_layout`` =
        the most loaded stage's compress ratios and MTP layers)."""
        if self.kv_cache <= 0 or sequences <= 0:
            return 0
        if not self.seq_layout:
            return self.kv_tokens_per_rank // sequences
        ratios, mtp = self.seq_layout
        budget = self.kv_cache * GIB / sequences
        lo, hi = 0, 1 << 24
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if v4_sequence_bytes(list(ratios), mid, mtp) <= budget:
                lo = mid
            else:
                hi = mid - 1
        return lo

    @property
    def fits(self) -> bool:
        """The role starts, holds its required concurrency at max_model_len, and (SGLang) has
        room outside the static pool for activations, CUDA graphs and buffers."""
        outside_ok = self.engine != "sglang" or self.outside_pool >= self.activation + self.overhead
        return self.kv_cache > 0 and self.max_concurrency >= self.per_rank_required \
            and self.max_concurrency >= 1 and outside_ok

    def to_json(self) -> dict:
        """SPEC.md §4 form (GiB rounded to 0.01, concurrency to 0.1)."""
        return {
            "name": self.name, "gpu": self.gpu, "engine": self.engine,
            "gpuMemoryGiB": round(self.gpu_memory, 2), "budgetGiB": round(self.budget, 2),
            "perGpu": {"weightsGiB": round(self.weights, 2),
                       "activationGiB": round(self.activation, 2),
                       "overheadGiB": round(self.overhead, 2),
                       "kvCacheGiB": round(self.kv_cache, 2)},
            "weightsByComponentGiB": {k: round(v, 3) for k, v in
                                      sorted(self.weights_by_component.items())},
            "kvBytesPerToken": self.kv_bytes_per_token,
            "kvTokensPerRank": self.kv_tokens_per_rank,
            "maxModelLen": self.max_model_len,
            "maxConcurrencyAtMaxModelLen": round(self.max_concurrency, 1),
            "requiredConcurrency": self.required_concurrency,
            "requiredConcurrencyPerRank": self.per_rank_required,
            "fits": self.fits,
            "findings": [f.to_json() for f in self.findings],
        }


#: SGLang all-to-all backends whose MoE layers replicate the shared experts (``--moe-a2a-backend``
#: deepep / deepep_v2 / nixl / pplx / flashinfer; models/deepseek_v2.py ``_shared_expert_use_tp1``).
SGLANG_SHARED_TP1 = ("deepep_low_latency", "deepep_high_throughput", "deepep_v2", "nixl_ep",
                     "pplx", "flashinfer_all2allv")


def placement_for(role: RoleInput, engine: str) -> Placement:
    """How the engine places the model on one GPU of ``role`` (see :class:`Placement`).

    SGLang: the TP group is tensor x data; attention TP = tensor / context (context parallelism
    replicates attention over the CP ranks, layers/dp_attention.py ``attn_tp_size``); the dense
    MLP runs data-parallel with attention DP (moegen renders ``--moe-dense-tp-size 1``).
    """
    lay = role.layout
    moe = role.moe
    redundant = moe.eplb.redundantExperts if (moe and moe.eplb and moe.eplb.enabled) else 0
    common = dict(ep=lay.ep_size, pp=lay.pipeline, redundant=redundant,
                  mtp=role.speculative is not None, mla_bf16_copies=True)
    if engine == "sglang":
        group = lay.tensor * lay.data
        cp = role.parallel.context or 1
        a2a = moe.all2all if moe else None
        return Placement(tp=max(1, lay.tensor // cp), dense_tp=1 if lay.data > 1 else group,
                         shared_tp=1 if (lay.expert_parallel and a2a in SGLANG_SHARED_TP1) else group,
                         moe_tp=group, vocab_tp=group, **common)
    return Placement(tp=lay.tensor, moe_tp=lay.tensor * lay.data, **common)


def size_role(role: RoleInput, gpu: Gpu, engine: str, version: str) -> RoleSizing:
    """Size one role on its pool's GPU (vLLM budget).

    Raises:
        NotSized: the model family has no inventory (DeepSeek-V4).
    """
    cfg = role.arch.config
    inv = inventory(cfg)
    lay = role.layout
    moe = role.moe
    place = placement_for(role, engine)
    stages = stage_weights(inv, cfg, role.model.weights, place)
    s = role.serving
    kv_dtype = s["kvCacheDtype"]
    max_len = s["maxModelLen"] or role.arch.max_position_embeddings
    if engine == "sglang":
        return _size_sglang(role, gpu, inv, cfg, stages, place)
    v = parse_version(version)
    util = s["gpuMemoryUtilization"] or (0.92 if v >= (0, 20, 0) else 0.9)
    all2all = moe.all2all if moe else None
    batched = s["maxNumBatchedTokens"] or default_max_num_batched_tokens(
        v, gpu.torch_total_gib, all2all, lay.expert_parallel, lay.data)
    physical_experts = (cfg.get("n_routed_experts") or 0) + place.redundant
    v4 = cfg.get("model_type") == "deepseek_v4"
    extra = v4_gather_gib(max_len, batched) + V4_WORKSPACE_GIB if v4 else 0.0
    budget: VllmBudget = vllm_budget(v, gpu.torch_total_gib, util, lay.tensor, cfg["hidden_size"],
                                     physical_experts, batched, all2all, lay.expert_parallel,
                                     bool(s["enforceEager"]), extra)
    # The most constrained stage decides capacity (vLLM: min over PP ranks).
    st, weights, kv, tokens, per_token, seq_layout = _worst_stage(
        stages, inv, cfg, place, kv_dtype, max_len,
        lambda w: budget.budget - w - budget.activation - budget.overhead)
    required = role.concurrency
    per_rank = -(-required // lay.data)
    return RoleSizing(
        name=role.name, gpu=gpu.id, engine=engine, gpu_memory=gpu.torch_total_gib,
        budget=budget.budget, weights=weights, activation=budget.activation,
        overhead=budget.overhead, kv_cache=kv,
        weights_by_component={k: b / GIB for k, b in st.by_component.items()},
        kv_bytes_per_token=per_token, kv_tokens_per_rank=tokens, max_model_len=max_len,
        max_concurrency=tokens / max_len, required_concurrency=required,
        per_rank_required=per_rank, data=lay.data, batched_tokens=batched, comm=budget.comm,
        cuda_graph_outside=budget.cuda_graph_outside, utilization=util, seq_layout=seq_layout)


def _worst_stage(stages, inv, cfg: dict, place, kv_dtype: str, max_len: int, kv_gib_for):
    """The pipeline stage with the fewest KV tokens (capacity is the minimum over PP ranks).

    ``kv_gib_for(weights_gib)`` is the engine's KV budget left next to a stage's weights.
    Returns (stage, weights GiB, KV GiB, KV tokens per rank, KV bytes per token, V4 layout key).
    DeepSeek-V4's windowed/compressed cache is sized per sequence of ``max_len`` (tokens = whole
    sequences x max_len, as vLLM prints them); MLA per token.
    """
    v4 = cfg.get("model_type") == "deepseek_v4"
    worst = None
    for st in stages:
        if not st.layers:  # a stage without attention layers holds no KV
            continue
        mtp = inv.mtp_layers if (place.mtp and st.stage == len(stages) - 1) else 0
        weights = st.total / GIB
        kv = kv_gib_for(weights)
        key = ()
        if v4:
            ratios = [v4_ratios(cfg)[i] for i in st.layers]
            seq = v4_sequence_bytes(ratios, max_len, mtp)
            per_token = -(-seq // max_len)
            tokens = max(0, int(kv * GIB / seq * max_len))
            key = (tuple(ratios), mtp)
        else:
            per_token = kv_bytes_per_token(cfg, kv_dtype, len(st.layers), mtp)
            tokens = max(0, int(kv * GIB // per_token))
        if worst is None or tokens < worst[3]:
            worst = (st, weights, kv, tokens, per_token, key)
    return worst


#: Memory taken before SGLang measures free memory (CUDA context + NCCL/custom all-reduce at init),
#: GiB; 1.8 reproduces the 2 x 8 H20 TP16 run of groundtruth-dev.yaml (712,400 tokens) to 0.6 %.
SGLANG_INIT_GIB = 1.8
#: CUDA graphs of a decode role, GiB (outside the static pool); SGLang disables them for
#: disaggregated prefill (server_args.py).
SGLANG_CUDA_GRAPH_GIB = 1.7


def _size_sglang(role: RoleInput, gpu: Gpu, inv, cfg: dict, stages, place) -> RoleSizing:
    """SGLang budget (sizing/sglang_budget.py): pool = pre x mfs - weights."""
    from ..engines.sglang import cuda_graph_batch, deepep_dispatch_tokens
    from .budget import ACT_BYTES_PER_TOKEN_HIDDEN, DEEPEP_HT_BUFFER_MB
    lay = role.layout
    s = role.serving
    group = lay.tensor * lay.data
    chunked_default, cgmbs_default = tier_defaults(gpu.hbm_mib, group)
    chunked = s["maxNumBatchedTokens"] or chunked_default
    normal_deepep = role.moe is not None and role.moe.all2all == "deepep_high_throughput"
    graphs_on = not s["enforceEager"] and role.mode != "prefill" and not normal_deepep
    cgmbs = cuda_graph_batch(role) if graphs_on else 0
    pre = gpu.torch_total_gib - SGLANG_INIT_GIB
    hidden = cfg["hidden_size"]
    activation = chunked * hidden * ACT_BYTES_PER_TOKEN_HIDDEN / GIB
    comm = 0.0
    moe = role.moe
    experts = (cfg.get("n_routed_experts") or 0) + place.redundant
    if moe and moe.all2all == "deepep_low_latency" and lay.expert_parallel:
        tokens = deepep_dispatch_tokens(role)
        comm = 4 * experts * tokens * 2 * hidden / GIB
    elif moe and moe.all2all in ("deepep_high_throughput", "deepep_v2") and lay.expert_parallel:
        comm = 2 * DEEPEP_HT_BUFFER_MB / 1024
    overhead = comm + (SGLANG_CUDA_GRAPH_GIB if graphs_on else 0.0)
    if s.get("memFractionStatic"):
        mfs = s["memFractionStatic"]
    elif s["gpuMemoryUtilization"]:
        mfs = (s["gpuMemoryUtilization"] * gpu.torch_total_gib - SGLANG_INIT_GIB
               - activation - overhead) / pre
        mfs = round(mfs, 3)
    else:
        mfs = default_mem_fraction_static(gpu.hbm_mib, group, lay.pipeline, lay.data,
                                          lay.data > 1, chunked,
                                          cgmbs if graphs_on else cgmbs_default,
                                          role.speculative is not None)
    max_len = s["maxModelLen"] or role.arch.max_position_embeddings
    st, weights, pool, tokens, per_token, seq_layout = _worst_stage(
        stages, inv, cfg, place, s["kvCacheDtype"], max_len, lambda w: pre * mfs - w)
    per_rank = -(-role.concurrency // lay.data)
    return RoleSizing(
        name=role.name, gpu=gpu.id, engine="sglang", gpu_memory=gpu.torch_total_gib,
        budget=pre * mfs, weights=weights, activation=activation, overhead=overhead,
        kv_cache=pool, weights_by_component={k: b / GIB for k, b in st.by_component.items()},
        kv_bytes_per_token=per_token, kv_tokens_per_rank=tokens, max_model_len=max_len,
        max_concurrency=tokens / max_len, required_concurrency=role.concurrency,
        per_rank_required=per_rank, data=lay.data, batched_tokens=chunked, comm=comm,
        cuda_graph_outside=0.0, utilization=mfs, outside_pool=pre * (1 - mfs),
        seq_layout=seq_layout)
