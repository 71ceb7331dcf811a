"""The weight tensors of a model (:class:`Tensor`) and their inventory by layer kind
(:class:`Inventory`), as ``sizing/params.py`` builds them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Tensor:
    """One weight tensor (per layer that has it).

    Attributes:
        name: e.g. ``attn.q_b_proj``.
        component: ``attention`` | ``indexer`` | ``dense_mlp`` | ``shared_experts`` |
            ``routed_experts`` | ``router`` | ``embedding`` | ``lm_head`` | ``norms`` | ``mtp``.
        out_dim, in_dim: matrix shape (a vector has in_dim 1).
        quantized: stored in the checkpoint's low-precision format (FP8 / 4-bit); False keeps
            BF16 (or FP32 for ``fp32``).
        tp: ``shard`` (divided by the tensor-parallel size) or ``replicate``.
        experts: how many experts the tensor is repeated for (routed experts only, else 1).
        elem_bytes: bytes per element when not quantized (2 = BF16; 4 = FP32/int32, e.g.
            ``e_score_correction_bias``, V4's hyper-connection weights and ``tid2eid``).
        split: which dimension tensor parallelism divides: ``out`` (column-parallel) or ``in``
            (row-parallel: ``o_proj``, ``down``, V4's ``wo_b``; vLLM ``RowParallelLinear``).
        parts: merged matrices along ``out`` that are split separately (2 for gate_up: vLLM
            ``MergedColumnParallelLinear`` output_partition_sizes).
        shard_limit: a ``shard`` tensor is split over at most this many ranks and replicated
            beyond (GQA's key/value heads: vLLM ``QKVParallelLinear`` keeps
            max(1, kv_heads / TP) heads per rank); 0: no limit.
    """

    name: str
    component: str
    out_dim: int
    in_dim: int
    quantized: bool
    tp: str
    experts: int = 1
    elem_bytes: int = 2
    split: str = "out"
    parts: int = 1
    shard_limit: int = 0

    @property
    def params(self) -> int:
        """Parameters of the tensor for all its experts."""
        return self.out_dim * self.in_dim * self.experts


@dataclass(frozen=True)
class Inventory:
    """The tensors of a model by layer kind.

    Attributes:
        kinds: tensors of one decoder layer of each kind (``dense``, ``moe``, ``+noindex`` for
            layers without a sparse indexer; DeepSeek-V4: ``r4``/``r128``/``r0`` by compress
            ratio, ``+hash`` for hash-routed layers).
        layer_kinds: the kind of every main layer, in order.
        outer: embedding, final norm(s) and lm_head (placed on the first/last pipeline stage).
        mtp_layer: tensors of one MTP module (empty when the model has none).
        mtp_layers: number of MTP modules.
    """

    kinds: dict[str, tuple[Tensor, ...]]
    layer_kinds: tuple[str, ...]
    outer: tuple[Tensor, ...]
    mtp_layer: tuple[Tensor, ...]
    mtp_layers: int

    def layer(self, i: int) -> tuple[Tensor, ...]:
        """Tensors of main layer ``i``."""
        return self.kinds[self.layer_kinds[i]]

    def total_params(self, with_mtp: bool = False) -> int:
        """All parameters of the main model (plus the MTP modules with ``with_mtp``)."""
        per = {k: sum(t.params for t in ts) for k, ts in self.kinds.items()}
        total = sum(per[k] for k in self.layer_kinds) + sum(t.params for t in self.outer)
        if with_mtp:
            total += self.mtp_layers * sum(t.params for t in self.mtp_layer)
        return total

    def kind_counts(self) -> dict[str, int]:
        """Number of main layers of each kind, kinds in order of first appearance."""
        return dict(self._kind_counts)

    @cached_property
    def _kind_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for kind in self.layer_kinds:
            counts[kind] = counts.get(kind, 0) + 1
        return counts

    def component_params(self) -> dict[str, int]:
        """Main-model parameters by component (MTP excluded)."""
        out: dict[str, int] = {}
        for kind, n in self._kind_counts.items():
            for t in self.kinds[kind]:
                out[t.component] = out.get(t.component, 0) + n * t.params
        for t in self.outer:
            out[t.component] = out.get(t.component, 0) + t.params
        return out
