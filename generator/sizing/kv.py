"""KV-cache bytes per token on one GPU.

MLA caches one latent per token per layer: ``kv_lora_rank + qk_rope_head_dim`` values, with no
separate V, **replicated on every tensor-parallel rank** (each rank runs all its heads' attention
against the full latent); under attention data parallelism each rank holds only its own sequences.
Per layer (docs/anchors-planner.md §5, confirmed by groundtruth-dev.yaml to 0.01 %):

* ``auto`` (the model dtype, BF16): (512 + 64) x 2 = 1,152 B; ``fp8``: 576 B
  (vLLM MLA KV spec head_size 576, vllm/v1/kv_cache_interface.py).
* DeepSeek-V3.2 with an FP8 cache uses the ``fp8_ds_mla`` layout: 512 FP8 + 4 FP32 scales + 64
  BF16 rope = 656 B (vLLM flashmla_sparse ``get_kv_cache_shape``); plus the indexer key cache,
  index_head_dim FP8 + one FP32 scale per 128 = 132 B (vLLM ``DeepseekV32IndexerCache``).

Speculative decoding with MTP adds the draft layers' KV to every token (vLLM allocates the
draft's attention layers in the same KV pool). Pipeline stages hold only their own layers.
"""

from __future__ import annotations

#: Bytes per element of the KV cache by ``serving.kvCacheDtype`` (auto = BF16 for these models).
KV_ELEMENT_BYTES = {"auto": 2, "fp8": 1}


def mla_layer_bytes(config: dict, kv_dtype: str) -> int:
    """KV bytes per token of one attention layer.

    Raises:
        KeyError: the config has no MLA fields (not an MLA model).
    """
    kv_lora, rope = config["kv_lora_rank"], config["qk_rope_head_dim"]
    if config.get("index_n_heads"):  # DeepSeek-V3.2: sparse MLA + indexer
        main = kv_lora + (kv_lora // 128) * 4 + rope * 2 if kv_dtype == "fp8" else (kv_lora + rope) * 2
        idim = config["index_head_dim"]
        return main + idim + (-(-idim // 128)) * 4
    return (kv_lora + rope) * KV_ELEMENT_BYTES[kv_dtype]


def kv_bytes_per_token(config: dict, kv_dtype: str, layers: int, mtp_layers: int = 0) -> int:
    """KV bytes per token of one GPU holding ``layers`` attention layers (+ MTP draft layers)."""
    return mla_layer_bytes(config, kv_dtype) * (layers + mtp_layers)


#: DeepSeek-V4 cache entry, bytes: the ``fp8_ds_mla``-style layout of 448 FP8 non-rope values,
#: 64 BF16 rope values, 7 UE8M0 scales and a pad byte (vLLM deepseek_v4_attention.py; SGLang
#: deepseek_v4_memory_pool.py ``448 + 64 * 2 + 8``).
V4_ENTRY = 584
#: V4 indexer key entry: 128 FP8 + one FP32 scale (vLLM allocates the FP8 size).
V4_INDEX_ENTRY = 132
#: vLLM V4 pages: 256-token blocks, page bytes rounded up to multiples of 576
#: (vllm/v1/kv_cache_interface.py, V4 hybrid spec); per-request fixed state: the sliding window
#: (3 blocks of 64 tokens, 112,320 B), the ratio-4 compressor state (81,920 B padded to
#: 3 x 37,440) and the ratio-128 state (17 blocks, 636,480 B).
V4_BLOCK, V4_PAGE_ALIGN = 256, 576
V4_SWA_STATE, V4_R4_STATE, V4_R128_STATE = 112_320, 112_320, 636_480


def _pad(n: int) -> int:
    return -(-n // V4_PAGE_ALIGN) * V4_PAGE_ALIGN


def v4_sequence_bytes(ratios: list[int], seq_len: int, mtp_layers: int = 0) -> int:
    """KV bytes one sequence of ``seq_len`` tokens takes on one GPU (vLLM's V4 layout).

    Every layer keeps a 128-token sliding window; ratio-4 layers add one compressed entry and
    one indexer key per 4 tokens, ratio-128 layers one entry per 128 tokens. vLLM sizes the
    pool in layer tuples: per 256-token block, max(#ratio-4, #ratio-128) tuples of one ratio-4
    page, one indexer page and one ratio-128 page (vLLM vllm/v1/core/kv_cache_utils.py, the
    hybrid KV groups of DeepSeek-V4). The latent is replicated on every tensor-parallel rank.
    """
    n4 = sum(1 for r in ratios if r == 4)
    n128 = sum(1 for r in ratios if r == 128)
    tuples = max(n4, n128)
    blocks = -(-seq_len // V4_BLOCK)
    per_block = (_pad(V4_BLOCK // 4 * V4_ENTRY) + _pad(V4_BLOCK // 4 * V4_INDEX_ENTRY)
                 + _pad(V4_BLOCK // 128 * V4_ENTRY))
    fixed = (len(ratios) + mtp_layers) * V4_SWA_STATE + n4 * V4_R4_STATE + n128 * V4_R128_STATE
    return tuples * blocks * per_block + fixed
