"""The InferenceDeployment spec as pydantic v2 models (docs/spec.md §2).

Every model forbids unknown fields (``extra="forbid"``): a typo is an error, never silently
ignored. Field names are camelCase as in Kubernetes. ``schemas/inferencedeployment.schema.json`` is
generated from :class:`InferenceDeployment` (``gen schema``) and a test fails when it drifts.

Only per-field constraints live here (types, enums, ranges, name patterns). Rules that relate
several fields (divisibility, capacity, feature combinations) live in ``spec/rules.py`` so that
all of them are reported at once with their rule codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..catalog import ARCHITECTURES, GPUS
from .k8s import (
    K8sAffinity,
    K8sPodSecurityContext,
    K8sVolume,
    K8sVolumeMount,
    link_schema,
)

API_VERSION = "moegen.dev/v1alpha1"

#: RFC 1123 label (Kubernetes object and label-value names).
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#: Environment variable names accepted in ``network.env`` (POSIX portable names).
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: Kubernetes label key (optional DNS-subdomain prefix + name <= 63) and value (<= 63 chars),
#: apimachinery pkg/util/validation (IsQualifiedName, IsValidLabelValue).
LABEL_KEY = r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
#: One line of printable text: values that end up in env files, shell scripts and YAML may not
#: carry newlines, C0/C1 control characters, Unicode line/paragraph separators or non-characters
#: (an env-file line per variable, no injection; YAML forbids or breaks lines on them).
ONE_LINE = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]*$"
#: Container image reference (printable ASCII, no whitespace).
IMAGE = r"^[!-~]+$"

#: Kubernetes quantities: CPU (``32``, ``500m``, ``1.5``) and bytes (``512Gi``, ``100G``, ``1e9``
#: excluded: plain or binary/decimal suffixes), apimachinery pkg/api/resource.
CPU_QUANTITY = r"^[0-9]+(\.[0-9]+)?m?$"
MEM_QUANTITY = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$"
#: RFC 1123 subdomain (names of Secrets, ServiceAccounts, PriorityClasses, schedulers).
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

CpuQuantity = Annotated[str, StringConstraints(pattern=CPU_QUANTITY, max_length=32)]
MemQuantity = Annotated[str, StringConstraints(pattern=MEM_QUANTITY, max_length=32)]
DnsSubdomain = Annotated[str, StringConstraints(pattern=DNS_SUBDOMAIN, max_length=253)]
#: One engine argument: printable, no whitespace-only or empty strings.
EngineArg = Annotated[str, StringConstraints(pattern=r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]+$",
                                             max_length=4096)]
LabelKey = Annotated[str, StringConstraints(pattern=LABEL_KEY, max_length=317)]
LabelValue = Annotated[str, StringConstraints(pattern=LABEL_VALUE, max_length=63)]
Labels = Annotated[dict[LabelKey, LabelValue], Field(max_length=64)]
EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME, max_length=256)]
OneLine = Annotated[str, StringConstraints(pattern=ONE_LINE, max_length=4096)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=False, frozen=True)


class Metadata(_Model):
    """Object metadata. ``name`` prefixes every generated object (kept short: <= 40 chars so
    that derived names such as ``<name>-<role>-<replica>-headless`` stay within 63)."""

    name: str = Field(pattern=DNS_LABEL, max_length=40)
    namespace: str = Field("default", pattern=DNS_LABEL, max_length=63)
    labels: Labels = Field(default_factory=dict)


class SecretKeyRef(_Model):
    """A key of a Kubernetes Secret (secrets are passed by reference, never inline)."""

    name: str = Field(pattern=DNS_LABEL, max_length=253)
    key: str = Field(min_length=1, max_length=253)


class Model(_Model):
    """The served model: identity, architecture, checkpoint format and where the weights live."""

    name: str = Field(min_length=1, max_length=256, pattern=ONE_LINE,
                      description="Served model id (--served-model-name / HF id).")
    architecture: Literal[tuple(ARCHITECTURES)] | None = Field(  # type: ignore[valid-type]
        None, description="Built-in catalog id; or give `config`.")
    config: str | None = Field(
        None, description="Local HF config.json, relative to the file that sets it.")
    weights: Literal["bf16", "fp8", "w4a8", "mxfp4"] = Field(
        description="Checkpoint format of the weights.")
    path: str = Field(pattern=r"^/[^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]*$",
                      max_length=1024,
                      description="Weights directory inside the container.")
    volume: "VolumeSource | None" = Field(
        None, description="Kubernetes volume source holding the weights (one source), e.g. "
        "{persistentVolumeClaim: {claimName: x}}; mounted read-only at `path`.")
    tokenSecret: SecretKeyRef | None = Field(
        None, description="Secret key holding a Hugging Face token (HF_TOKEN).")
    loadGBps: float | None = Field(
        None, gt=0, le=1000,
        description="Read bandwidth of the weights volume per pod, GB/s (default 1.0: a "
        "network file system; local NVMe reads 3-7). Sets the startup budget.")


class PvcSource(_Model):
    """core/v1 PersistentVolumeClaimVolumeSource."""

    claimName: str = Field(pattern=DNS_LABEL, max_length=253)
    readOnly: bool | None = None


class HostPathSource(_Model):
    """core/v1 HostPathVolumeSource (only when the spec asks for a host path)."""

    path: str = Field(pattern=r"^/[^\x00-\x1f\x7f]*$", max_length=4096)
    type: Literal["", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                  "CharDevice", "BlockDevice"] | None = None


class NfsSource(_Model):
    """core/v1 NFSVolumeSource."""

    server: str = Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.:\[\]-]+$")
    path: str = Field(pattern=r"^/[^\x00-\x1f\x7f]*$", max_length=4096)
    readOnly: bool | None = None


class VolumeSource(_Model):
    """Where the weights come from: exactly one core/v1 VolumeSource member (rule MOD004).
    Each member is passed to Kubernetes as written; an overlay switches sources by setting the
    base's member to null."""

    persistentVolumeClaim: PvcSource | None = None
    hostPath: HostPathSource | None = None
    nfs: NfsSource | None = None
    csi: dict[str, Any] | None = None
    ephemeral: dict[str, Any] | None = None
    image: dict[str, Any] | None = None
    emptyDir: dict[str, Any] | None = None
    cephfs: dict[str, Any] | None = None
    rbd: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None
    fc: dict[str, Any] | None = None
    azureFile: dict[str, Any] | None = None
    glusterfs: dict[str, Any] | None = None

    def sources(self) -> dict[str, dict[str, Any]]:
        """The members that are set (as Kubernetes expects them, unset keys dropped)."""
        return self.model_dump(exclude_none=True)


class Engine(_Model):
    """Inference engine and the version whose flag/env dialect is rendered."""

    name: Literal["vllm", "sglang"]
    version: str = Field(pattern=r"^\d+\.\d+\.\d+([.+-]?[0-9A-Za-z.+-]*)?$", max_length=64)
    image: str = Field(min_length=1, max_length=512, pattern=IMAGE)


class Toleration(_Model):
    """A Kubernetes toleration (core/v1 Toleration)."""

    key: LabelKey | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: int | None = None


class NodePool(_Model):
    """A pool of identical GPU nodes."""

    gpu: Literal[tuple(GPUS)]  # type: ignore[valid-type]
    gpusPerNode: int = Field(ge=1, le=16)
    nodes: int = Field(ge=1, le=4096, description="Nodes available (capacity check).")
    nodeSelector: Labels = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)


class Rdma(_Model):
    """RDMA NICs exposed to the pods."""

    resourceName: str = Field(pattern=r"^[a-z0-9.-]+/[a-zA-Z0-9_.-]+$",
                              description="Extended resource requested per pod, e.g. rdma/ib.")
    resourceCount: int = Field(1, ge=1, le=64, description="Units of resourceName per pod.")
    devices: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+$", max_length=64)]] = \
        Field(min_length=1, max_length=64, description="HCA names, e.g. [mlx5_0, mlx5_1].")
    gidIndex: int | None = Field(None, ge=0, le=255, description="RoCE GID index.")


class Network(_Model):
    """Pod networking and the communication libraries' environment."""

    socketInterface: str | None = Field(
        None, min_length=1, max_length=64, pattern=ONE_LINE,
        description="NIC for Gloo/NCCL/NVSHMEM bootstrap, e.g. eth0.")
    hostNetwork: bool = False
    rdma: Rdma | None = None
    env: dict[EnvName, OneLine] = Field(default_factory=dict, max_length=256,
                                        description="Extra environment variables, applied last.")


class Serving(_Model):
    """Serving settings. At spec level they are defaults; a role's ``serving`` overrides each."""

    maxModelLen: int | None = Field(None, ge=16, le=16_777_216)
    kvCacheDtype: Literal["auto", "fp8"] | None = None
    gpuMemoryUtilization: float | None = Field(None, gt=0.0, le=1.0)
    memFractionStatic: float | None = Field(
        None, gt=0.0, lt=1.0,
        description="SGLang only: pin --mem-fraction-static (else derived by the sizing plan).")
    port: int | None = Field(None, ge=1024, le=65535)
    maxNumSeqs: int | None = Field(None, ge=1, le=65536)
    maxNumBatchedTokens: int | None = Field(None, ge=1, le=1_048_576)
    enforceEager: bool | None = None


class Parallel(_Model):
    """Parallel layout of one engine instance: GPUs = tensor x data x pipeline."""

    tensor: int = Field(1, ge=1, le=64)
    data: int = Field(1, ge=1, le=1024)
    pipeline: int = Field(1, ge=1, le=64)
    expert: bool = False
    context: int | None = Field(None, ge=1, le=64,
                                description="Context parallel size; reuses the tensor ranks.")


class Eplb(_Model):
    """Expert-parallel load balancing (vLLM EPLBConfig / SGLang --enable-eplb)."""

    enabled: bool = True
    windowSize: int = Field(1000, ge=1)
    stepInterval: int = Field(3000, ge=1)
    redundantExperts: int = Field(0, ge=0, le=1024)
    logBalancedness: bool = False


class Moe(_Model):
    """MoE execution: all-to-all backend, EPLB and expert placement (engine-neutral names)."""

    all2all: Literal[
        "naive", "allgather_reducescatter", "deepep_high_throughput", "deepep_low_latency",
        "deepep_v2", "pplx", "flashinfer_all2allv", "nixl_ep",
    ] | None = None
    eplb: Eplb | None = None
    placement: Literal["linear", "round_robin"] | None = None


class Speculative(_Model):
    """Speculative decoding. ``mtp`` uses the checkpoint's own next-token-prediction module."""

    method: Literal["mtp"]
    numSpeculativeTokens: int = Field(1, ge=1, le=16)


class KvTransfer(_Model):
    """KV-cache transfer between prefill and decode."""

    connector: Literal["nixl", "mooncake", "lmcache"]


class Sizing(_Model):
    """What the HBM check must guarantee for this role."""

    concurrency: int | None = Field(
        None, ge=1, le=1_000_000,
        description="Sequences of maxModelLen one instance must hold; the engine then admits "
        "that many (--max-num-seqs per DP rank, SGLang --max-running-requests). Unset: 1 for "
        "the HBM check and the engine's own admission limit.")


class PodLimits(_Model):
    """Container limits when they differ from the requests (Kubernetes quantities)."""

    cpu: CpuQuantity | None = None
    memory: MemQuantity | None = None
    ephemeralStorage: MemQuantity | None = None


class Cache(_Model):
    """The compile/JIT cache volume of the engine pods (DeepGEMM, Triton, FlashInfer,
    torch.compile, CUDA): an emptyDir of ``sizeGiB`` by default (kept across container restarts),
    or any volume source (a PVC or hostPath keeps it across pod re-creation)."""

    sizeGiB: int = Field(32, ge=1, le=4096,
                         description="Size of the cache (emptyDir sizeLimit, ephemeral-storage "
                         "request), GiB.")
    volume: VolumeSource | None = Field(
        None, description="A volume source for the cache instead of an emptyDir; moegen writes "
        "into a subdirectory keyed by engine release, GPU and layout.")


class Pod(_Model):
    """Engine pod settings. ``spec.pod`` holds the defaults of every role; a role's ``pod``
    overrides them key by key (``labels`` and ``annotations`` merge, the role's keys winning).
    Resources not given are derived from the role (``gen size`` shows the arithmetic)."""

    cpu: CpuQuantity | None = Field(None, description="CPU request (and limit unless "
                                    "`limits.cpu`); derived from the role when unset.")
    memory: MemQuantity | None = Field(None, description="Memory request (and limit unless "
                                       "`limits.memory`); derived from the role when unset.")
    ephemeralStorage: MemQuantity | None = Field(
        None, description="Ephemeral-storage request (and limit unless `limits`); derived when "
        "unset.")
    limits: PodLimits | None = Field(None, description="Limits that differ from the requests.")
    shmSizeGiB: int | None = Field(None, ge=1, le=1024,
                                   description="/dev/shm size (memory emptyDir), GiB.")
    privileged: bool | None = Field(None, description="Run the engine container privileged "
                                    "(Pod Security 'privileged'; rule SEC001 names why).")
    imagePullSecrets: list[DnsSubdomain] | None = Field(
        None, max_length=16, description="Secret names for pulling the images.")
    serviceAccountName: DnsSubdomain | None = None
    priorityClassName: DnsSubdomain | None = None
    schedulerName: DnsSubdomain | None = None
    labels: Labels | None = Field(None, description="Extra pod labels (not selectors).")
    annotations: dict[LabelKey, OneLine] | None = Field(None, max_length=64)
    affinity: K8sAffinity | None = Field(None, description="A Kubernetes Affinity, merged with "
                                         "the one `placement` derives.")
    securityContext: K8sPodSecurityContext | None = Field(
        None, description="Pod-level security context; the container's capabilities stay "
        "derived.")
    extraVolumes: list[K8sVolume] | None = Field(None, max_length=32)
    extraVolumeMounts: list[K8sVolumeMount] | None = Field(None, max_length=32)
    cache: Cache | None = None


class Placement(_Model):
    """Where a role's instances go."""

    topologyKey: LabelKey | None = Field(
        None, description="Keep each instance's pods in one topology domain of this node label "
        "(LWS exclusive-topology; pod affinity for StatefulSets).")


class Role(_Model):
    """One role of the deployment: engine instances of one mode on one node pool."""

    name: str = Field(pattern=DNS_LABEL, max_length=15)
    mode: Literal["prefill", "decode", "unified"]
    nodePool: str
    replicas: int = Field(1, ge=1, le=1024)
    workload: Literal["lws", "statefulset", "pod-per-rank"] = "lws"
    parallel: Parallel = Field(default_factory=Parallel)
    moe: Moe | None = None
    speculative: Speculative | None = None
    kvTransfer: KvTransfer | None = None
    sizing: Sizing = Field(default_factory=Sizing)
    serving: Serving | None = None
    pod: Pod | None = None
    engineArgs: list[EngineArg] = Field(
        default_factory=list, max_length=64,
        description="Appended to the engine command; every flag must exist in the pinned engine "
        "release, and flags moegen derives are refused with the field that sets them.")
    env: dict[EnvName, OneLine] = Field(
        default_factory=dict, max_length=256,
        description="Environment of this role's engine pods, after spec.network.env.")
    placement: Placement | None = None


class Router(_Model):
    """The PD router in front of prefill and decode."""

    enabled: bool = True
    image: str | None = Field(None, min_length=1, max_length=512, pattern=IMAGE,
                              description="Default per engine dialect.")
    port: int = Field(8080, ge=1024, le=65535)
    replicas: int = Field(1, ge=1, le=64)
    policy: Literal["random", "round_robin", "cache_aware", "power_of_two"] = "round_robin"


class Platform(_Model):
    """What the cluster enforces (docs/spec.md §6.2)."""

    podSecurity: Literal["privileged", "baseline", "restricted"] | None = Field(
        None, description="The Pod Security Admission level the namespace enforces; moegen "
        "refuses pods that need a higher one (rule SEC001) and names the cause.")


class DeploymentSpec(_Model):
    """``spec`` of an InferenceDeployment."""

    model: Model
    engine: Engine
    nodePools: dict[str, NodePool] = Field(min_length=1)
    network: Network = Field(default_factory=Network)
    serving: Serving = Field(default_factory=Serving)
    pod: Pod | None = Field(None, description="Defaults for every engine pod (a role's `pod` "
                            "overrides per key).")
    roles: list[Role] = Field(min_length=1, max_length=16)
    router: Router = Field(default_factory=Router)
    platform: Platform | None = None


Model.model_rebuild()


class InferenceDeployment(_Model):
    """The root document (apiVersion ``moegen.dev/v1alpha1``, kind ``InferenceDeployment``)."""

    apiVersion: Literal["moegen.dev/v1alpha1"]
    kind: Literal["InferenceDeployment"]
    metadata: Metadata
    spec: DeploymentSpec


@dataclass(frozen=True)
class ServingSettings:
    """The serving settings one role runs with: built-in defaults < ``spec.serving`` <
    ``role.serving`` (fields as in :class:`Serving`).

    Defaults: ``port`` 8000 is vLLM's ``--port`` default (vllm/entrypoints/openai/cli_args.py);
    ``kvCacheDtype`` auto is both engines' default. ``maxModelLen`` and ``gpuMemoryUtilization``
    have none here: maxModelLen falls back to the model's max_position_embeddings and
    utilization to the engine release's default, and both are always rendered explicitly.
    """

    maxModelLen: int | None = None
    kvCacheDtype: str = "auto"
    gpuMemoryUtilization: float | None = None
    memFractionStatic: float | None = None
    port: int = 8000
    maxNumSeqs: int | None = None
    maxNumBatchedTokens: int | None = None
    enforceEager: bool = False


def effective_serving(spec: DeploymentSpec, role: Role) -> ServingSettings:
    """Merge serving settings: built-in defaults < ``spec.serving`` < ``role.serving``."""
    merged: dict[str, Any] = {}
    for layer in (spec.serving, role.serving):
        if layer is not None:
            merged.update({k: v for k, v in layer.model_dump().items() if v is not None})
    return ServingSettings(**merged)


def _close_pattern_maps(node: Any) -> None:
    """pydantic renders constrained dict keys as ``patternProperties`` only; add
    ``additionalProperties: false`` so the schema rejects the keys the model rejects."""
    if isinstance(node, dict):
        if "patternProperties" in node and "properties" not in node:
            node.setdefault("additionalProperties", False)
        for value in node.values():
            _close_pattern_maps(value)
    elif isinstance(node, list):
        for value in node:
            _close_pattern_maps(value)


def json_schema() -> dict:
    """The JSON Schema (draft 2020-12) of :class:`InferenceDeployment`."""
    schema = InferenceDeployment.model_json_schema(mode="validation")
    _close_pattern_maps(schema)
    link_schema(schema)   # the Kubernetes objects pod settings carry
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://moegen.dev/schemas/v1alpha1/inferencedeployment.schema.json"
    return schema
