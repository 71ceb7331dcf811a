"""The PlanRequest document (docs/spec.md §5) as pydantic models (``extra="forbid"``): the
input of ``gen plan``, read by :mod:`generator.spec.load` like the InferenceDeployment. Its
cross-field checks are the planner's (``generator/capacity/request.py``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..catalog import ARCHITECTURES, GPUS
from .fields import DNS_LABEL, Labels
from .models import Network, Role, Serving, Toleration

PoolName = Annotated[str, StringConstraints(pattern=DNS_LABEL, max_length=40)]


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlanModel(_M):
    """The model to serve."""

    architecture: Literal[tuple(ARCHITECTURES)]  # type: ignore[valid-type]
    weights: Literal["bf16", "fp8", "w4a8", "mxfp4", "nvfp4", "nvfp4-v2", "w4a16"]
    name: str | None = Field(None, description="Served model id (default: the architecture id).")


class PlanEngine(_M):
    """Engine and version (the same dialects and budgets as InferenceDeployment)."""

    name: Literal["vllm", "sglang"]
    version: str = Field(pattern=r"^\d+\.\d+\.\d+")


class PlanPool(_M):
    """A node pool available to the plan; ``nodeSelector`` and ``tolerations`` (as in an
    InferenceDeployment pool) go into the spec ``gen plan --emit`` writes."""

    gpu: Literal[tuple(GPUS)]  # type: ignore[valid-type]
    gpusPerNode: int = Field(ge=1, le=16)
    nodes: int = Field(ge=1, le=512)
    nodeSelector: Labels = Field(default_factory=dict, description="Node labels that select "
                                 "the pool's nodes (the emitted spec's; default moegen.dev/pool: "
                                 "<pool name>, a placeholder).")
    tolerations: list[Toleration] = Field(default_factory=list)


class PlanNetwork(Network):
    """Inter-node network: RDMA bandwidth per GPU, Gbit/s (NVLink comes from the GPU catalog),
    and optionally the InferenceDeployment's network fields (socketInterface, hostNetwork,
    rdma, env), which ``gen plan --emit`` writes into the spec it emits."""

    interNodeGbps: float = Field(400, gt=0, le=3200, allow_inf_nan=False)
    mnnvl: bool = Field(True, description="NVL72 pools (GB200/GB300): instances spanning "
                        "trays talk over multi-node NVLink (the pods claim a ComputeDomain); "
                        "false prices that traffic at interNodeGbps")


class Workload(_M):
    """Mean request shape and load: give concurrency (sequences in flight) or requestsPerSecond."""

    inputTokens: int = Field(ge=1, le=2_000_000)
    outputTokens: int = Field(ge=1, le=1_000_000)
    concurrency: int | None = Field(None, ge=1, le=10_000_000)
    requestsPerSecond: float | None = Field(None, gt=0, allow_inf_nan=False)


class Slo(_M):
    """Service-level objectives (milliseconds) and an optional throughput goal."""

    ttftMs: float | None = Field(None, gt=0, allow_inf_nan=False)
    tpotMs: float | None = Field(None, gt=0, allow_inf_nan=False)
    throughputTokensPerSec: float | None = Field(None, gt=0, allow_inf_nan=False)


class Speculation(_M):
    """Speculative decoding as an input: drafter, draft tokens and per-token acceptance rate."""

    method: Literal["mtp", "dspark"] = Field(
        "mtp", description="mtp: the checkpoint's MTP layer, one draft pass per token (vLLM "
        "`mtp`, SGLang EAGLE/NEXTN); dspark: DeepSeek-V4's block drafter, one forward of its "
        "three-layer MTP stack proposes the whole block (SGLang --speculative-algorithm DSPARK, "
        "--speculative-dspark-block-size from 0.5.16; sgl-project/sglang#29538). SGLang "
        "0.5.16+ and DeepSeek-V4 only (PLN004).")
    numSpeculativeTokens: int = Field(1, ge=1, le=8)
    acceptance: float = Field(0.7, ge=0, le=1, allow_inf_nan=False)


class Constraints(_M):
    """Search constraints."""

    disaggregation: Literal["auto", "required", "forbidden"] = "auto"
    kvCacheDtype: Literal["auto", "fp8"] = "fp8"


class PlanSpec(_M):
    """``spec`` of a PlanRequest."""

    model: PlanModel
    engine: PlanEngine
    nodePools: dict[PoolName, PlanPool] = Field(min_length=1, max_length=8)
    network: PlanNetwork = Field(default_factory=PlanNetwork)
    workload: Workload
    slo: Slo = Field(default_factory=Slo)
    speculative: Speculation | None = None
    constraints: Constraints = Field(default_factory=Constraints)
    serving: Serving | None = Field(None, description="Serving settings the deployment pins "
                                    "(memFractionStatic, gpuMemoryUtilization, maxNumSeqs, ...).")
    roles: list[Role] | None = Field(None, min_length=1, max_length=4,
                                     description="Evaluate exactly these roles (InferenceDeployment "
                                     "role objects on spec.nodePools) instead of searching.")


class PlanMetadata(_M):
    """Metadata: ``name`` names the emitted InferenceDeployment."""

    name: str = Field(pattern=DNS_LABEL, max_length=40)


class PlanRequest(_M):
    """Root document (apiVersion ``moegen.dev/v1alpha1``, kind ``PlanRequest``)."""

    apiVersion: Literal["moegen.dev/v1alpha1"]
    kind: Literal["PlanRequest"]
    metadata: PlanMetadata
    spec: PlanSpec
