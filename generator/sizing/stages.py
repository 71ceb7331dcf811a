"""Which pipeline stage of a role decides its KV capacity (vLLM and SGLang take the minimum over
the pipeline ranks)."""

from __future__ import annotations

from ..catalog import ModelArch
from .kv import kv_bytes_per_token, layer_bytes
from .params_v4 import v4_ratios
from .result import GIB


def worst_stage(stages, inv, arch: ModelArch, place, kv_dtype: str, max_len: int, kv_gib_for,
                v4_cache=None, hybrid_cache=None):
    """The pipeline stage with the fewest KV tokens (capacity is the minimum over PP ranks).

    ``kv_gib_for(weights_gib)`` is the engine's KV budget left next to a stage's weights;
    ``v4_cache(ratios, mtp_layers)``: the engine release's DeepSeek-V4 layout
    (:class:`~generator.sizing.kv.V4Cache`) of a stage; ``hybrid_cache(per_layer, full,
    sliding, chunked)``: its pool for models whose layers attend to a window or a chunk
    (:class:`~generator.sizing.kv.HybridCache`). Returns (stage, weights GiB, KV GiB, KV tokens
    per rank, KV bytes per token, sequences of ``max_len`` per rank, the layout or None).
    DeepSeek-V4's windowed/compressed cache and the hybrid pools are sized by their engine's
    layout; MLA and full-attention GQA per token.
    """
    types = arch.attention.layer_types
    worst = None
    for st in stages:
        if not st.layers:  # a stage without attention layers holds no KV
            continue
        mtp = inv.mtp_layers if (place.mtp and st.stage == len(stages) - 1) else 0
        weights = st.total / GIB
        kv = kv_gib_for(weights)
        cache = None
        if arch.compressed_attention:
            ratios = [v4_ratios(arch)[i] for i in st.layers]
            cache = v4_cache(ratios, mtp)
        elif arch.attention.local and hybrid_cache is not None:
            kinds = [types[i] for i in st.layers]
            cache = hybrid_cache(layer_bytes(arch, kv_dtype, place.tp),
                                 kinds.count("full") + mtp, kinds.count("sliding"),
                                 kinds.count("chunked"))
        if cache is not None:
            tokens = cache.tokens(kv * GIB, max_len)
            per_token = cache.per_token()
            sequences = cache.sequences(kv * GIB, max_len)
        else:
            per_token = kv_bytes_per_token(arch, kv_dtype, st.layers, mtp, place.tp)
            tokens = max(0, int(kv * GIB // per_token))
            sequences = tokens / max_len
        if worst is None or sequences < worst[5]:
            worst = (st, weights, kv, tokens, per_token, sequences, cache)
    return worst
