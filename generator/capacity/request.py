"""The PlanRequest document (docs/spec.md §5) as pydantic models (``extra="forbid"``), and its
cross-field checks."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..catalog import ARCHITECTURES, GPUS, arch_from_config, builtin_config
from ..engines.registry import dialect_for
from ..engines.versions import UnsupportedVersion, parse_version
from ..errors import Finding, Severity
from ..spec.load import Provenance, json_path
from ..spec.models import DNS_LABEL, Role, Serving

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
    """A node pool available to the plan."""

    gpu: Literal[tuple(GPUS)]  # type: ignore[valid-type]
    gpusPerNode: int = Field(ge=1, le=16)
    nodes: int = Field(ge=1, le=512)


class PlanNetwork(_M):
    """Inter-node network: RDMA bandwidth per GPU, Gbit/s (NVLink comes from the GPU catalog)."""

    interNodeGbps: float = Field(400, gt=0, le=3200, allow_inf_nan=False)


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


def request_findings(req: PlanRequest, prov: Provenance) -> list[Finding]:
    """Cross-field checks of a PlanRequest: a supported engine version (VER001); one load
    measure (PLN001); fixed roles (docs/spec.md §5.1) on known pools (POOL001), one prefill and
    one decode role or one unified role (PLN002); DSpark drafting only where it exists (PLN004);
    requests within the model's context (PLN005)."""
    out = []
    eng = req.spec.engine
    try:
        dialect_for(eng.name, eng.version)
    except UnsupportedVersion as exc:
        path = ("spec", "engine", "version")
        out.append(Finding("VER001", Severity.ERROR, json_path(path), str(exc), exc.hint,
                           prov.locate(path)))
    for i, role in enumerate(req.spec.roles or []):
        if role.nodePool not in req.spec.nodePools:
            path = ("spec", "roles", i, "nodePool")
            out.append(Finding("POOL001", Severity.ERROR, json_path(path),
                               f"role {role.name!r} names pool {role.nodePool!r}, which "
                               "spec.nodePools does not have",
                               f"pools: {', '.join(req.spec.nodePools)}", prov.locate(path)))
    modes = sorted(r.mode for r in req.spec.roles or [])
    if req.spec.roles and modes not in (["decode", "prefill"], ["unified"]):
        path = ("spec", "roles")
        out.append(Finding("PLN002", Severity.ERROR, json_path(path),
                           f"gen plan evaluates one prefill and one decode role, or one unified "
                           f"role; these roles are {', '.join(modes)}",
                           "evaluate each prefill/decode pair as its own request",
                           prov.locate(path)))
    spec = req.spec.speculative
    if spec is not None and spec.method == "dspark" and (
            eng.name != "sglang" or parse_version(eng.version) < (0, 5, 16)
            or not req.spec.model.architecture.startswith("deepseek-v4")):
        path = ("spec", "speculative", "method")
        out.append(Finding("PLN004", Severity.ERROR, json_path(path),
                           f"DSpark drafting needs SGLang 0.5.16+ and a DeepSeek-V4 model; this "
                           f"request is {eng.name} {eng.version}, "
                           f"{req.spec.model.architecture}",
                           "method: mtp (every engine), or engine sglang >= 0.5.16 with "
                           "deepseek-v4-*", prov.locate(path)))
    wl = req.spec.workload
    context = arch_from_config(builtin_config(req.spec.model.architecture)) \
        .max_position_embeddings
    if wl.inputTokens + wl.outputTokens > context:
        path = ("spec", "workload")
        out.append(Finding("PLN005", Severity.ERROR, json_path(path),
                           f"requests of {wl.inputTokens:,} + {wl.outputTokens:,} tokens exceed "
                           f"{req.spec.model.architecture}'s context of {context:,} tokens: the "
                           "engine refuses them", f"inputTokens + outputTokens <= {context:,}",
                           prov.locate(path)))
    if wl.concurrency is not None and wl.requestsPerSecond is not None:
        path = ("spec", "workload")
        out.append(Finding("PLN001", Severity.ERROR, json_path(path),
                           "give concurrency or requestsPerSecond, not both",
                           "concurrency: sequences in flight; requestsPerSecond: offered load",
                           prov.locate(path)))
    return out
