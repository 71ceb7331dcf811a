"""The result of sizing one role: the memory of its most loaded GPU and its KV capacity.
All memory figures are GiB (2^30 bytes); its JSON form is docs/spec.md §4's sizing report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GIB = 2**30


@dataclass
class RoleSizing:
    """Memory of the most loaded GPU of a role, and what it means for capacity.

    Attributes:
        name, gpu, engine: role name, GPU catalog id, engine name.
        gpu_memory: torch-visible memory, GiB; budget: what the engine may use, GiB.
        weights, activation, overhead, kv_cache: per-GPU GiB (kv_cache may be negative: the
            weights and fixed terms do not fit).
        load_buffers: per-GPU GiB of buffers the engine allocates while it builds the model
            and keeps (vLLM: the rotary cache, sparse MLA's index buffers and workspace,
            ``sizing/vllm_budget.py``): with :attr:`weights`, what vLLM prints as "Model loading
            took"; 0 for SGLang.
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
        admit_len: the tokens a sequence holds on average under the deployment's traffic
            (``spec.traffic``: input + output / 2), which :attr:`fits` and SIZ003 admit the
            required concurrency at; 0: at ``max_model_len``.
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
    load_buffers: float = 0.0
    outside_pool: float = 0.0
    seq_layout: Any = None
    admit_len: int = 0
    findings: list = field(default_factory=list)

    def longest_len_for(self, sequences: int) -> int:
        """Longest maxModelLen at which ``sequences`` fit one DP rank's KV cache. Linear for
        MLA; DeepSeek-V4's windowed/compressed cache (``seq_layout``: the most loaded stage's
        :class:`~generator.sizing.kv.V4Cache`) is solved by bisection."""
        if self.kv_cache <= 0 or sequences <= 0:
            return 0
        if not self.seq_layout:
            return self.kv_tokens_per_rank // sequences
        cache = self.seq_layout
        kv_bytes = self.kv_cache * GIB
        lo, hi = 0, 1 << 24
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if cache.sequences(kv_bytes, mid) >= sequences:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def one_request_gib(self) -> float:
        """KV GiB the engine's start-up check says one ``max_model_len`` request needs: vLLM's
        own arithmetic for DeepSeek-V4 (``seq_layout``, kv.V4Cache ``admission_bytes``: its
        compressed, window, indexer and state groups per release), a hybrid pool's blocks for
        one request (window and chunk layers hold only their span: kv.HybridCache
        ``request_bytes``), else the tokens x bytes per token (vLLM 0.33.0
        vllm/v1/core/kv_cache_planning.py ``check_enough_kv_cache_memory``)."""
        cache = self.seq_layout
        if self.engine == "vllm" and cache is not None and hasattr(cache, "admission_bytes"):
            return cache.admission_bytes(self.max_model_len) / GIB
        if self.engine == "vllm" and cache is not None and hasattr(cache, "request_bytes"):
            return cache.request_bytes(self.max_model_len) / GIB   # window / chunk layers
        return self.max_model_len * self.kv_bytes_per_token / GIB

    def longest_admitted_len(self) -> int:
        """The longest maxModelLen the engine's start-up check admits next to this KV cache
        (:meth:`one_request_gib`; bisection for DeepSeek-V4 on vLLM, else
        :meth:`longest_len_for` one sequence)."""
        cache = self.seq_layout
        if not (self.engine == "vllm" and cache is not None and hasattr(cache, "admission_bytes")):
            return self.longest_len_for(1)
        kv_bytes = self.kv_cache * GIB
        lo, hi = 0, self.max_model_len
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if cache.admission_bytes(mid) <= kv_bytes:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def admits_one_request(self) -> bool:
        """The KV cache passes the engine's start-up check for one ``max_model_len`` request:
        vLLM's own figure for DeepSeek-V4 (:meth:`one_request_gib`), else the tokens."""
        cache = self.seq_layout
        if self.engine == "vllm" and cache is not None and hasattr(cache, "admission_bytes"):
            return self.one_request_gib() <= self.kv_cache
        return self.kv_tokens_per_rank >= self.max_model_len

    def sequences_at(self, length: int) -> float:
        """Sequences of ``length`` tokens one DP rank's KV cache holds (``max_concurrency`` is
        this at ``max_model_len``): tokens / length, DeepSeek-V4's cache by its layout."""
        if self.kv_cache <= 0 or length <= 0:
            return 0.0
        if not self.seq_layout:
            return self.kv_tokens_per_rank / length
        return float(self.seq_layout.sequences(self.kv_cache * GIB, length))

    def holds(self, sequences: int, length: int) -> bool:
        """Whether one DP rank's KV cache holds ``sequences`` sequences of ``length`` tokens
        (:meth:`longest_len_for`)."""
        return sequences <= 0 or self.longest_len_for(sequences) >= length

    @property
    def fraction_base(self) -> float:
        """GiB the memory fraction multiplies: SGLang's memory at startup (static pool + what
        stays outside it), vLLM's total GPU memory. Defined when the fraction is 0 (SGLang's
        default formula rounds to 0 once its CUDA-graph reserve reaches the HBM size)."""
        if self.engine == "sglang":
            return self.budget + self.outside_pool
        return self.gpu_memory

    @property
    def fits(self) -> bool:
        """The role starts, holds its required concurrency at max_model_len (at
        :attr:`admit_len` when the traffic gives it), and (SGLang) has
        room outside the static pool for activations, CUDA graphs and buffers."""
        outside_ok = self.engine != "sglang" or self.outside_pool >= self.activation + self.overhead
        admitted = self.holds(self.per_rank_required, self.admit_len) if self.admit_len \
            else self.max_concurrency >= self.per_rank_required
        return self.kv_cache > 0 and admitted and self.max_concurrency >= 1 and outside_ok

    def kv_used(self, tokens_per_sequence: int | None = None) -> float:
        """The fraction of one rank's KV cache the sized load fills: ``per_rank_required``
        sequences of ``tokens_per_sequence`` tokens (default max_model_len, the worst case),
        0 without a KV cache."""
        if self.kv_tokens_per_rank <= 0:
            return 0.0
        length = tokens_per_sequence or self.max_model_len
        return self.per_rank_required * length / self.kv_tokens_per_rank

    def to_json(self) -> dict:
        """docs/spec.md §4 form (GiB rounded to 0.01, concurrency to 0.1)."""
        return {
            "name": self.name, "gpu": self.gpu, "engine": self.engine,
            "gpuMemoryGiB": round(self.gpu_memory, 2), "budgetGiB": round(self.budget, 2),
            "perGpu": {"weightsGiB": round(self.weights, 2),
                       "loadBuffersGiB": round(self.load_buffers, 2),
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
            "kvUsedAtSizing": round(self.kv_used(), 3),
            **({"kvUsedAtTraffic": round(self.kv_used(self.admit_len), 3)}
               if self.admit_len else {}),
            "fits": self.fits,
            "findings": [f.to_json() for f in self.findings],
        }
