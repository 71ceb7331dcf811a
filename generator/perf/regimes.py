"""Which regime of the performance model a predicted figure is in, and that regime's measured
error against published figures (``bench/planner_residuals.py`` writes the table,
``generator/perf/data/regime-errors.json``; ``tests/test_regimes.py`` checks it is current).

The regimes follow the engine behaviour that dominates the figure and the model term that
stands for it (generator/perf/terms.py), first match wins:

1. ``amd``: any figure on AMD Instinct GPUs (ROCm kernels: the per-step, per-request and
   attention-DP costs and the prefill efficiency of :data:`fixed.FIXED_COSTS` ``("amd", "*")``,
   with AITER's persistent MLA decode path, :func:`decode.persistent_mla`);
2. ``ttft`` / ``ttft-disaggregated``: time to first token (the per-request floor, the prefill
   step, queueing; disaggregated: + the KV transfer) of a unified / a prefill + decode
   deployment;
3. ``dp-attention-unified``: TPOT / tokens/s of one role serving both phases with attention DP
   (a prefill on one DP rank holds every rank's MoE step);
4. ``sparse-attention``: DeepSeek-V3.2 (the lightning indexer and top-k sparse MLA);
5. ``prefill``: prefill throughput (prefill roles, a unified role's prefill capacity);
6. ``disaggregated-end-to-end``: tokens/s of a prefill + decode deployment as a whole;
7. ``ep-decode``: decode with attention DP and expert parallelism (disaggregated);
8. ``tp-decode``: decode without attention DP (tensor-parallel attention), unified or not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..resources import package_text

#: Regime id -> what it covers (the label a prediction quotes).
REGIMES = {
    "amd": "AMD Instinct",
    "ttft": "time to first token (one role serving both phases)",
    "ttft-disaggregated": "time to first token (disaggregated)",
    "dp-attention-unified": "unified serving with attention DP",
    "sparse-attention": "DeepSeek-V3.2 sparse attention",
    "prefill": "prefill throughput",
    "disaggregated-end-to-end": "disaggregated end to end",
    "ep-decode": "expert-parallel decode",
    "tp-decode": "tensor-parallel decode",
}

#: Figure kinds: ``ttft``, ``tpot``, ``output`` (a decoding role's tokens/s), ``input`` (a
#: prefilling role's tokens/s), ``end-to-end`` (a disaggregated deployment's tokens/s).
KINDS = ("ttft", "tpot", "output", "input", "end-to-end")

#: The file the bench writes (per regime: label, and for ``dev``, ``heldOut`` and ``all``
#: figures: n, median and worst error factor max(ratio, 1 / ratio)).
ERRORS_FILE = Path(__file__).with_name("data") / "regime-errors.json"


def classify(kind: str, *, unified: bool, data: int, vendor: str, sparse: bool) -> str:
    """The regime id (:data:`REGIMES`) of a figure of ``kind`` (:data:`KINDS`) predicted for a
    deployment whose decoding role serves both phases (``unified``) with ``data`` attention-DP
    ranks per instance, on GPUs of ``vendor`` (catalog ``Gpu.vendor``), of a model with sparse
    attention (``sparse``: DeepSeek-V3.2's indexer). Raises ValueError for an unknown kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown figure kind {kind!r}")
    if vendor == "amd":
        return "amd"
    if kind == "ttft":
        return "ttft" if unified else "ttft-disaggregated"
    if kind == "input":
        return "sparse-attention" if sparse else "prefill"
    if unified and data > 1:
        return "dp-attention-unified"
    if sparse:
        return "sparse-attention"
    if kind == "end-to-end":
        return "disaggregated-end-to-end"
    return "ep-decode" if data > 1 else "tp-decode"


#: Candidate / role JSON fields (docs/spec.md §5) -> figure kind; ``outputTokensPerSec`` and
#: ``totalTokensPerSec`` of a disaggregated deployment are ``end-to-end`` (see :func:`kind_of`).
FIELD_KINDS = {
    "ttftMs": "ttft", "tpotMs": "tpot", "tpotMsAtBatch": "tpot",
    "outputTokensPerSec": "output", "outputTokensPerSecPerNode": "output",
    "outputTokensPerSecPerGpu": "output",
    "totalTokensPerSec": "output", "inputTokensPerSecPerNode": "input",
    "inputTokensPerSec": "input",
}


def kind_of(field: str, *, unified: bool, role_level: bool) -> str:
    """The figure kind of JSON ``field`` (:data:`FIELD_KINDS`): a disaggregated deployment's
    whole-deployment tokens/s (not a role's) is ``end-to-end``."""
    kind = FIELD_KINDS[field]
    if kind == "output" and not unified and not role_level:
        return "end-to-end"
    return kind


def sparse_attention(arch) -> bool:
    """Whether a model (:class:`~generator.catalog.ModelArch`) has DeepSeek-V3.2's sparse
    attention (an indexer, without V4's compressed attention)."""
    return arch.sparse_attention


@dataclass(frozen=True)
class RegimeError:
    """A regime's measured bench error: figures ``n``, ``median`` and ``worst`` error factor
    (max(predicted / published, published / predicted)) over every published figure of the
    bench in that regime (development and held-out), and ``held_out_n`` of them held out."""

    regime: str
    label: str
    n: int
    median: float
    worst: float
    held_out_n: int

    def describe(self) -> str:
        """``"<label> regime, bench median error 9 %, worst 31 % (n figures)"``."""
        if not self.n:
            return f"{self.label} regime, no published figure in the bench"
        return (f"{self.label} regime, bench median error {self.median - 1:.0%}, worst "
                f"{self.worst - 1:.0%} ({self.n} figure{'s' if self.n != 1 else ''})")

    def to_json(self) -> dict:
        """``{"regime", "label", "figures", "heldOut", "medianError", "worstError"}`` (errors as
        fractions: 0.09 = 9 %; None without figures)."""
        return {"regime": self.regime, "label": self.label, "figures": self.n,
                "heldOut": self.held_out_n,
                "medianError": round(self.median - 1, 3) if self.n else None,
                "worstError": round(self.worst - 1, 3) if self.n else None}



@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(package_text("perf", "data", ERRORS_FILE.name))["regimes"]


def regime_error(regime: str) -> RegimeError:
    """The measured error of ``regime`` (:data:`ERRORS_FILE`); ``n`` 0 when the bench has no
    figure in it. Raises KeyError for an unknown regime id."""
    label = REGIMES[regime]
    row = _table().get(regime)
    if not row or not row["all"]["n"]:
        return RegimeError(regime, label, 0, 0.0, 0.0, 0)
    a = row["all"]
    return RegimeError(regime, label, a["n"], a["median"], a["worst"], row["heldOut"]["n"])


#: Predicted figures (JSON field names of a candidate / role prediction) -> figure kind, for a
#: unified deployment and a disaggregated one.
_FIELDS = {True: {"ttftMs": "ttft", "tpotMs": "tpot", "outputTokensPerSec": "output",
                  "inputTokensPerSec": "input"},
           False: {"ttftMs": "ttft", "tpotMs": "tpot", "outputTokensPerSec": "end-to-end",
                   "inputTokensPerSec": "input"}}


def figure_regimes(*, unified: bool, data: int, vendor: str, sparse: bool
                   ) -> dict[str, RegimeError]:
    """The regime and measured error of each figure a prediction quotes (``ttftMs``,
    ``tpotMs``, ``outputTokensPerSec``: the deployment's output rate, ``inputTokensPerSec``),
    for a deployment described as in :func:`classify` (``data``: the decoding role's DP ranks)."""
    return {f: regime_error(classify(k, unified=unified, data=data, vendor=vendor,
                                     sparse=sparse))
            for f, k in _FIELDS[unified].items()}


def roles_regimes(roles, pools: dict, arch) -> dict[str, RegimeError]:
    """:func:`figure_regimes` of a deployment given as role objects (``mode``, ``nodePool``,
    ``parallel.data``; spec roles or candidate role JSON) on ``pools`` (name -> an object or
    dict with ``gpu``), of model ``arch`` (:class:`~generator.catalog.ModelArch`)."""
    from ..catalog import GPUS

    def get(obj, key):
        return obj[key] if isinstance(obj, dict) else getattr(obj, key)

    decoding = next((r for r in roles if get(r, "mode") != "prefill"), roles[0])
    par = get(decoding, "parallel")
    pool = pools[get(decoding, "nodePool")]
    return figure_regimes(unified=any(get(r, "mode") == "unified" for r in roles),
                          data=get(par, "data") or 1, vendor=GPUS[get(pool, "gpu")].vendor,
                          sparse=sparse_attention(arch))


def annotate_plan(doc: dict, req) -> dict:
    """``doc`` (a PlanResult's JSON) with each candidate's ``regimes``: per figure its regime
    and measured bench error (:meth:`RegimeError.to_json`); ``req`` the PlanRequest."""
    from ..catalog import builtin_arch
    s = req.spec
    for cand in doc.get("candidates", []):
        if cand.get("roles"):
            regimes = roles_regimes(cand["roles"], s.nodePools,
                                    builtin_arch(s.model.architecture))
            cand["regimes"] = {"ttftMs": regimes["ttftMs"].to_json(),
                               "tpotMs": regimes["tpotMs"].to_json(),
                               "totalTokensPerSec": regimes["outputTokensPerSec"].to_json()}
    return doc
