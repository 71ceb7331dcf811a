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
    k8s_object,
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
#: Kubernetes volume sources a model volume may name, validated as the Kubernetes objects.
K8sCSIVolumeSource = k8s_object("CSIVolumeSource")
K8sEphemeralVolumeSource = k8s_object("EphemeralVolumeSource")
K8sImageVolumeSource = k8s_object("ImageVolumeSource")
K8sEmptyDirVolumeSource = k8s_object("EmptyDirVolumeSource")
K8sCephFSVolumeSource = k8s_object("CephFSVolumeSource")
K8sRBDVolumeSource = k8s_object("RBDVolumeSource")
K8sISCSIVolumeSource = k8s_object("ISCSIVolumeSource")
K8sFCVolumeSource = k8s_object("FCVolumeSource")
K8sAzureFileVolumeSource = k8s_object("AzureFileVolumeSource")
K8sGlusterfsVolumeSource = k8s_object("GlusterfsVolumeSource")
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

    name: str = Field(pattern=DNS_LABEL, max_length=40,
        description="Prefix of every generated object name (RFC 1123 label, <= 40 characters).")
    namespace: str = Field("default", pattern=DNS_LABEL, max_length=63,
        description="Namespace of every object (default: default).")
    labels: Labels = Field(default_factory=dict, description="Labels added to every object.")


class SecretKeyRef(_Model):
    """A key of a Kubernetes Secret (secrets are passed by reference, never inline)."""

    name: str = Field(pattern=DNS_LABEL, max_length=253, description="Secret name.")
    key: str = Field(min_length=1, max_length=253, description="Key in the Secret.")


class Model(_Model):
    """The served model: identity, architecture, checkpoint format and where the weights live."""

    name: str = Field(min_length=1, max_length=256, pattern=ONE_LINE,
                      description="Served model id (--served-model-name / HF id).")
    architecture: Literal[tuple(ARCHITECTURES)] | None = Field(  # type: ignore[valid-type]
        None, description="Built-in catalog id; or give `config`.")
    config: str | None = Field(
        None, description="Local HF config.json, relative to the file that sets it.")
    weights: Literal["bf16", "fp8", "w4a8", "mxfp4", "nvfp4", "nvfp4-v2", "w4a16"] = Field(
        description="Checkpoint format of the weights (docs/spec.md §2: bf16, block fp8, "
        "w4a8, mxfp4 (DeepSeek-V4 FP4 experts), nvfp4 (ModelOpt NVFP4), nvfp4-v2 (NVIDIA's "
        "-v2 NVFP4 checkpoints: o_proj NVFP4 too), w4a16 (compressed-tensors INT4 experts, "
        "Kimi-K2-Thinking)).")
    path: str = Field(pattern=r"^/[^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]*$",
                      max_length=1024,
                      description="Weights directory inside the container.")
    volume: "VolumeSource | None" = Field(
        None, description="Kubernetes volume source holding the weights (one source), e.g. "
        "{persistentVolumeClaim: {claimName: x}}; mounted read-only at `path`.")
    tokenSecret: SecretKeyRef | None = Field(
        None, description="Secret key holding a Hugging Face token (HF_TOKEN).")
    loadGBps: float | None = Field(
        None, ge=0.01, le=1000, allow_inf_nan=False,
        description="Read bandwidth of the weights volume per pod, GB/s (default 1.0: a "
        "network file system; local NVMe reads 3-7). Sets the startup budget.")


class PvcSource(_Model):
    """core/v1 PersistentVolumeClaimVolumeSource."""

    claimName: str = Field(pattern=DNS_LABEL, max_length=253,
        description="PersistentVolumeClaim name.")
    readOnly: bool | None = Field(None, description="Mount read-only.")


class HostPathSource(_Model):
    """core/v1 HostPathVolumeSource (only when the spec asks for a host path)."""

    path: str = Field(pattern=r"^/[^\x00-\x1f\x7f]*$", max_length=4096,
        description="Directory on the node.")
    type: Literal["", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                  "CharDevice", "BlockDevice"] | None = Field(None,
                      description="Kubernetes hostPath type check.")


class NfsSource(_Model):
    """core/v1 NFSVolumeSource."""

    server: str = Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.:\[\]-]+$",
        description="NFS server.")
    path: str = Field(pattern=r"^/[^\x00-\x1f\x7f]*$", max_length=4096,
        description="Exported path.")
    readOnly: bool | None = Field(None, description="Mount read-only.")


class VolumeSource(_Model):
    """Where the weights come from: exactly one core/v1 VolumeSource member (rule MOD004).
    Each member is passed to Kubernetes as written; an overlay switches sources by setting the
    base's member to null."""

    persistentVolumeClaim: PvcSource | None = Field(None,
        description="Kubernetes persistentVolumeClaim volume source.")
    hostPath: HostPathSource | None = Field(None, description="Kubernetes hostPath volume source.")
    nfs: NfsSource | None = Field(None, description="Kubernetes nfs volume source.")
    csi: K8sCSIVolumeSource | None = Field(
        None, description="Kubernetes csi volume source (CSIVolumeSource).")
    ephemeral: K8sEphemeralVolumeSource | None = Field(
        None, description="Kubernetes ephemeral volume source (EphemeralVolumeSource).")
    image: K8sImageVolumeSource | None = Field(
        None, description="Kubernetes image volume source (ImageVolumeSource).")
    emptyDir: K8sEmptyDirVolumeSource | None = Field(
        None, description="Kubernetes emptyDir volume source (EmptyDirVolumeSource).")
    cephfs: K8sCephFSVolumeSource | None = Field(
        None, description="Kubernetes cephfs volume source (CephFSVolumeSource).")
    rbd: K8sRBDVolumeSource | None = Field(
        None, description="Kubernetes rbd volume source (RBDVolumeSource).")
    iscsi: K8sISCSIVolumeSource | None = Field(
        None, description="Kubernetes iscsi volume source (ISCSIVolumeSource).")
    fc: K8sFCVolumeSource | None = Field(
        None, description="Kubernetes fc volume source (FCVolumeSource).")
    azureFile: K8sAzureFileVolumeSource | None = Field(
        None, description="Kubernetes azureFile volume source (AzureFileVolumeSource).")
    glusterfs: K8sGlusterfsVolumeSource | None = Field(
        None, description="Kubernetes glusterfs volume source (GlusterfsVolumeSource).")

    def sources(self) -> dict[str, dict[str, Any]]:
        """The members that are set (as Kubernetes expects them, unset keys dropped)."""
        return self.model_dump(exclude_none=True)


class Engine(_Model):
    """Inference engine and the version whose flag/env dialect is rendered."""

    name: Literal["vllm", "sglang"] = Field(description="vllm or sglang.")
    version: str = Field(pattern=r"^\d+\.\d+\.\d+([.+-]?[0-9A-Za-z.+-]*)?$", max_length=64,
        description="The engine release the flags are rendered for (a known release, or a "
                    "patch release of one).")
    image: str = Field(min_length=1, max_length=512, pattern=IMAGE,
        description="Container image of that release (its tag must name the same version: "
                    "ENG002).")


class Toleration(_Model):
    """A Kubernetes toleration (core/v1 Toleration)."""

    key: LabelKey | None = Field(None, description="Taint key.")
    operator: Literal["Exists", "Equal"] | None = Field(None, description="Exists or Equal.")
    value: LabelValue | None = Field(None, description="Taint value (with Equal).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(None,
        description="Taint effect.")
    tolerationSeconds: int | None = Field(None,
        description="Seconds a NoExecute taint is tolerated.")


class NodePool(_Model):
    """A pool of identical GPU nodes."""

    gpu: Literal[tuple(GPUS)] = Field(  # type: ignore[valid-type]
        description="GPU catalog id (HBM, bandwidth, FLOPS).")
    gpusPerNode: int = Field(ge=1, le=16, description="GPUs per node.")
    nodes: int = Field(ge=1, le=4096, description="Nodes available (capacity check).")
    nodeSelector: Labels = Field(default_factory=dict,
        description="Node labels that select the pool's nodes (rule POOL005 warns without).")
    tolerations: list[Toleration] = Field(default_factory=list,
        description="Tolerations for the pool's taints.")


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
    hostNetwork: bool = Field(False,
        description="Run engine pods in the node's network namespace (default false).")
    rdma: Rdma | None = Field(None,
        description="RDMA NICs for NCCL, NVSHMEM/DeepEP and the KV transfer.")
    env: dict[EnvName, OneLine] = Field(default_factory=dict, max_length=256,
                                        description="Extra environment variables, applied last.")
    interNodeGbps: float | None = Field(
        None, gt=0, le=3200, allow_inf_nan=False,
        description="RDMA bandwidth per GPU between nodes, Gbit/s, for the performance "
        "estimate (gen report, gen size, the dashboard); default 400 (ConnectX-7).")


class Traffic(_Model):
    """The mean request shape moegen times the roles with (moegen's addition: gen size, gen
    report and the Grafana dashboard show each role's predicted TTFT, TPOT and tokens/s, the
    planner's model on this exact layout: docs/spec.md §5.1). The load is the decode roles'
    ``sizing.concurrency``."""

    inputTokens: int = Field(ge=1, le=2_000_000, description="Mean prompt length, tokens.")
    outputTokens: int = Field(ge=1, le=1_000_000, description="Mean output length, tokens.")
    acceptance: float = Field(0.7, ge=0, le=1, allow_inf_nan=False,
                              description="Per-token acceptance rate of the "
                              "speculative draft tokens (MTP), if any.")


class WeightOffload(_Model):
    """Weights kept in host memory instead of HBM (docs/spec.md §2 ``serving.weightOffload``).

    Group offloading (``groupSize``): of every ``groupSize`` decoder layers, the last
    ``numInGroup`` keep their routed-expert weights in pinned host memory; each is copied into
    one of ``prefetchStep`` static GPU buffers ``prefetchStep`` layers ahead of its use (vLLM
    0.17+ ``--offload-group-size/--offload-num-in-group/--offload-prefetch-step``,
    vllm/config/offload.py, vllm/model_executor/offloader/v2.py "adapted from" SGLang's
    python/sglang/srt/utils/offloader.py, which takes the same three flags). ``cpuGiB``: UVA
    offloading, that many GiB of weights per GPU read from host memory in every forward (vLLM
    and SGLang ``--cpu-offload-gb``)."""

    groupSize: int | None = Field(None, ge=1, le=1024,
        description="Group offloading: layers per group (the last numInGroup of each group are "
                    "offloaded).")
    numInGroup: int = Field(1, ge=1, le=1024,
        description="Group offloading: offloaded layers per group (<= groupSize).")
    prefetchStep: int = Field(1, ge=1, le=64,
        description="Group offloading: layers prefetched ahead (static GPU buffers).")
    cpuGiB: float | None = Field(None, gt=0, le=65536, allow_inf_nan=False,
        description="UVA offloading: GiB of weights per GPU kept in host memory "
                    "(--cpu-offload-gb).")



class Serving(_Model):
    """Serving settings. At spec level they are defaults; a role's ``serving`` overrides each."""

    maxModelLen: int | None = Field(None, ge=16, le=16_777_216,
        description="Longest sequence (prompt + output), tokens; default: the model's context.")
    kvCacheDtype: Literal["auto", "fp8"] | None = Field(None,
        description="KV-cache dtype: auto (the model's) or fp8.")
    gpuMemoryUtilization: float | None = Field(None, gt=0.0, le=1.0, allow_inf_nan=False,
        description="vLLM: fraction of GPU memory the engine may use (default: the release's).")
    memFractionStatic: float | None = Field(
        None, gt=0.0, lt=1.0, allow_inf_nan=False,
        description="SGLang only: pin --mem-fraction-static (else derived by the sizing plan).")
    port: int | None = Field(None, ge=1024, le=65535,
        description="Engine HTTP port (default 8000).")
    maxNumSeqs: int | None = Field(None, ge=1, le=65536,
        description="Sequences one DP rank runs at once (vLLM --max-num-seqs; SGLang --max-running-"
                    "requests).")
    maxNumBatchedTokens: int | None = Field(None, ge=1, le=1_048_576,
        description="Tokens per scheduler step (vLLM --max-num-batched-tokens; SGLang "
                    "--chunked-prefill-size).")
    enforceEager: bool | None = Field(None, description="No CUDA graphs.")
    kvCacheMemoryBytes: int | None = Field(None, ge=1, le=1 << 50,
        description="KV cache per GPU, bytes: vLLM --kv-cache-memory-bytes (the KV pool is this "
                    "size whatever gpuMemoryUtilization); SGLang --max-total-tokens = bytes / "
                    "KV bytes per token (a cap on the pool mem_fraction_static sizes).")
    weightOffload: WeightOffload | None = Field(None,
        description="Keep part of the weights in host memory (group or UVA offloading).")


class Parallel(_Model):
    """Parallel layout of one engine instance: GPUs = tensor x data x pipeline."""

    tensor: int = Field(1, ge=1, le=64, description="Tensor-parallel size.")
    data: int = Field(1, ge=1, le=1024,
        description="Data-parallel size (attention data parallelism for MoE models).")
    pipeline: int = Field(1, ge=1, le=64, description="Pipeline-parallel size.")
    expert: bool = Field(False, description="Expert parallelism: EP size = tensor x data.")
    context: int | None = Field(None, ge=1, le=64,
                                description="Context parallel size; reuses the tensor ranks.")


class Eplb(_Model):
    """Expert-parallel load balancing (vLLM EPLBConfig / SGLang --enable-eplb)."""

    enabled: bool = Field(True, description="Rebalance experts from observed load.")
    windowSize: int = Field(1000, ge=1, description="Steps of expert load recorded per rebalance.")
    stepInterval: int = Field(3000, ge=1, description="Steps between rebalances.")
    redundantExperts: int = Field(0, ge=0, le=1024,
        description="Extra expert slots (replicas of hot experts); experts + redundant must "
                    "divide by the EP size.")
    logBalancedness: bool = Field(False, description="Log the expert balance (vLLM).")


class Moe(_Model):
    """MoE execution: all-to-all backend, EPLB and expert placement (engine-neutral names)."""

    all2all: Literal[
        "naive", "allgather_reducescatter", "deepep_high_throughput", "deepep_low_latency",
        "deepep_v2", "pplx", "flashinfer_all2allv", "nixl_ep", "mori", "mori_high_throughput",
        "mori_low_latency",
    ] | None = Field(None,
        description="Expert all-to-all backend (engine-neutral name; rendered per engine release). "
                    "DeepEP/pplx/FlashInfer on NVIDIA; MoRI-EP (mori*) on AMD.")
    eplb: Eplb | None = Field(None, description="Expert-parallel load balancing.")
    placement: Literal["linear", "round_robin"] | None = Field(None,
        description="How experts map to EP ranks (vLLM --expert-placement-strategy).")
    overlap: Literal["two_batch", "single_batch"] | None = Field(None,
        description="Overlap the expert all-to-all with computation: two_batch splits each "
                    "batch into two micro-batches (SGLang --enable-two-batch-overlap, vLLM "
                    "--enable-dbo); single_batch overlaps within one batch (SGLang "
                    "--enable-single-batch-overlap, 0.5.3+). Unset: the engine's default (off).")


class Speculative(_Model):
    """Speculative decoding. ``mtp`` uses the checkpoint's own next-token-prediction module."""

    method: Literal["mtp"] = Field(
        description="mtp: the checkpoint's multi-token-prediction module.")
    numSpeculativeTokens: int = Field(1, ge=1, le=16, description="Draft tokens per step.")


class KvTransfer(_Model):
    """KV-cache transfer between prefill and decode."""

    connector: Literal["nixl", "mooncake", "lmcache"] = Field(
        description="KV-cache transfer library; the same on prefill and decode.")


class Sizing(_Model):
    """What the HBM check must guarantee for this role."""

    concurrency: int | None = Field(
        None, ge=1, le=1_000_000,
        description="Sequences of maxModelLen one instance must hold; the engine then admits "
        "that many (--max-num-seqs per DP rank, SGLang --max-running-requests). Unset: 1 for "
        "the HBM check and the engine's own admission limit.")


class PodLimits(_Model):
    """Container limits when they differ from the requests (Kubernetes quantities)."""

    cpu: CpuQuantity | None = Field(None, description="CPU limit.")
    memory: MemQuantity | None = Field(None, description="Memory limit.")
    ephemeralStorage: MemQuantity | None = Field(None, description="Ephemeral-storage limit.")


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
    serviceAccountName: DnsSubdomain | None = Field(None, description="ServiceAccount of the pods.")
    priorityClassName: DnsSubdomain | None = Field(None, description="PriorityClass of the pods.")
    schedulerName: DnsSubdomain | None = Field(None,
        description="Scheduler of the pods (e.g. volcano).")
    labels: Labels | None = Field(None, description="Extra pod labels (not selectors).")
    annotations: dict[LabelKey, OneLine] | None = Field(None, max_length=64,
        description="Pod annotations (e.g. k8s.v1.cni.cncf.io/networks for Multus).")
    affinity: K8sAffinity | None = Field(None, description="A Kubernetes Affinity, merged with "
                                         "the one `placement` derives.")
    securityContext: K8sPodSecurityContext | None = Field(
        None, description="Pod-level security context; the container's capabilities stay "
        "derived.")
    extraVolumes: list[K8sVolume] | None = Field(None, max_length=32,
        description="Kubernetes Volumes added to the pods.")
    extraVolumeMounts: list[K8sVolumeMount] | None = Field(None, max_length=32,
        description="Kubernetes VolumeMounts added to the engine container.")
    cache: Cache | None = Field(None,
        description="Compile/JIT cache volume (default: a 32 GiB emptyDir).")


class Placement(_Model):
    """Where a role's instances go."""

    topologyKey: LabelKey | None = Field(
        None, description="Keep each instance's pods in one topology domain of this node label "
        "(LWS exclusive-topology; pod affinity for StatefulSets).")


class Autoscaling(_Model):
    """KEDA autoscaling of a role's instances on the engines' own metrics (moegen's addition,
    docs/spec.md §6.2): a ScaledObject (keda.sh/v1alpha1) on the role's LeaderWorkerSet, whose
    scale subresource counts instances (groups)."""

    minReplicas: int | None = Field(None, ge=1, le=4096,
                                    description="Fewest instances; default: the role's replicas.")
    maxReplicas: int | None = Field(
        None, ge=1, le=4096, description="Most instances; default: as many as the pool's nodes "
        "hold beside the other roles (more is AUT001).")
    metric: Literal["waiting", "kvUsage"] = Field(
        "waiting", description="waiting: requests queued in the role's engines, per instance; "
        "kvUsage: the engines' mean KV cache usage (0-1).")
    target: float = Field(gt=0, allow_inf_nan=False, description="The value per instance the "
                          "autoscaler holds: queued requests (waiting) or a KV usage fraction "
                          "(kvUsage, at most 1).")


class Role(_Model):
    """One role of the deployment: engine instances of one mode on one node pool."""

    name: str = Field(pattern=DNS_LABEL, max_length=15,
        description="Role name (RFC 1123 label, <= 15 characters).")
    mode: Literal["prefill", "decode", "unified"] = Field(
        description="prefill, decode, or unified (no prefill/decode split).")
    nodePool: str = Field(description="The node pool the role's pods run on.")
    replicas: int = Field(1, ge=1, le=1024, description="Independent engine instances of the role.")
    workload: Literal["lws", "statefulset", "pod-per-rank"] = Field("lws",
        description="lws (LeaderWorkerSet), statefulset (single-node instances) or pod-per-rank.")
    parallel: Parallel = Field(default_factory=Parallel,
        description="Parallel layout of one instance.")
    moe: Moe | None = Field(None,
        description="MoE execution: all-to-all backend, EPLB, expert placement.")
    speculative: Speculative | None = Field(None, description="Speculative decoding (MTP).")
    kvTransfer: KvTransfer | None = Field(None,
        description="KV transfer between prefill and decode (required on both in PD).")
    sizing: Sizing = Field(default_factory=Sizing, description="What the HBM check guarantees.")
    serving: Serving | None = Field(None,
        description="Serving settings of this role (override spec.serving).")
    pod: Pod | None = Field(None,
        description="Pod settings of this role (override spec.pod per key).")
    engineArgs: list[EngineArg] = Field(
        default_factory=list, max_length=64,
        description="Appended to the engine command; every flag must exist in the pinned engine "
        "release, and flags moegen derives are refused with the field that sets them.")
    env: dict[EnvName, OneLine] = Field(
        default_factory=dict, max_length=256,
        description="Environment of this role's engine pods, after spec.network.env.")
    placement: Placement | None = Field(None,
        description="Topology placement of the role's instances.")
    autoscaling: Autoscaling | None = Field(None, description="Scale the role's instances "
                                            "with KEDA on its engines' queue or KV usage.")


class GatewayParentRef(_Model):
    """The Gateway an HTTPRoute attaches to (Gateway API ``ParentReference``, kind Gateway)."""

    name: str = Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN,
                      description="The Gateway's name.")
    namespace: str | None = Field(None, max_length=63, pattern=DNS_LABEL,
                                  description="The Gateway's namespace (default: the "
                                  "deployment's, which a kustomize namespace override moves). "
                                  "The Gateway's listeners must allow routes from the "
                                  "deployment's namespace.")


class RouterGateway(_Model):
    """Where ``kind: inference-gateway`` takes its traffic from (docs/routing.md)."""

    parentRef: GatewayParentRef | None = Field(None, description="An existing Gateway "
                                               "(Gateway API) that routes to the InferencePool.")


class Router(_Model):
    """The router in front of the engines (docs/spec.md §6.1, docs/routing.md)."""

    enabled: bool = Field(True, description="Render the router (prefill/decode deployments; "
                          "with kind inference-gateway every deployment).")
    kind: Literal["vllm-router", "smg", "inference-gateway"] | None = Field(
        None, description="vllm-router (vLLM's PD router) or smg (SGLang's) as a Deployment, "
        "or inference-gateway: an InferencePool, its endpoint picker and an HTTPRoute from "
        "gateway.parentRef (Gateway API Inference Extension). Default: the engine's router "
        "(vllm-router for vLLM, smg for SGLang).")
    gateway: RouterGateway | None = Field(None, description="kind inference-gateway only: the "
                                          "Gateway that routes to the pool.")
    image: str | None = Field(None, min_length=1, max_length=512, pattern=IMAGE,
                              description="Default per kind (the router, or the endpoint "
                              "picker of kind inference-gateway).")
    port: int = Field(8080, ge=1024, le=65535, description="Router HTTP port (vllm-router, "
                      "smg; the Gateway's listeners serve inference-gateway).")
    replicas: int = Field(1, ge=1, le=64, description="Router replicas (endpoint picker "
                          "replicas with kind inference-gateway).")
    policy: Literal["random", "round_robin", "cache_aware", "power_of_two"] = Field("round_robin",
        description="Load-balancing policy of vllm-router and smg (inference-gateway scores "
        "endpoints instead: docs/routing.md).")
    discovery: bool = Field(
        True, description="The router finds its engine pods by label (Kubernetes API, a "
        "namespaced Role) instead of a rendered list of pod URLs, where the router can: smg, and "
        "vllm-router with NIXL (its Mooncake mode needs the static list).")


class Topology(_Model):
    """The cluster's placement domain for a group (docs/spec.md §6.2)."""

    key: LabelKey = Field(description="Node label naming a group's domain (a rack, an NVLink "
                          "domain, a network block): every pod of an instance lands in one.")
    nodesPerDomain: int | None = Field(None, ge=1, le=4096,
                                       description="Nodes in one domain; a group that needs "
                                       "more is refused (TOP001).")


class Scheduler(_Model):
    """How multi-node groups are admitted as a gang (docs/spec.md §6.2)."""

    kind: Literal["default", "kueue", "volcano"] = Field(
        "default", description="kueue: the workloads carry Kueue's queue label (one Workload "
        "per LeaderWorkerSet group); volcano: the pods use the volcano scheduler and the LWS "
        "controller makes a PodGroup per group (its gangSchedulingManagement must name "
        "volcano); default: the cluster's scheduler, no gang.")
    queue: str | None = Field(None, pattern=DNS_LABEL, max_length=63,
                              description="Kueue LocalQueue, or Volcano queue.")


class Lws(_Model):
    """The LeaderWorkerSet controller the cluster runs (docs/spec.md §6.2; the release table:
    generator/manifests/lws.py)."""

    version: str = Field(pattern=r"^v?(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$", max_length=32,
                         description="The LeaderWorkerSet release (e.g. 0.7.0, v0.10.0): "
                         "moegen renders only what it has and refuses features it lacks "
                         "(LWS002-004) and releases it does not know (LWS001).")
    restartPolicy: Literal["RecreateGroupOnPodRestart", "RecreateGroupAfterStart"] = Field(
        "RecreateGroupOnPodRestart", description="What LWS does when a pod of a group fails: "
        "RecreateGroupOnPodRestart re-creates the group at once; RecreateGroupAfterStart waits "
        "until no pod of the group is pending (slow image pulls, scheduling) before it does "
        "(LWS >= 0.9; 0.8 through its experimental annotation).")
    disaggregatedSet: bool = Field(False, description="Render the prefill and decode roles as "
                                   "one DisaggregatedSet (disaggregatedset.x-k8s.io/v1, LWS >= "
                                   "0.9): rollouts keep the P:D ratio; the router and Services "
                                   "select pods by label.")


class Platform(_Model):
    """What the cluster runs and enforces (docs/spec.md §6.2)."""

    lws: Lws | None = Field(None, description="The LeaderWorkerSet release the cluster runs "
                            "(unset: moegen's default output).")
    scheduler: Scheduler | None = Field(None, description="Gang scheduling of groups.")

    podSecurity: Literal["privileged", "baseline", "restricted"] | None = Field(
        None, description="The Pod Security Admission level the namespace enforces; moegen "
        "refuses pods that need a higher one (rule SEC001) and names the cause.")
    topology: Topology | None = Field(None, description="Keep each multi-node instance inside "
                                      "one topology domain.")


class Monitoring(_Model):
    """Prometheus Operator objects for the deployment (docs/spec.md §6.2)."""

    enabled: bool = Field(False, description="Render a PodMonitor for the engines, a "
                          "ServiceMonitor for the router and a PrometheusRule with alerts "
                          "(prometheus-operator monitoring.coreos.com/v1).")
    interval: str = Field("15s", pattern=r"^[0-9]+(ms|s|m)$",
                          description="Scrape interval.")
    labels: Labels = Field(default_factory=dict, description="Labels only on the monitoring "
                           "objects (PodMonitor, ServiceMonitor, PrometheusRule, dashboard), e.g. "
                           "{release: kube-prometheus-stack} for its Prometheus' selectors.")
    prometheusUrl: str | None = Field(
        None, pattern=r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%/-]*)?$",
        max_length=512,
        description="The Prometheus that scrapes these pods, for KEDA's queries "
        "(roles[].autoscaling), e.g. http://prometheus-operated.monitoring.svc:9090.")
    dashboard: bool = Field(False, description="Render a Grafana dashboard ConfigMap (label "
                            "grafana_dashboard: \"1\", for the Grafana sidecar) whose reference "
                            "lines are moegen's predicted KV capacity, TTFT and TPOT (needs "
                            "spec.traffic for the latencies).")


class DeploymentSpec(_Model):
    """``spec`` of an InferenceDeployment."""

    model: Model = Field(description="The served model and where its weights are.")
    engine: Engine = Field(description="Engine and the release whose flags are rendered.")
    nodePools: dict[str, NodePool] = Field(min_length=1,
        description="GPU node pools by name; roles place their pods on one.")
    network: Network = Field(default_factory=Network,
        description="Pod network, bootstrap interface and RDMA.")
    serving: Serving = Field(default_factory=Serving,
        description="Serving defaults of every role (a role's serving overrides each).")
    pod: Pod | None = Field(None, description="Defaults for every engine pod (a role's `pod` "
                            "overrides per key).")
    roles: list[Role] = Field(min_length=1, max_length=16,
        description="Engine roles (prefill, decode or unified), in order.")
    router: Router = Field(default_factory=Router,
        description="The prefill/decode router in front of the roles.")
    platform: Platform | None = Field(None, description="What the cluster enforces.")
    monitoring: Monitoring | None = Field(None, description="Monitoring objects (off by "
                                          "default).")
    traffic: Traffic | None = Field(None, description="Mean request shape for the predicted "
                                    "TTFT, TPOT and tokens/s of each role (moegen's addition).")


Model.model_rebuild()


class InferenceDeployment(_Model):
    """The root document (apiVersion ``moegen.dev/v1alpha1``, kind ``InferenceDeployment``)."""

    apiVersion: Literal["moegen.dev/v1alpha1"] = Field(description="moegen.dev/v1alpha1.")
    kind: Literal["InferenceDeployment"] = Field(description="InferenceDeployment.")
    metadata: Metadata = Field(description="Name, namespace and labels of the deployment.")
    spec: DeploymentSpec = Field(
        description="The deployment: model, engine, node pools, network, roles.")


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
    kvCacheMemoryBytes: int | None = None
    weightOffload: WeightOffload | None = None


def effective_serving(spec: DeploymentSpec, role: Role) -> ServingSettings:
    """Merge serving settings: built-in defaults < ``spec.serving`` < ``role.serving``."""
    return merged_serving(spec.serving, role.serving)


def merged_serving(*layers: Serving | None) -> ServingSettings:
    """Built-in defaults overridden by each set field of ``layers``, in order."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer is not None:
            merged.update({k: v for k, v in layer.model_dump().items() if v is not None})
    if isinstance(merged.get("weightOffload"), dict):
        merged["weightOffload"] = WeightOffload(**merged["weightOffload"])
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
