"""The domain of a predicted figure: what its configuration is, in the terms the published
figures behind each regime are described in (issue 32).

A :class:`Descriptor` holds a deployment's model family (from its capabilities), GPU generation,
engine and release, the compute of its MoE kernels (perf/kernels.py) and the engine features
that change its timing. A regime's domain (:func:`domain_of`) is what its figures span: the sets
of families, generations, kernels and features, and per engine the range of releases.
:func:`differences` says, in words, where a configuration leaves a domain; a prediction with any
difference is extrapolated (perf/regimes.py). bench/planner_residuals.py writes each regime's
domain into generator/perf/data/regime-errors.json.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import GPUS
from ..facts.versions import parse_version
from .interleave import prefill_delayer_passes
from .kernels import moe_kernel

#: Engine features a configuration may use whose timing the figures must have covered: each a
#: term of the model (perf/terms.py, perf/interleave.py) that a figure without it never tested.
FEATURES = ("speculative decoding", "prefill delayer", "two-batch overlap",
            "single-batch overlap", "pipeline parallelism", "megamoe")


@dataclass(frozen=True)
class Descriptor:
    """A deployment's configuration as domains compare it (see the module docstring)."""

    family: str
    gpu: str
    engine: str
    release: tuple[int, int, int]
    kernels: frozenset[str]
    features: frozenset[str]

    def to_json(self) -> dict:
        """``{"family", "gpu", "engine", "release", "kernels", "features"}``."""
        return {"family": self.family, "gpu": self.gpu, "engine": self.engine,
                "release": ".".join(map(str, self.release)), "kernels": sorted(self.kernels),
                "features": sorted(self.features)}


def family_of(arch) -> str:
    """The model family by capabilities (catalog ``ModelArch``): ``MLA``, ``MLA + sparse
    indexer``, ``compressed attention``, ``GQA``, ``GQA + sliding window``, ``GQA + chunked
    attention``."""
    if arch.compressed_attention:
        return "compressed attention"
    at = arch.attention
    if at.kind == "mla":
        return "MLA + sparse indexer" if arch.sparse_attention else "MLA"
    kinds = set(at.layer_types)
    if "sliding" in kinds:
        return "GQA + sliding window"
    if "chunked" in kinds:
        return "GQA + chunked attention"
    return "GQA"


def _get(obj, key, default=None):
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def kernel_label(kernel) -> str:
    """A MoE kernel's compute as domains compare it: ``BF16``, ``W4A16``, ``FP8``,
    ``FP8 (4-bit dequantized)``."""
    if kernel.w4a16:
        return "W4A16"
    if kernel.bf16:
        return "BF16"
    return "FP8 (4-bit dequantized)" if kernel.dequant else "FP8"


def descriptor(engine: str, version: str, weights: str, pools: dict, roles, arch,
               speculative: bool = False) -> Descriptor:
    """The :class:`Descriptor` of a deployment of ``roles`` (spec roles, PlanRequest roles or
    candidate role JSON: ``mode``, ``nodePool``, ``parallel``, ``moe``, ``engineArgs``,
    ``speculative``) on ``pools`` (name -> an object or dict with ``gpu``), serving ``arch`` in
    checkpoint format ``weights`` with ``engine`` ``version``; ``speculative``: the request plans
    speculative decoding."""
    kernels, features, gens = set(), set(), set()
    if speculative:
        features.add("speculative decoding")
    for r in roles:
        gpu = GPUS[_get(pools[_get(r, "nodePool")], "gpu")]
        gens.add(f"{gpu.vendor} {gpu.generation}")
        moe = _get(r, "moe")
        par = _get(r, "parallel")
        args = _get(r, "engineArgs") or ()
        kernels.add(kernel_label(moe_kernel(engine, gpu, weights, _get(moe, "all2all"), args)))
        if _get(r, "speculative") is not None and _get(r, "mode") != "prefill":
            features.add("speculative decoding")
        if prefill_delayer_passes(engine, args, _get(par, "data") or 1):
            features.add("prefill delayer")
        overlap = _get(moe, "overlap")
        if overlap:
            features.add(overlap.replace("_", "-") + " overlap")
        if (_get(par, "pipeline") or 1) > 1:
            features.add("pipeline parallelism")
        if _get(moe, "all2all") == "megamoe":
            features.add("megamoe")
    return Descriptor(family_of(arch), " / ".join(sorted(gens)), engine,
                      parse_version(version), frozenset(kernels), frozenset(features))


def domain_of(descriptors: list[Descriptor]) -> dict:
    """What ``descriptors`` span (JSON): ``families``, ``gpus``, ``kernels``, ``features``
    (sorted sets) and ``engines`` (engine -> [lowest, highest] release)."""
    engines: dict[str, list] = {}
    for d in descriptors:
        lo, hi = engines.get(d.engine, (d.release, d.release))
        engines[d.engine] = [min(lo, d.release), max(hi, d.release)]
    return {"families": sorted({d.family for d in descriptors}),
            "gpus": sorted({d.gpu for d in descriptors}),
            "engines": {e: [".".join(map(str, v)) for v in r]
                        for e, r in sorted(engines.items())},
            "kernels": sorted({k for d in descriptors for k in d.kernels}),
            "features": sorted({f for d in descriptors for f in d.features})}


def differences(d: Descriptor, domain: dict | None) -> list[str]:
    """Where ``d`` leaves ``domain`` (:func:`domain_of`), in words; [] inside it. No domain
    (a regime without figures): one difference saying so."""
    if not domain or not domain.get("families"):
        return ["no published figure in this regime"]
    out = []

    def among(value, values, what):
        if value not in values:
            out.append(f"{what} {value} (the figures: {', '.join(values)})")
    among(d.family, domain["families"], "model family")
    among(d.gpu, domain["gpus"], "GPU generation")
    engines = domain["engines"]
    if d.engine not in engines:
        out.append(f"engine {d.engine} (the figures: {', '.join(engines)})")
    else:
        lo, hi = (parse_version(v) for v in engines[d.engine])
        if not lo <= d.release <= hi:
            lo_s, hi_s = engines[d.engine]
            span = lo_s if lo_s == hi_s else f"{lo_s}-{hi_s}"
            out.append(f"{d.engine} {'.'.join(map(str, d.release))} outside the figures' "
                       f"{span}")
    for k in sorted(d.kernels - set(domain["kernels"])):
        out.append(f"MoE kernel {k} (the figures: {', '.join(domain['kernels'])})")
    for f in sorted(d.features - set(domain["features"])):
        out.append(f"{f} (no figure of this regime has it)")
    return out
