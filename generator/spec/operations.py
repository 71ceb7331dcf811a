"""How a deployment runs on its cluster, as spec models: pod settings (resources, security,
volumes, the compile cache), placement and autoscaling of a role, the inference gateway's
parent Gateway, the platform (LeaderWorkerSet release, gang scheduler, Pod Security level,
topology domains) and monitoring (docs/spec.md §6)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .fields import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    IMAGE,
    CpuQuantity,
    DnsSubdomain,
    LabelKey,
    Labels,
    MemQuantity,
    OneLine,
    VolumeSource,
    _Model,
)
from .k8s import K8sAffinity, K8sPodSecurityContext, K8sVolume, K8sVolumeMount


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
    rankEndpoints: bool | None = Field(
        None, description="One pool endpoint per local DP rank (vLLM >= 0.22.0 runs its DP "
        "supervisor, one API server per rank, and the InferencePool targets one port per rank, "
        "at most 8): the endpoint picker then scores every engine instead of one per pod. "
        "Default: on where every role of the pool can (vLLM, the same 2-8 local DP ranks per "
        "pod); true refuses a spec that cannot (RTR011); false keeps one endpoint per pod.")


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
    generator/facts/lws.py)."""

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


#: ``spec.target.name`` values (generator/targets): plain Kubernetes objects, or a platform
#: controller's custom resource.
TARGET_NAMES = ("kubernetes", "kserve", "rbg", "dynamo", "aibrix")


class Target(_Model):
    """The platform the deployment is rendered for (docs/spec.md §6.3): plain Kubernetes objects
    (LeaderWorkerSets, StatefulSets, a kustomize base), or the custom resource of a platform
    controller that runs the pods itself and injects rank flags and environment of its own
    (KServe LLMInferenceService, SGLang RoleBasedGroup, NVIDIA Dynamo DynamoGraphDeployment,
    AIBrix StormService). ``gen render --target`` overrides it."""

    name: Literal[TARGET_NAMES] = Field(  # type: ignore[valid-type]
        "kubernetes", description="kubernetes (default), kserve, rbg, dynamo or aibrix.")
    version: str | None = Field(
        None, pattern=r"^v?(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})"
        r"(-[0-9A-Za-z.]+)?$", max_length=32,
        description="The controller release the cluster runs (default: the newest moegen "
        "knows); what it injects is read from that release's source (TGT001 lists them).")
    image: str | None = Field(
        None, min_length=1, max_length=512, pattern=IMAGE,
        description="dynamo only: the Dynamo runtime image of the workers (default: the "
        "release's vllm-runtime or sglang-runtime image, whose bundled engine release "
        "engine.version must name: TGT032).")
    clusterTopology: DnsSubdomain | None = Field(
        None, description="dynamo only: the Grove ClusterTopology that defines the domain "
        "platform.topology packs each multi-node instance in.")
    packDomain: str | None = Field(
        None, pattern=r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", max_length=63,
        description="dynamo only: the ClusterTopology domain (e.g. rack) each multi-node "
        "instance is packed in (topologyConstraint.packDomain).")


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
    scrapeNamespace: str | None = Field(
        None, max_length=63, pattern=DNS_LABEL,
        description="The namespace Prometheus scrapes from: the NetworkPolicies "
        "(network.networkPolicy) admit it to the metrics ports; unset: any namespace.")
    dashboard: bool = Field(False, description="Render a Grafana dashboard ConfigMap (label "
                            "grafana_dashboard: \"1\", for the Grafana sidecar) whose reference "
                            "lines are moegen's predicted KV capacity, TTFT and TPOT (needs "
                            "spec.traffic for the latencies).")
