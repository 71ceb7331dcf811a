"""Which pipeline stage of a role decides its KV capacity (vLLM and SGLang take the minimum over
the pipeline ranks)."""

from __future__ import annotations

from .kv import kv_bytes_per_token, v4_sequence_bytes
from .params import v4_ratios
from .result import GIB


def worst_stage(stages, inv, cfg: dict, place, kv_dtype: str, max_len: int, kv_gib_for):
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
