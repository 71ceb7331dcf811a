"""The InferenceDeployment spec as pydantic v2 models (docs/spec.md §2).

Every model forbids unknown fields (``extra="forbid"``): a typo is an error, never silently
ignored. Field names are camelCase as in Kubernetes. ``schemas/inferencedeployment.schema.json`` is
generated from :class:`InferenceDeployment` (``gen schema``) and a test fails when it drifts.

Only per-field constraints live here (types, enums, ranges, name patterns). Rules that relate
several fields (divisibility, capacity, feature combinations) live in ``generator/checks`` so that
all of them are reported at once with their rule codes. The building blocks (patterns, field
types, volume sources) are in :mod:`.fields`; pod, placement, autoscaling, platform and
monitoring settings in :mod:`.operations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from ..catalog import ARCHITECTURES, GPUS
from .fields import (
    DNS_LABEL,
    IMAGE,
    DnsSubdomain,
    ONE_LINE,
    EngineArg,
    EnvName,
    LabelKey,
    Labels,
    LabelValue,
    OneLine,
    VolumeSource,
    _Model,
)
from .k8s import link_schema
from .operations import (
    Autoscaling,
    Monitoring,
    Placement,
    Platform,
    Pod,
    RouterGateway,
    Target,
)


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


#: ``model.architecture`` when the model is not stated (docs/spec.md §2): never a catalog id.
MODEL_UNKNOWN = "unknown"


class Model(_Model):
    """The served model: identity, architecture, checkpoint format and where the weights live."""

    name: str = Field(min_length=1, max_length=256, pattern=ONE_LINE,
                      description="Served model id (--served-model-name / HF id).")
    architecture: Literal[tuple(ARCHITECTURES) + (MODEL_UNKNOWN,)] | None = Field(  # type: ignore[valid-type]
        None, description="Built-in catalog id; or give `config`. `unknown`: the model is not "
        "stated (what gen import writes for weights in a volume without a config.json): gen "
        "validate runs the checks that do not read the model and says (MOD008) which did not "
        "run (HBM sizing, the model's layout constraints, MTP, quantization formats); gen "
        "render, size, report and the other commands that need it refuse it.")
    config: str | None = Field(
        None, description="Local HF config.json, relative to the file that sets it.")
    weights: Literal["bf16", "fp8", "w4a8", "mxfp4", "nvfp4", "nvfp4-v2", "w4a16"] = Field(
        description="Checkpoint format of the weights (docs/spec.md §2: bf16, block fp8, "
        "w4a8, mxfp4 (DeepSeek-V4 FP4 experts), nvfp4 (ModelOpt NVFP4), nvfp4-v2 (NVIDIA's "
        "-v2 NVFP4 checkpoints: o_proj NVFP4 too), w4a16 (compressed-tensors INT4 experts, "
        "Kimi-K2-Thinking)).")
    path: str | None = Field(
        None, pattern=r"^/[^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]*$",
        max_length=1024,
        description="Weights directory inside the container (required unless `hub` is set).")
    volume: "VolumeSource | None" = Field(
        None, description="Kubernetes volume source holding the weights (one source), e.g. "
        "{persistentVolumeClaim: {claimName: x}}; mounted read-only at `path`.")
    inImage: bool = Field(
        False, description="The engine image carries the weights at `path` (a serving image "
        "built with them): nothing is mounted and MOD005 does not ask for a volume. Weights in "
        "an OCI image of their own mount as a Kubernetes image volume instead: volume: "
        "{image: {reference: ...}}.")
    hub: "HubDownload | None" = Field(
        None, description="The engine downloads the weights from the Hugging Face Hub at start "
        "into a cache (instead of reading `path`): the engine is given the repository id.")
    tokenSecret: SecretKeyRef | None = Field(
        None, description="Secret key holding a Hugging Face token (HF_TOKEN).")
    loadGBps: float | None = Field(
        None, ge=0.01, le=1000, allow_inf_nan=False,
        description="Read bandwidth of the weights volume per pod, GB/s (default 1.0: a "
        "network file system; local NVMe reads 3-7). Sets the startup budget.")

    def argument(self) -> str:
        """What the engine is given as its model: the Hub repository id (``hub``), else the
        weights directory ``path``."""
        if self.hub is not None:
            return self.hub.repo or self.name
        return self.path or ""


class HubDownload(_Model):
    """Weights downloaded from the Hugging Face Hub when the engine starts, into the cache
    huggingface_hub keeps under HF_HOME (huggingface_hub constants.py: HF_HOME, HF_HUB_CACHE,
    HF_HUB_OFFLINE)."""

    repo: str | None = Field(
        None, min_length=1, max_length=256, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+$",
        description="Hub repository id (default: model.name).")
    cache: "VolumeSource | None" = Field(
        None, description="The volume that holds the cache (one source). A "
        "persistentVolumeClaim or hostPath keeps the download; an emptyDir, or none (the "
        "container's filesystem), downloads the weights again whenever a pod is created "
        "(rule MOD006).")
    mountPath: str = Field(
        "/root/.cache/huggingface", pattern=r"^/[^\x00-\x1f\x7f-\x9f]*$", max_length=1024,
        description="Where the cache volume is mounted; HF_HOME points there unless roles[].env "
        "sets HF_HOME or HF_HUB_CACHE.")
    offline: bool = Field(
        False, description="HF_HUB_OFFLINE=1: read the cache only, never the Hub (the cache "
        "must already hold the weights: rule MOD007).")


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


#: ``nodePools.*.gpu`` when the GPU is not stated (docs/spec.md §2): never a catalog id.
GPU_UNKNOWN = "unknown"


class NodePool(_Model):
    """A pool of identical GPU nodes."""

    gpu: Literal[tuple(GPUS) + (GPU_UNKNOWN,)] = Field(  # type: ignore[valid-type]
        description="GPU catalog id (HBM, bandwidth, FLOPS), or unknown: the manifests a spec "
        "was imported from do not name the GPU (gen import without --gpu). With unknown, gen "
        "validate runs the checks that do not read the GPU and says in one notice per pool "
        "(POOL006) which did not run (HBM sizing, the GPU's kernels and formats); gen render, "
        "size and report refuse it (docs/spec.md §2).")
    gpusPerNode: int = Field(ge=1, le=16, description="GPUs per node.")
    nodes: int = Field(ge=1, le=4096, description="Nodes available (capacity check).")
    nodeSelector: Labels = Field(default_factory=dict,
        description="Node labels that select the pool's nodes (rule POOL005 warns without).")
    tolerations: list[Toleration] = Field(default_factory=list,
        description="Tolerations for the pool's taints.")


class Rdma(_Model):
    """RDMA NICs exposed to the pods (``rdma: {}``: the pods have RDMA NICs, reached without a
    device-plugin resource and not named: what gen import reads from a manifest that does not
    say more)."""

    resourceName: str | None = Field(
        None, pattern=r"^[a-z0-9.-]+/[a-zA-Z0-9_.-]+$",
        description="Extended resource requested per pod, e.g. rdma/ib. Unset: the pods reach "
        "their RDMA NICs without one (multi-network annotations: Multus "
        "k8s.v1.cni.cncf.io/networks, GKE networking.gke.io/interfaces, carried in "
        "pod.annotations; hostNetwork with /dev/infiniband).")
    resourceCount: int = Field(1, ge=1, le=64, description="Units of resourceName per pod.")
    devices: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+$", max_length=64)]] = \
        Field(default_factory=list, max_length=64,
              description="HCA names, e.g. [mlx5_0, mlx5_1]. Empty: not named, NCCL, NVSHMEM, "
              "UCX and Mooncake use every HCA the pod sees (NCCL_IB_HCA, NVSHMEM_HCA_LIST, "
              "UCX_NET_DEVICES and SGLang's --disaggregation-ib-device are then not rendered).")
    gidIndex: int | None = Field(None, ge=0, le=255, description="RoCE GID index.")
    pkeyIndex: int | None = Field(
        None, ge=0, le=65535,
        description="InfiniBand partition: the index of the partition key in the port's P_Key "
        "table (/sys/class/infiniband/<hca>/ports/1/pkeys/<index>), for fabrics whose partition "
        "is not at index 0 (SR-IOV VFs handed to pods). Rendered as NCCL_IB_PKEY and, for "
        "DeepEP, NVSHMEM_IB_PKEY_INDEX (NVSHMEM >= 3.7.0; rules NET040-041). NIXL's UCX takes "
        "the partition's P_Key value in network.env UCX_IB_PKEY (rule NET042); Mooncake always "
        "uses index 0 (rule NET043).")
    deviceGbps: float | None = Field(None, gt=0, le=1600, allow_inf_nan=False, description=(
        "Line rate of each RDMA device, Gbit/s (a ConnectX-7 port: 400 NDR, 200 NDR200); the "
        "estimate's bandwidth per GPU is len(devices) x deviceGbps / gpusPerNode unless "
        "network.interNodeGbps states it. Unset: 400 assumed, and said so."))


class ComputeDomain(_Model):
    """Multi-node NVLink (GB200/GB300 NVL72): the IMEX channel the pods claim."""

    resourceClaimTemplate: DnsSubdomain = Field(
        description="The ResourceClaimTemplate of an NVIDIA DRA ComputeDomain "
        "(resource.nvidia.com ComputeDomain spec.channel.resourceClaimTemplate.name, in the "
        "deployment's namespace): pods on NVL72 pools claim it, so an instance spanning trays "
        "reaches its peers over NVLink, not the NIC.")


class Network(_Model):
    """Pod networking and the communication libraries' environment."""

    socketInterface: str | None = Field(
        None, min_length=1, max_length=64, pattern=ONE_LINE,
        description="NIC for Gloo/NCCL/NVSHMEM bootstrap, e.g. eth0.")
    hostNetwork: bool = Field(False,
        description="Run engine pods in the node's network namespace (default false).")
    bindAddress: Literal["all", "podIP"] = Field(
        "all", description="Where the engines' HTTP API listens: every interface of the pod "
        "(all), or only the pod's IP (podIP: --host $(status.podIP)). With hostNetwork the "
        "pod's interfaces are the node's, outside the Gateway and usually outside NetworkPolicy "
        "(rule NET090).")
    rdma: Rdma | None = Field(None,
        description="RDMA NICs for NCCL, NVSHMEM/DeepEP and the KV transfer.")
    env: dict[EnvName, OneLine] = Field(default_factory=dict, max_length=256,
                                        description="Extra environment variables, applied last.")
    computeDomain: ComputeDomain | None = Field(None,
        description="GB200/GB300 NVL72: the ComputeDomain channel the pods claim for "
        "multi-node NVLink (the NCCL/DeepEP MNNVL switches are then rendered).")
    interNodeGbps: float | None = Field(
        None, gt=0, le=3200, allow_inf_nan=False,
        description="RDMA bandwidth per GPU between nodes, Gbit/s, for the performance "
        "estimate (gen report, gen size, the dashboard). Unset: derived from network.rdma "
        "(len(devices) x rdma.deviceGbps / gpusPerNode), else 400 assumed (one ConnectX-7 "
        "port per GPU).")
    networkPolicy: bool = Field(
        True, description="Render NetworkPolicies (kubernetes target) that admit only the "
        "traffic the plan computes: engines to each other, the router or endpoint picker and "
        "the Gateway to the serving ports, Prometheus to the metrics ports (docs/security.md); "
        "false leaves the pods to the cluster's own policies.")


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
    swaFullTokensRatio: float | None = Field(None, gt=0.0, le=1.0, allow_inf_nan=False,
        description="SGLang only (--swa-full-tokens-ratio): the sliding-window pool's tokens "
                    "as a share of the full pool's (default 0.8; DeepSeek-V4's 0.1). vLLM has "
                    "no such pool (rule SRV010); SGLang's decode (no radix cache) sizes it from "
                    "the running requests instead (rule SRV011).")


class Parallel(_Model):
    """Parallel layout of one engine instance: GPUs = tensor x data x pipeline."""

    tensor: int = Field(1, ge=1, le=64, description="Tensor-parallel size.")
    data: int = Field(1, ge=1, le=1024,
        description="Data-parallel size (attention data parallelism for MoE models).")
    pipeline: int = Field(1, ge=1, le=64, description="Pipeline-parallel size.")
    expert: bool = Field(False, description="Expert parallelism: EP size = tensor x data.")
    context: int | None = Field(None, ge=1, le=64,
                                description="Context parallel size; reuses the tensor ranks.")
    executor: Literal["mp", "ray"] | None = Field(None,
        description="vLLM's distributed executor (--distributed-executor-backend). Unset or mp: "
                    "multiprocessing, an instance that spans pods gets --nnodes/--node-rank (vLLM "
                    "0.11.1+). ray: the pods form a Ray cluster (leader `ray start --head`, workers "
                    "join it), the leader's vllm serve spans it with --distributed-executor-backend "
                    "ray, at every supported release; vLLM only, one engine per instance (data 1).")


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
        "mori_low_latency", "megamoe",
    ] | None = Field(None,
        description="Expert all-to-all backend (engine-neutral name; rendered per engine release). "
                    "DeepEP/pplx/FlashInfer on NVIDIA; MoRI-EP (mori*) on AMD; megamoe: SGLang's "
                    "DeepGEMM Mega MoE (dispatch, expert GEMMs and combine in one kernel over "
                    "symmetric memory; SGLang 0.5.12+, not in vLLM).")
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
    loadFailurePolicy: Literal["recompute", "fail"] | None = Field(
        None, description="vLLM: what the engine does when a request's KV cannot be loaded "
        "from its prefill (kv_load_failure_policy, vLLM >= 0.13.0): recompute it locally, or "
        "fail the request. Default: recompute on decode roles (docs/spec.md §2).")


#: ``sizing.concurrency``'s form for the engine's own default admission (docs/spec.md §2).
ENGINE_DEFAULT = "engine-default"


class Sizing(_Model):
    """What the HBM check must guarantee for this role."""

    concurrency: Annotated[int, Field(ge=1, le=1_000_000)] | Literal["engine-default"] | None \
        = Field(
        None,
        description="Sequences of maxModelLen one instance must hold; the engine then admits "
        "that many (--max-num-seqs per DP rank, SGLang --max-running-requests). Unset: 1 for "
        "the HBM check and the engine's own admission limit. engine-default (SGLang): no "
        "admission flag; moegen computes SGLang's own default from the KV pool it sizes "
        "(docs/spec.md §2) and sizes graphs, DeepEP buffers and the prediction with it.")


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
    version: str | None = Field(
        None, pattern=r"^v?(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$",
        max_length=32, description="The release of the router kind's component: llm-d-router "
        "(the endpoint picker and routing sidecar of inference-gateway), vllm-router or smg "
        "(e.g. 0.10.0, v0.9.0, 1.13.0). Default: the newest release moegen has read; an "
        "unknown one is refused with the list (RTR010). docs/routing.md lists them.")
    image: str | None = Field(None, min_length=1, max_length=512, pattern=IMAGE,
                              description="Default per kind and release (the router, or the "
                              "endpoint picker of kind inference-gateway).")
    port: int = Field(8080, ge=1024, le=65535, description="Router HTTP port (vllm-router, "
                      "smg; the Gateway's listeners serve inference-gateway).")
    replicas: int | None = Field(None, ge=1, le=64, description="Router replicas (endpoint "
                                 "picker replicas with kind inference-gateway). Default: 2 "
                                 "routers behind a PodDisruptionBudget (the router is the "
                                 "single entry point); 1 endpoint picker (more run with "
                                 "leader election).")
    policy: Literal["random", "round_robin", "cache_aware", "power_of_two"] = Field("round_robin",
        description="Load-balancing policy of vllm-router and smg (inference-gateway scores "
        "endpoints instead: docs/routing.md).")
    discovery: bool = Field(
        True, description="The router finds its engine pods by label (Kubernetes API, a "
        "namespaced Role) instead of a rendered list of pod URLs, where the router can: smg, and "
        "vllm-router with NIXL (its Mooncake mode needs the static list).")
    serviceAccountName: DnsSubdomain | None = Field(
        None, description="ServiceAccount of the router / endpoint picker pods, which the "
        "rendered Role (watch pods) is bound to. Default: their own, rendered in the base; "
        "spec.pod.serviceAccountName is the engines' only.")


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
    target: Target = Field(default_factory=Target, description="The platform the deployment "
                           "is rendered for (default: plain Kubernetes objects).")
    calibration: str | None = Field(None, min_length=1, max_length=4096,
        description="A calibration profile written by gen calibrate (path relative to this "
        "file): the predicted TTFT, TPOT and tokens/s take its factors where it was measured on "
        "this configuration (docs/calibration.md); gen size/plan/report --calibration overrides.")


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
    swaFullTokensRatio: float | None = None


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
