"""What the performance model returns: evaluated deployments (:class:`Candidate`) and a ranked
result (:class:`PlanResult`), with the layout and role choices they are made of."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..catalog import ARCHITECTURES, builtin_arch
from ..spec.bandwidth import of_request
from ..spec.request import PlanRequest
from . import terms as perf
from .decode import bf16_compute


#: The terms of a TTFT (perf/loop.py ``ttft_parts``): the service a request gets (what a
#: request alone waits; a slower fabric makes it longer) and its queueing (what the load adds).
SERVICE_PARTS = ("request", "prefill", "kvTransfer", "decodeFirstStep")
QUEUE_PARTS = ("stepWait", "prefillQueue", "prefillDelayer", "overflow")
_PART_NAMES = {"request": "request", "prefill": "prefill", "kvTransfer": "KV transfer",
               "decodeFirstStep": "decode's first step",
               "stepWait": "wait for a step", "prefillQueue": "prefill queue",
               "prefillDelayer": "prefill delayer", "overflow": "beyond capacity"}


def ttft_split_json(parts: dict[str, float] | None) -> dict:
    """``{"ttftServiceMs", "ttftQueueMs", "ttftPartsMs"}`` of a TTFT's terms (ms, perf/loop.py
    ``ttft_parts``), rounded to 0.1 ms; {} without them."""
    if not parts:
        return {}
    service = sum(v for k, v in parts.items() if k in SERVICE_PARTS)
    return {"ttftServiceMs": round(service, 1),
            "ttftQueueMs": round(sum(parts.values()) - service, 1),
            "ttftPartsMs": {k: round(v, 1) for k, v in parts.items()}}


def ttft_split_text(parts: dict[str, float] | None) -> str:
    """``service 180 ms (request 57, prefill 123) + queue 183 ms (wait for a step 20, prefill
    queue 163)``: each group's sum and its terms of 0.5 ms or more; "" without terms."""
    if not parts:
        return ""

    def group(names: tuple[str, ...]) -> str:
        shown = ", ".join(f"{_PART_NAMES[k]} {parts[k]:,.0f}" for k in names if parts[k] >= 0.5)
        return f"{sum(parts[k] for k in names):,.0f} ms" + (f" ({shown})" if shown else "")
    return f"service {group(SERVICE_PARTS)} + queue {group(QUEUE_PARTS)}"


@dataclass
class Candidate:
    """One evaluated deployment (docs/spec.md §5 JSON via :meth:`to_json`)."""

    roles: list[dict]
    gpus: int
    kv_tokens_per_rank: int
    ttft_ms: float
    tpot_ms: float
    output_tps: float
    total_tps: float
    fits: bool
    meets_slo: bool
    bound: str
    notes: list[str] = field(default_factory=list)
    rank: int = 0
    sustains: bool = True
    #: Why a fixed layout does not fit (docs/spec.md §5.1): error-level
    #: :class:`~generator.errors.Finding` objects with the validator's rule codes (LAY001,
    #: SIZ001, SIZ003) at the request's field paths.
    findings: list = field(default_factory=list)
    #: Sequences per decode rank at the operating point (below the sized batch when prefill
    #: cannot feed it); 0 when not computed.
    decode_batch: int = 0
    #: The median TTFT, ms (the queue at its median: perf/loop.py ``median_wait``); None
    #: where not computed. ``ttft_ms`` is the mean.
    ttft_median_ms: float | None = None
    #: The mean TTFT's terms, ms (perf/loop.py ``ttft_parts``: service and queueing); None
    #: where not computed.
    ttft_parts_ms: dict[str, float] | None = None

    def to_json(self) -> dict:
        """The candidate as docs/spec.md §5 shows it; with the TTFT's terms,
        ``ttftServiceMs`` + ``ttftQueueMs`` = ``ttftMs`` and ``ttftPartsMs`` (perf/loop.py
        ``ttft_parts``)."""
        return {"rank": self.rank, "roles": self.roles, "gpus": self.gpus,
                "kvTokensPerRank": self.kv_tokens_per_rank, "ttftMs": round(self.ttft_ms, 1),
                "ttftMedianMs": None if self.ttft_median_ms is None
                else round(self.ttft_median_ms, 1),
                "tpotMs": round(self.tpot_ms, 1), "outputTokensPerSec": round(self.output_tps),
                "totalTokensPerSec": round(self.total_tps),
                "outputTokensPerSecPerGpu": round(self.output_tps / self.gpus, 1),
                "fits": self.fits, "meetsSlo": self.meets_slo, "bound": self.bound,
                "notes": self.notes} | ttft_split_json(self.ttft_parts_ms) | (
                    {"findings": [f.to_json() for f in self.findings]} if self.findings else {})


@dataclass
class PlanResult:
    """Ranked candidates, reachability of the throughput goal and the binding constraint.

    ``alternatives``: when the goal is not reachable, what changing one input would give
    (``{"change": ..., "totalTokensPerSec": ..., "reachable": ...}``).
    """

    candidates: list[Candidate]
    reachable: bool
    bound: str
    assumptions: list[str]
    alternatives: list[dict] = field(default_factory=list)
    #: What the predictions rest on (perf/inputs.py ``prediction_inputs``).
    inputs: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        """docs/spec.md §5 JSON (plus assumptions, alternatives and inputs)."""
        return {"reachable": self.reachable, "bound": self.bound,
                "assumptions": self.assumptions, "alternatives": self.alternatives,
                "inputs": self.inputs,
                "candidates": [c.to_json() for c in self.candidates]}


def assumptions(req: PlanRequest) -> list[str]:
    s = req.spec
    spec_txt = (f"{'DSpark' if s.speculative.method == 'dspark' else 'MTP'} "
                f"{s.speculative.numSpeculativeTokens} token(s), acceptance "
                f"{s.speculative.acceptance}" if s.speculative else "no speculative decoding")
    peak = "BF16" if bf16_compute(s.model.weights) else "FP8"
    arch = builtin_arch(s.model.architecture) if s.model.architecture in ARCHITECTURES \
        else None
    attention = {"mla": "MLA", "compressed": "compressed (DeepSeek-V4)"}.get(
        arch.attention.kind if arch else "", "GQA")
    drafts = "MTP draft passes + " if s.speculative else ""
    return [
        (f"decode: max(HBM {perf.ETA_HBM:.0%} of peak, GEMMs {perf.ETA_DECODE_COMPUTE:.0%} of the "
         f"{peak} peak (H20: {perf.ETA_DECODE_COMPUTE_BY_GPU['H20-96GB']:.0%}) + {attention} attention "
         f"{perf.ETA_ATTN:.0%} of the BF16 peak, x{perf.ATTN_FP8_SPEEDUP:g} with an FP8 KV cache "
         "where the attention kernel computes in FP8) + expert all-to-all (RDMA "
         f"{perf.ETA_A2A:.0%}, NVLink {perf.ETA_NVLINK:.0%} per direction) + TP all-reduce + "
         f"collective latencies + {drafts}"
         "fixed costs per decode layer and per expert slice by GPU family (perf.FIXED_COSTS); "
         "the search assumes no all-to-all "
         f"overlap (moe.overlap in a fixed layout: two_batch hides {perf.OVERLAP_TWO_BATCH:.0%} "
         f"of the shorter of computation and all-to-all, single_batch "
         f"{perf.OVERLAP_SINGLE_BATCH:.0%} of the combine)"),
        (f"prefill: GEMMs at {perf.ETA_PREFILL:.0%} of the {peak} peak (H20: "
         f"{perf.ETA_PREFILL_BY_GPU['H20-96GB']:.0%}; 4-bit experts without FP4 cores at "
         f"{perf.DEQUANT_4BIT_PREFILL:.0%} of that), attention at {perf.ETA_ATTN:.0%} of the BF16 "
         "peak, plus TP all-reduce and the expert all-to-all (DeepEP where the layout uses it; "
         "bench/published_cases.yaml); TTFT adds "
         "the per-request cost and the prefill step's launches (perf.FIXED_COSTS); a unified "
         "role's decode waits for its prefill steps (perf.interleaved)"),
        (f"context per sequence: input + output/2 = "
        f"{s.workload.inputTokens + s.workload.outputTokens // 2} tokens (mean); {spec_txt}"),
        f"{of_request(req).describe()}; KV cache {s.constraints.kvCacheDtype}",
        "memory feasibility from the sizing validator (same code as gen validate)",
    ]


class LayoutChoice(NamedTuple):
    """One instance's parallel layout in the search: GPUs = tensor x data x pipeline."""

    tensor: int
    data: int
    pipeline: int
    expert: bool

    @property
    def gpus(self) -> int:
        """GPUs of one instance."""
        return self.tensor * self.data * self.pipeline

    @property
    def ep(self) -> int:
        """Expert-parallel size (1 without EP)."""
        return self.tensor * self.data if self.expert else 1

    def as_json(self) -> dict:
        """The ``parallel`` block of the spec."""
        return {"tensor": self.tensor, "data": self.data, "pipeline": self.pipeline,
                "expert": self.expert}


@dataclass(frozen=True)
class RoleChoice:
    """A role of a candidate: its pool, layout and instance count."""

    mode: str
    pool: str
    layout: LayoutChoice
    instances: int
    #: Serving settings the planner pinned for this role (SGLang's ``memFractionStatic`` where
    #: its default formula leaves no room), or None.
    serving: dict | None = None

    @property
    def gpus(self) -> int:
        """GPUs of all instances."""
        return self.instances * self.layout.gpus

    def as_json(self) -> dict:
        """The role as docs/spec.md §5 shows it."""
        doc = {"mode": self.mode, "nodePool": self.pool, "replicas": self.instances,
               "parallel": self.layout.as_json()}
        if self.serving:
            doc["serving"] = dict(self.serving)
        return doc
