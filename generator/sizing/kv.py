"""KV-cache bytes per token on one GPU.

MLA caches one latent per token per layer: ``kv_lora_rank + qk_rope_head_dim`` values, with no
separate V, **replicated on every tensor-parallel rank** (each rank runs all its heads' attention
against the full latent); under attention data parallelism each rank holds only its own sequences.
Per layer (docs/design.md §5; the engine-printed figures tests/test_sizing.py checks confirm it to
0.01 %):

* ``auto`` (the model dtype, BF16): (512 + 64) x 2 = 1,152 B; ``fp8``: 576 B
  (vLLM MLA KV spec head_size 576, vllm/v1/kv_cache_interface.py).
* DeepSeek-V3.2 with an FP8 cache uses the ``fp8_ds_mla`` layout: 512 FP8 + 4 FP32 scales + 64
  BF16 rope = 656 B (vLLM flashmla_sparse ``get_kv_cache_shape``); plus the indexer key cache,
  index_head_dim FP8 + one FP32 scale per 128 = 132 B (vLLM ``DeepseekV32IndexerCache``).

GLM-5.2's IndexCache builds the indexer (and its key cache) on some layers only
(``catalog.capabilities.SparseIndex.layers``): the others cache the latent alone.

GQA (Qwen3-MoE, GLM-4.5, gpt-oss, Llama-4, MiniMax-M2) caches keys and values of the rank's KV
heads: 2 x heads per rank x head_dim x element bytes per layer, the heads split over attention
TP and replicated once TP exceeds them (:func:`kv_heads_per_rank`). Layers that attend to a
window or a chunk only share a hybrid pool (:class:`HybridCache`).

Speculative decoding with MTP adds the draft layers' KV to every token (vLLM allocates the
draft's attention layers in the same KV pool). Pipeline stages hold only their own layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..catalog import ModelArch


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


#: Bytes per element of the KV cache by ``serving.kvCacheDtype`` (auto = BF16 for these models).
KV_ELEMENT_BYTES = {"auto": 2, "fp8": 1}


def kv_heads_per_rank(arch: ModelArch, attn_tp: int) -> int:
    """KV heads one attention-TP rank caches: GQA's heads split over the ranks, at least one
    (vLLM 0.33.0 vllm/config/model.py ``get_num_kv_heads``: max(1, total // tp), a head
    replicated on several ranks when TP exceeds the KV heads; SGLang 0.5.23
    python/sglang/srt/configs/model_config.py ``get_num_kv_heads`` the same); 1 for MLA and
    compressed attention (the latent / the one head is replicated on every rank)."""
    at = arch.attention
    if at.kind != "gqa":
        return 1
    return max(1, at.kv_heads // max(attn_tp, 1))


def layer_bytes(arch: ModelArch, kv_dtype: str, attn_tp: int = 1, *, index: bool = True) -> int:
    """KV bytes per token of one attention layer on one GPU of attention-TP size ``attn_tp``:
    MLA's latent (+ the indexer's key where the layer has an indexer, ``index``); GQA's keys
    and values of :func:`kv_heads_per_rank` heads."""
    at = arch.attention
    if at.kind == "gqa":
        return kv_heads_per_rank(arch, attn_tp) * (at.head_dim + at.v_head_dim) \
            * KV_ELEMENT_BYTES[kv_dtype]
    kv_lora, rope = at.kv_lora_rank, at.qk_rope_head_dim
    if at.index is not None:  # DeepSeek-V3.2 / GLM-5: sparse MLA + indexer
        main = kv_lora + (kv_lora // 128) * 4 + rope * 2 if kv_dtype == "fp8" else (kv_lora + rope) * 2
        if not index:
            return main
        idim = at.index.dim
        return main + idim + (-(-idim // 128)) * 4
    return (kv_lora + rope) * KV_ELEMENT_BYTES[kv_dtype]


def kv_bytes_per_token(arch: ModelArch, kv_dtype: str, layers: int | Iterable[int],
                       mtp_layers: int = 0, attn_tp: int = 1) -> int:
    """KV bytes per token of one GPU holding ``layers`` attention layers (a count from the
    first, or the layers' indices) + MTP draft layers (each with its indexer)."""
    ids = range(layers) if isinstance(layers, int) else layers
    built = arch.attention.index.layers if arch.attention.index is not None else ()
    total = sum(layer_bytes(arch, kv_dtype, attn_tp,
                            index=not built or i >= len(built) or built[i]) for i in ids)
    return total + mtp_layers * layer_bytes(arch, kv_dtype, attn_tp)


#: Tokens per KV block of vLLM's attention layers on CUDA (CacheConfig block_size 16).
VLLM_BLOCK = 16
#: SGLang's default share of the full pool's tokens the sliding-window pool holds
#: (``--swa-full-tokens-ratio`` 0.8: SGLang 0.5.23 python/sglang/srt/arg_groups).
SGLANG_SWA_RATIO = 0.8


@dataclass(frozen=True)
class HybridCache:
    """The KV pool of a stage whose layers attend to a window or a chunk only (gpt-oss's sliding
    window, Llama-4's chunked local attention), as one engine release lays it out.

    Attributes:
        engine: ``vllm`` | ``sglang``; per_layer: KV bytes per token of one layer.
        full, sliding, chunked: the stage's layers of each kind (MTP layers count as full).
        window, chunk: tokens a sliding / chunked layer keeps.
        in_flight: vLLM: tokens a window must cover beyond it (``max_in_flight_tokens``).

    vLLM (vllm/v1/core/kv_cache_planning.py ``_get_kv_cache_groups_uniform_page_size``, 0.33):
    the layers of each kind are split into groups of g layers (g the fewest layers of a kind,
    or the most when that is under 1.5 x the fewest); a pool block is one page of g layers; a
    request takes cdiv(len, 16) blocks per full group, cdiv(min(window - 1 + in_flight, len),
    16) + 1 per sliding group, cdiv(min(chunk + in_flight, len), 16) per chunked group
    (v1/kv_cache_interface.py ``SlidingWindowSpec``, ``ChunkedLocalAttentionSpec``); "GPU KV
    cache size" is maximum concurrency x max_model_len (v1/core/kv_cache_utils.py
    ``get_kv_cache_capacity``).

    SGLang (python/sglang/srt/model_executor/pool_configurator.py, 0.5.23): the window layers
    keep :data:`SGLANG_SWA_RATIO` x the full layers' tokens; bytes per full token =
    per_layer x (full + ratio x window layers); "#tokens" is the full pool's.
    """

    engine: str
    per_layer: int
    full: int
    sliding: int = 0
    chunked: int = 0
    window: int = 0
    chunk: int = 0
    in_flight: int = 0
    #: SGLang: the window pool's tokens as a share of the full pool's
    #: (``serving.swaFullTokensRatio``, --swa-full-tokens-ratio; default :data:`SGLANG_SWA_RATIO`).
    swa_ratio: float = SGLANG_SWA_RATIO

    def _kinds(self) -> list[tuple[int, str]]:
        return [(n, k) for n, k in ((self.full, "full"), (self.sliding, "sliding"),
                                    (self.chunked, "chunked")) if n]

    def _group_size(self) -> int:
        counts = [n for n, _ in self._kinds()]
        low, high = min(counts), max(counts)
        return high if high < low * 1.5 else low

    def _pool_block(self) -> int:
        return VLLM_BLOCK * self.per_layer * self._group_size()

    def _blocks_per_request(self, seq_len: int) -> int:
        g = self._group_size()
        total = 0
        for n, kind in self._kinds():
            if kind == "full":
                need = _cdiv(seq_len, VLLM_BLOCK)
            elif kind == "sliding":
                need = _cdiv(min(self.window - 1 + self.in_flight, seq_len), VLLM_BLOCK) + 1
            else:
                need = _cdiv(min(self.chunk + self.in_flight, seq_len), VLLM_BLOCK)
            total += _cdiv(n, g) * need
        return total

    def request_bytes(self, seq_len: int) -> int:
        """vLLM: bytes one ``seq_len``-token request takes in this pool (its blocks in every
        group: the window and chunk groups hold only their span)."""
        return self._blocks_per_request(seq_len) * self._pool_block()

    def bytes_per_full_token(self) -> float:
        """SGLang's bytes per token of the full pool."""
        return self.per_layer * (self.full + self.swa_ratio * (self.sliding + self.chunked))

    def tokens(self, kv_bytes: float, seq_len: int) -> int:
        """KV tokens of one rank's pool as the engine prints them."""
        if self.engine == "sglang":
            return int(max(0.0, kv_bytes) / self.bytes_per_full_token())
        return int(self.sequences(kv_bytes, seq_len) * seq_len)

    def sequences(self, kv_bytes: float, seq_len: int) -> float:
        """Sequences of ``seq_len`` tokens one rank's pool holds."""
        if self.engine == "sglang":
            full = int(max(0.0, kv_bytes) / self.bytes_per_full_token())
            window = self.swa_ratio * full
            need = max(min(seq_len, self.window or self.chunk or seq_len), 1)
            return min(full / seq_len, window / need) if (self.sliding or self.chunked) \
                else full / seq_len
        blocks = int(max(0.0, kv_bytes) // self._pool_block())
        return blocks / self._blocks_per_request(seq_len)

    def per_token(self) -> int:
        """Bytes per token of the pool, for reports (every layer's bytes)."""
        return self.per_layer * (self.full + self.sliding + self.chunked)


#: DeepSeek-V4 cache entry, bytes: the ``fp8_ds_mla``-style layout of 448 FP8 non-rope values,
#: 64 BF16 rope values, 7 UE8M0 scales and a pad byte (vLLM models/deepseek_v4/attention.py;
#: SGLang deepseek_v4 memory pool ``448 + 64 * 2 + 8``); the indexer key: 128 FP8 + one FP32
#: scale. Both engines store V4's cache in this layout whatever ``kvCacheDtype`` says.
V4_ENTRY, V4_INDEX_ENTRY = 584, 132
#: Page bytes are rounded up to multiples of 576 (vLLM v1/kv_cache_interface.py; SGLang
#: kernels/ops/attention/dsv4/kv_layout.py ``page_bytes``).
V4_PAGE_ALIGN = 576
#: SGLang's window pool share for DeepSeek-V4 unless --swa-full-tokens-ratio says otherwise
#: (SGLang 0.5.23 python/sglang/srt/arg_groups/model_overrides/deepseek_v4.py: 0.1;
#: model_executor/pool_configurator.py ``DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO``).
V4_SWA_RATIO = 0.1
#: Sliding window of every V4 layer and the compressor state windows, tokens (config
#: ``sliding_window`` 128; the ratio-4 compressor keeps 8 tokens, the ratio-128 one 128).
V4_WINDOW, V4_R4_WINDOW, V4_R128_WINDOW = 128, 8, 128


def _pad(n: int) -> int:
    return -(-n // V4_PAGE_ALIGN) * V4_PAGE_ALIGN


@dataclass(frozen=True)
class V4Cache:
    """How one engine release lays out DeepSeek-V4's cache on one GPU (docs/v4-kv.md has the
    derivation from both engines' source, and the engine logs it reproduces).

    Attributes:
        engine: ``vllm`` | ``sglang``; scheme: the release's layout (below).
        n4, n128, layers: the stage's ratio-4 and ratio-128 layers and all its attention layers
            (MTP draft layers included: they keep a sliding window; SGLang ``fixed-state``: the
            target's layers only, the draft inflates the per-token figure).
        in_flight: vLLM: tokens a window group must cover beyond its window
            (``max_num_batched_tokens``, x 2 with async scheduling from 0.26.0:
            ``VllmConfig.max_in_flight_tokens``).
        entries: SGLang <= 0.5.14: every entry of ``compress_ratios`` (the MTP one included).
        running_per_rank: SGLang >= 0.5.15: sequences per rank the fixed ratio-128 state holds.
        mtp: SGLang: the draft runs (doubles the ratio-4 state ring).

    vLLM (hybrid KV cache manager; 256-token blocks for the full group):

    * full group per block: each ratio-4 layer pad(64 x 584) + pad(64 x 132), each ratio-128
      layer pad(2 x 584); a request needs cdiv(len, 256) blocks;
    * window groups (blocks of 64, 4 and 8 tokens): the sliding window (all layers, split in two
      groups), the ratio-4 compressor state (pad(4 x 2048 x 4) + pad(4 x 512 x 4) per layer),
      the ratio-128 state (pad(8 x 1024 x 4)); a request needs
      cdiv(min(window - 1 + in_flight, len), block) + 1 blocks of each;
    * ``packed`` (0.20.0-0.28.x, v1/core/kv_cache_utils.py ``_get_kv_cache_groups_uniform_groups``,
      read in the 0.20.0, 0.25.0, 0.26.0 and 0.28.0 wheels): pages padded to the full group's,
      one pool block packs every group's page (S x 37,440 + ratio-4 indexer + ratio-128 pages,
      S the largest group), a request takes ceil(its byte-weighted blocks / full block) pool
      blocks; the start-up check counts layer tuples (:meth:`admission_bytes`);
    * ``planned`` (0.29.0 on: v1/core/kv_cache_utils.py ``_get_packed_kv_cache_groups`` in the
      0.29.0-0.31.0 wheels and 0.32.0, v1/core/kv_cache_planning.py in 0.33.0): one pool block
      is the widest group's block, a request takes the plain sum of its groups' blocks.

    SGLang (DSv4 pool, tokens per rank = full tokens of the pool, page-floored to 256):

    * ``full-state`` (<= 0.5.14, pool_configurator.py ``_get_bytes_per_full_token``): per full
      token 0.1 x 584 x entries + 584/4 x n4 + 584/128 x n128 + 132/4 x n4 + the compressor
      states 0.1 x 8/128 x (8192 + 2048) x n4 + 0.1 x 4096 x n128 (SWA pool 10 % of the full);
    * ``fixed-state`` (>= 0.5.15; 0.5.23's pool_configurator.py): pages padded (585 B/token for
      the window and ratio-4, 864 for ratio-128): 0.1 x (585 x layers + ring/256 x 10240 x n4)
      + n4 x (585 + 132)/4 + n128 x 864/128 per full token (ring 8, 16 with MTP; with MTP the
      whole figure x (layers + 1)/layers, ``layers`` the target's: ``_spec_infl``), plus a fixed
      ratio-128 state of ceil((running + 1) x 128 + 129, 128) x 4096 B per ratio-128 layer.
    """

    engine: str
    scheme: str
    n4: int
    n128: int
    layers: int
    in_flight: int = 0
    entries: int = 0
    running_per_rank: int = 0
    mtp: bool = False
    #: SGLang: the window pool's share of the full pool's tokens: DeepSeek-V4's default
    #: :data:`V4_SWA_RATIO`, or ``serving.swaFullTokensRatio`` (--swa-full-tokens-ratio).
    swa_ratio: float = V4_SWA_RATIO

    # -- vLLM --------------------------------------------------------------------------------
    def _full_block(self) -> int:
        return self.n4 * (_pad(64 * V4_ENTRY) + _pad(64 * V4_INDEX_ENTRY)) \
            + self.n128 * _pad(2 * V4_ENTRY)

    def _groups(self, seq_len: int) -> list[tuple[int, int]]:
        """(blocks per request, bytes per block) of every group of the vLLM layout."""
        swa_page = _pad(64 * V4_ENTRY)
        r4_state = _pad(4 * 2048 * 4) + _pad(4 * 512 * 4)
        r128_state = _pad(8 * 1024 * 4)
        if self.scheme == "packed":   # state pages padded to the full group's page sizes
            r4_state = _pad(64 * V4_ENTRY) + _pad(64 * V4_INDEX_ENTRY)
            r128_state = _pad(64 * V4_ENTRY)
        swa_a, swa_b = _cdiv(self.layers, 2), self.layers // 2

        def window(w: int, block: int) -> int:
            return _cdiv(min(w - 1 + self.in_flight, seq_len), block) + 1

        return [(_cdiv(seq_len, 256), self._full_block()),
                (window(V4_WINDOW, 64), swa_a * swa_page),
                (window(V4_WINDOW, 64), swa_b * swa_page),
                (window(V4_R4_WINDOW, 4), self.n4 * r4_state),
                (window(V4_R128_WINDOW, 8), self.n128 * r128_state)]

    def _pool_block(self) -> int:
        if self.scheme == "packed":
            slots = max(self.n4, self.n128, _cdiv(self.layers, 2))
            return slots * _pad(64 * V4_ENTRY) + self.n4 * _pad(64 * V4_INDEX_ENTRY) \
                + self.n128 * _pad(2 * V4_ENTRY)
        return max(b for _, b in self._groups(1))

    def _blocks_per_request(self, seq_len: int) -> int:
        groups = self._groups(seq_len)
        if self.scheme == "packed":
            return _cdiv(sum(n * b for n, b in groups), self._full_block())
        return sum(n for n, _ in groups)

    def admission_bytes(self, seq_len: int) -> int:
        """KV bytes vLLM's start-up check says one request of ``seq_len`` tokens needs
        (``check_enough_kv_cache_memory``: "To serve at least one request with the model's max
        seq len (N), (X GiB KV cache is needed, ..."), on the pool's ``available_memory``.

        * ``packed`` (0.20.0-0.28.x, vllm/v1/core/kv_cache_utils.py
          ``_max_memory_usage_bytes_from_groups``, the DeepSeek-V4 case of groups of
          UniformTypeKVCacheSpecs): the layer tuples x the full group's distinct page sizes x
          the pages every group needs, with the window groups split by
          ``_get_kv_cache_groups_uniform_groups`` (``_approximate_gcd``); :meth:`_tuples`.
        * ``planned`` (0.29.0 on): the pool block x the blocks the groups need, plus the null
          block the pool holds back (the check is on ``available_memory`` - one block)."""
        groups = self._groups(seq_len)
        if self.scheme == "packed":
            tuple_bytes = _pad(64 * V4_ENTRY) + _pad(64 * V4_INDEX_ENTRY) \
                + (_pad(2 * V4_ENTRY) if self.n128 else 0)
            tuples, splits = self._tuples()
            pages = sum(n * k for (n, _), k in zip(groups, splits))
            return int(tuples * tuple_bytes * pages)
        return self._pool_block() * (sum(n for n, _ in groups) + 1)

    def _tuples(self) -> tuple[int, list[int]]:
        """vLLM 0.20-0.28's layer tuples per group for the start-up check, and how many groups
        each of :meth:`_groups` stands for (the window, ratio-4 and ratio-128 state groups split
        into groups of at most d tuples, d minimising the padding: vllm/v1/core/
        kv_cache_utils.py ``_approximate_gcd``, lower bound the full group's tuples)."""
        full = max(self.n4, self.n128)
        counts = [full, self.layers, self.n4, self.n128]
        values = [c for c in counts if c]
        d = min(range(full, max(values) + 1),
                key=lambda x: (sum(_cdiv(v, x) * x - v for v in values), -x))
        split = [_cdiv(c, d) if c else 0 for c in counts]
        tuples = max([full] + [_cdiv(c, s) for c, s in zip(counts[1:], split[1:]) if c])
        # _groups lists the window group as two halves: together they are split[1] groups
        window = split[1] / 2
        return tuples, [1, window, window, split[2], split[3]]

    # -- SGLang ------------------------------------------------------------------------------
    def bytes_per_full_token(self) -> float:
        """SGLang's bytes per full token (what it logs as ``bytes_per_full_token``)."""
        r = self.swa_ratio
        if self.scheme == "full-state":
            return (r * V4_ENTRY * self.entries + V4_ENTRY / 4 * self.n4
                    + V4_ENTRY / 128 * self.n128 + V4_INDEX_ENTRY / 4 * self.n4
                    + r * 8 / 128 * (8192 + 2048) * self.n4 + r * 4096 * self.n128)
        ring = 16 if self.mtp else 8
        swa, r128 = 585, 864
        per_token = (r * (swa * self.layers + ring / 256 * 10240 * self.n4)
                     + self.n4 * (swa + V4_INDEX_ENTRY) / 4 + self.n128 * r128 / 128)
        # the draft worker's one layer: every per-token byte x (target + 1) / target
        # (0.5.23 pool_configurator.py DSV4PoolConfigurator.__init__ _spec_infl)
        return per_token * (self.layers + 1) / self.layers if self.mtp else per_token

    def _fixed_bytes(self) -> int:
        if self.engine != "sglang" or self.scheme != "fixed-state":
            return 0
        rows = _cdiv((self.running_per_rank + 1) * 128 + 129, 128) * 128
        return rows * 1024 * 4 * self.n128

    # -- both --------------------------------------------------------------------------------
    def tokens(self, kv_bytes: float, seq_len: int) -> int:
        """KV tokens of one rank's pool as the engine prints them: SGLang's full tokens (page
        floored); vLLM's "GPU KV cache size", which for hybrid models is maximum concurrency x
        max_model_len (v1/core/kv_cache_utils.py ``_report_kv_cache_config``)."""
        if self.engine == "sglang":
            full = int(max(0.0, kv_bytes - self._fixed_bytes()) / self.bytes_per_full_token())
            return full // 256 * 256
        return int(self.sequences(kv_bytes, seq_len) * seq_len)

    def sequences(self, kv_bytes: float, seq_len: int) -> float:
        """Sequences of ``seq_len`` tokens one rank's pool holds (vLLM's "maximum
        concurrency")."""
        if self.engine == "sglang":
            return self.tokens(kv_bytes, seq_len) / seq_len
        blocks = int(max(0.0, kv_bytes) // self._pool_block())
        return blocks / self._blocks_per_request(seq_len)

    def per_token(self) -> int:
        """Bytes per token of the pool, for reports (vLLM: pool block / 256)."""
        if self.engine == "sglang":
            return round(self.bytes_per_full_token())
        return -(-self._pool_block() // 256)
