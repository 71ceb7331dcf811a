"""KV-cache bytes per token on one GPU.

MLA caches one latent per token per layer: ``kv_lora_rank + qk_rope_head_dim`` values, with no
separate V, **replicated on every tensor-parallel rank** (each rank runs all its heads' attention
against the full latent); under attention data parallelism each rank holds only its own sequences.
Per layer (shared/research/anchors-planner.md §5, confirmed by groundtruth-dev.yaml to 0.01 %):

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
