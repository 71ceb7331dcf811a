"""Which regime of the performance model a predicted figure is in, and that regime's error
against published figures, cross-validated (``bench/planner_residuals.py`` writes the table,
``generator/perf/data/regime-errors.json``; ``tests/test_regimes.py`` checks it is current).

Each regime records its domain: what the figures behind it span (model families, GPU
generations, engine releases, MoE kernel compute, features: perf/domain.py). The error it
quotes comes from leaving out one source at a time (bench/cross_validate.py: the constants
refit without the source, its figures predicted), over the figures that stayed inside the
domain of the other sources' figures: median and worst factor, the worst being the band. A
prediction outside its regime's domain is ``extrapolated``: it says what differs, and quotes
the band of the figures that were outside the other sources' domain when left out.

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

#: The regime id of a prediction outside its regime's domain (see the module docstring).
EXTRAPOLATED = "extrapolated"

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
    """A regime's cross-validated error: figures ``n`` (from ``sources`` publications),
    ``median`` error factor (max(predicted / published, published / predicted)) of their
    predictions with the constants refit without their source, and ``worst``, the band: their
    worst factor (for an extrapolated prediction the factor 90 % of its figures stay within,
    bench/planner_residuals.py ``EXTRAPOLATED_COVERAGE``).
    ``held_out_n``: the regime's figures never fitted. For an extrapolated prediction
    (``regime`` :data:`EXTRAPOLATED`): ``nearest``, the regime it would be in, ``differs``,
    where it leaves that regime's domain, and the figures are those left outside the domain of
    the other sources' figures."""

    regime: str
    label: str
    n: int
    median: float
    worst: float
    held_out_n: int
    sources: int = 0
    nearest: str = ""
    differs: tuple[str, ...] = ()

    def describe(self) -> str:
        """``"<label> regime, cross-validated median error 9 %, band 31 % (n figures from k
        sources)"``, or for an extrapolated prediction ``"extrapolated beyond the <label>
        regime (<what differs>): cross-source band 127 % (n figures)"``."""
        figures = f"{self.n} figure{'s' if self.n != 1 else ''}"
        if self.regime == EXTRAPOLATED:
            near = REGIMES.get(self.nearest, self.nearest)
            band = (f"cross-source median error {self.median - 1:.0%}, band "
                    f"{self.worst - 1:.0%} ({figures})" if self.n else "no cross-source error")
            return f"extrapolated beyond the {near} regime ({'; '.join(self.differs)}): {band}"
        if not self.n:
            return f"{self.label} regime, no published figure in the bench"
        return (f"{self.label} regime, cross-validated median error {self.median - 1:.0%}, "
                f"band {self.worst - 1:.0%} ({figures} from {self.sources} "
                f"source{'s' if self.sources != 1 else ''})")

    def to_json(self) -> dict:
        """``{"regime", "label", "figures", "heldOut", "medianError", "worstError"}`` (errors as
        fractions: 0.09 = 9 %; None without figures; ``worstError`` is the band), with
        ``sources``, and for an extrapolated prediction ``nearest`` and ``differs``."""
        out = {"regime": self.regime, "label": self.label, "figures": self.n,
               "heldOut": self.held_out_n, "sources": self.sources,
               "medianError": round(self.median - 1, 3) if self.n else None,
               "worstError": round(self.worst - 1, 3) if self.n else None}
        if self.regime == EXTRAPOLATED:
            out |= {"nearest": self.nearest, "differs": list(self.differs)}
        return out



@lru_cache(maxsize=1)
def _doc() -> dict:
    return json.loads(package_text("perf", "data", ERRORS_FILE.name))


def _table() -> dict:
    return _doc()["regimes"]


def domain(regime: str) -> dict | None:
    """The domain of ``regime``'s figures (perf/domain.py ``domain_of``), None without one."""
    row = _table().get(regime)
    return row.get("domain") if row else None


def regime_error(regime: str) -> RegimeError:
    """The cross-validated error of ``regime`` (:data:`ERRORS_FILE`); ``n`` 0 when the bench
    has no figure in it that cross-validation kept inside the domain. Raises KeyError for an
    unknown regime id."""
    label = REGIMES[regime]
    row = _table().get(regime)
    cv = row.get("crossValidated") if row else None
    if not cv or not cv["n"]:
        return RegimeError(regime, label, 0, 0.0, 0.0, row["heldOut"]["n"] if row else 0)
    return RegimeError(regime, label, cv["n"], cv["median"], cv["band"], row["heldOut"]["n"],
                       cv["sources"])


def extrapolated(nearest: str, differs: list[str]) -> RegimeError:
    """The error quoted beside a prediction outside ``nearest``'s domain (``differs``: where):
    the cross-source error of the figures that were outside the other sources' domain."""
    e = _doc().get(EXTRAPOLATED) or {"n": 0, "median": 0.0, "band": 0.0, "sources": 0}
    return RegimeError(EXTRAPOLATED, f"extrapolated beyond {REGIMES[nearest]}", e["n"],
                       e["median"] or 0.0, e["band"] or 0.0, 0, e["sources"], nearest,
                       tuple(differs))


def placed(regime: str, where=None) -> RegimeError:
    """``regime``'s error for a prediction whose configuration is ``where``
    (perf/domain.py ``Descriptor``; None: not compared), or the extrapolated error when it
    leaves the regime's domain or the regime has no cross-validated figure."""
    if where is None:
        return regime_error(regime)
    from .domain import differences
    differs = differences(where, domain(regime))
    e = regime_error(regime)
    if not differs and not e.n:
        differs = ["no figure of this regime stayed inside the other sources' domain when its "
                   "source was left out: no cross-validated error of its own"]
    return extrapolated(regime, differs) if differs else e


#: Predicted figures (JSON field names of a candidate / role prediction) -> figure kind, for a
#: unified deployment and a disaggregated one.
_FIELDS = {True: {"ttftMs": "ttft", "tpotMs": "tpot", "outputTokensPerSec": "output",
                  "inputTokensPerSec": "input"},
           False: {"ttftMs": "ttft", "tpotMs": "tpot", "outputTokensPerSec": "end-to-end",
                   "inputTokensPerSec": "input"}}


def figure_regimes(*, unified: bool, data: int, vendor: str, sparse: bool, where=None
                   ) -> dict[str, RegimeError]:
    """The regime and cross-validated error of each figure a prediction quotes (``ttftMs``,
    ``tpotMs``, ``outputTokensPerSec``: the deployment's output rate, ``inputTokensPerSec``),
    for a deployment described as in :func:`classify` (``data``: the decoding role's DP ranks);
    ``where``: its configuration (perf/domain.py ``Descriptor``), compared with each regime's
    domain (:func:`placed`)."""
    return {f: placed(classify(k, unified=unified, data=data, vendor=vendor, sparse=sparse),
                      where)
            for f, k in _FIELDS[unified].items()}


def roles_regimes(roles, pools: dict, arch, engine: str | None = None,
                  version: str | None = None, weights: str | None = None,
                  speculative: bool = False) -> dict[str, RegimeError]:
    """:func:`figure_regimes` of a deployment given as role objects (``mode``, ``nodePool``,
    ``parallel.data``; spec roles or candidate role JSON) on ``pools`` (name -> an object or
    dict with ``gpu``), of model ``arch`` (:class:`~generator.catalog.ModelArch`); with the
    ``engine`` ``version`` and checkpoint format ``weights`` (and ``speculative``: the request
    plans speculative decoding) each figure is placed in or outside its regime's domain."""
    from ..catalog import GPUS
    from .domain import descriptor

    def get(obj, key):
        return obj[key] if isinstance(obj, dict) else getattr(obj, key)

    decoding = next((r for r in roles if get(r, "mode") != "prefill"), roles[0])
    par = get(decoding, "parallel")
    pool = pools[get(decoding, "nodePool")]
    where = descriptor(engine, version, weights, pools, roles, arch, speculative) \
        if engine and version and weights else None
    return figure_regimes(unified=any(get(r, "mode") == "unified" for r in roles),
                          data=get(par, "data") or 1, vendor=GPUS[get(pool, "gpu")].vendor,
                          sparse=sparse_attention(arch), where=where)


def request_roles(req, roles: list) -> list:
    """The roles to place a candidate of ``req`` with: the request's own (``spec.roles``: their
    moe, engineArgs and speculative settings) when it fixes the layout, else the candidate's
    ``roles`` (JSON of the search's choice)."""
    return list(req.spec.roles) if req.spec.roles else roles


def annotate_plan(doc: dict, req) -> dict:
    """``doc`` (a PlanResult's JSON) with each candidate's ``regimes``: per figure its regime
    and measured bench error (:meth:`RegimeError.to_json`); ``req`` the PlanRequest."""
    from ..catalog import builtin_arch
    s = req.spec
    for cand in doc.get("candidates", []):
        if cand.get("roles"):
            regimes = roles_regimes(request_roles(req, cand["roles"]), s.nodePools,
                                    builtin_arch(s.model.architecture), s.engine.name,
                                    s.engine.version, s.model.weights,
                                    s.speculative is not None)
            cand["regimes"] = {"ttftMs": regimes["ttftMs"].to_json(),
                               "tpotMs": regimes["tpotMs"].to_json(),
                               "totalTokensPerSec": regimes["outputTokensPerSec"].to_json()}
    return doc
