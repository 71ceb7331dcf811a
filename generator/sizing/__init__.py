"""The HBM sizing validator: the memory of the most loaded GPU of every role.

:func:`size_role` combines the weight placement (``weights.py``), the KV bytes per token
(``kv.py``) and the engine's budget (``vllm_budget.py``, ``sglang_budget.py``) into a
:class:`RoleSizing`, whose JSON form is docs/spec.md §4's sizing report. The checks on it (SIZ*
rules) are in ``checks/sizing.py``. All memory figures are GiB (2^30 bytes).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from ..catalog import Gpu
from ..roles import RoleInput, engine_switch
from .formats import held_encoding, mxfp4_padding
from .params import inventory
from .result import RoleSizing
from .sglang_budget import size_sglang
from .vllm_budget import size_vllm
from .weights import Placement, offload_stages, stage_weights

__all__ = ["EngineRelease", "RoleSizing", "placement_for", "size_role"]


class EngineRelease(Protocol):
    """What the sizing reads of an engine dialect (``generator.engines.base.Dialect``):
    the engine (``vllm`` | ``sglang``), the known release whose budget applies, and vLLM's
    default ``--gpu-memory-utilization`` for it (None for SGLang, whose static fraction the
    budget derives: sglang_budget.py)."""

    @property
    def engine(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def gpu_memory_utilization_default(self) -> float | None: ...


#: SGLang all-to-all backends whose MoE layers replicate the shared experts (``--moe-a2a-backend``
#: deepep / deepep_v2 / nixl / pplx / flashinfer; models/deepseek_v2.py ``_shared_expert_use_tp1``).
SGLANG_SHARED_TP1 = ("deepep_low_latency", "deepep_high_throughput", "deepep_v2", "nixl_ep",
                     "pplx", "flashinfer_all2allv")


def placement_for(role: RoleInput, engine: str) -> Placement:
    """How the engine places the model on one GPU of ``role`` (see :class:`Placement`).

    SGLang: the TP group is tensor x data; attention TP = tensor / context (context parallelism
    replicates attention over the CP ranks, layers/dp_attention.py ``attn_tp_size``); the dense
    MLP runs data-parallel with attention DP (moegen renders ``--moe-dense-tp-size 1``). Under
    attention DP (data > 1) each rank embeds only its own tokens, so the input embedding is
    split over the attention-TP group, not the whole group (SGLang 0.5.23
    python/sglang/srt/layers/vocab_parallel_embedding.py ``get_embedding_tp_kwargs``:
    ``use_attn_tp_group=is_dp_attention_enabled()``, used by models/deepseek_v2.py and
    deepseek_nextn.py; models/qwen2_moe.py, glm4_moe.py, llama4.py, gpt_oss.py, minimax_m2.py
    pass the same; read at 0.5.14 too): with one attention-TP rank per DP rank, the usual
    layout, every GPU holds the whole vocab x hidden table. DeepSeek-V4 keeps the whole-group
    split: its source replicates the table (models/deepseek_v4.py ``enable_tp=not
    is_dp_attention_enabled()``, 0.5.14 and 0.5.23), but the one engine-printed V4 attention-DP
    figure (sgl-project/sglang#24523: 186,368 tokens per rank, tests/test_v4_kv.py) leaves no
    room for the 1.5 GiB more per GPU that would add: left until a second figure says which
    term is off. The lm_head stays split over the whole group unless engineArgs has
    ``--enable-dp-lm-head`` (``ParallelLMHead(use_attn_tp_group=enable_dp_lm_head)``: the
    attention-TP group); ``SGLANG_ENABLE_EMBED_REPLICATION`` in the role's env replicates the
    embedding of the models that place it with ``get_embedding_tp_kwargs``.
    """
    lay = role.layout
    moe = role.moe
    redundant = moe.eplb.redundantExperts if (moe and moe.eplb and moe.eplb.enabled) else 0
    common: dict[str, Any] = dict(ep=lay.ep_size, pp=lay.pipeline, redundant=redundant,
                  mtp=role.speculative is not None, mla_bf16_copies=True)
    if engine == "sglang":
        group = lay.tensor * lay.data
        cp = role.parallel.context or 1
        a2a = moe.all2all if moe else None
        attn_tp = max(1, lay.tensor // cp)
        embed_tp = attn_tp if lay.data > 1 and not role.arch.compressed_attention else group
        # SGLANG_ENABLE_EMBED_REPLICATION (an EnvBool: true/1/yes/y, sglang/srt/environ.py)
        # replicates the table where get_embedding_tp_kwargs places it (deepseek_v2.py,
        # deepseek_nextn.py: the MLA models that are not DeepSeek-V4).
        if (role.env_value("SGLANG_ENABLE_EMBED_REPLICATION") or "").lower() in (
                "true", "1", "yes", "y") and role.arch.attention.kind == "mla" \
                and not role.arch.compressed_attention:
            embed_tp = 1
        # --enable-dp-lm-head splits the lm_head over the attention-TP group
        # (ParallelLMHead(use_attn_tp_group=enable_dp_lm_head), models/deepseek_v2.py).
        head_tp = attn_tp if engine_switch(role.engine_args, "--enable-dp-lm-head") else group
        return Placement(tp=attn_tp, dense_tp=1 if lay.data > 1 else group,
                         shared_tp=1 if (lay.expert_parallel and a2a in SGLANG_SHARED_TP1) else group,
                         moe_tp=group, vocab_tp=head_tp, embed_tp=embed_tp, **common)
    return Placement(tp=lay.tensor, moe_tp=lay.tensor * lay.data, **common)


#: (model, format, placement) -> stage weights, a pure function of the three.
_STAGES: dict[tuple, list] = {}


def size_role(role: RoleInput, gpu: Gpu, dialect: EngineRelease) -> RoleSizing:
    """Size one role on its pool's GPU with the budget of ``dialect``'s engine release.

    Raises:
        KeyError: the model's config.json lacks a field the weight inventory needs.
    """
    arch = role.arch
    inv = inventory(arch)
    place = placement_for(role, dialect.engine)
    held = held_encoding(dialect.engine, role.model.weights, gpu)   # formats.ENGINE_STORAGE
    if held:
        place = replace(place, experts_as=held)
    if role.model.weights == "mxfp4" or held == "mxfp4":
        place = replace(place, mxfp4_pad=mxfp4_padding(dialect.engine, gpu))
    key = (arch, role.model.weights, place)
    stages = _STAGES.get(key)
    if stages is None:   # the planner sizes one placement many times (concurrency varies)
        if len(_STAGES) >= 4096:
            _STAGES.clear()
        stages = _STAGES[key] = stage_weights(inv, arch, role.model.weights, place)
    stages = offload_stages(stages, inv, arch, role.model.weights, place,
                            role.serving.weightOffload)
    if dialect.engine == "sglang":
        return size_sglang(role, gpu, inv, arch, stages, place, dialect.version)
    utilization = dialect.gpu_memory_utilization_default
    assert utilization is not None, "every vLLM release has a --gpu-memory-utilization default"
    return size_vllm(role, gpu, dialect.version, utilization, inv, arch, stages, place)
