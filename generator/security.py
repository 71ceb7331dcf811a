"""The policy suite platform teams run over manifests (checkov's Kubernetes checks, offline):
every check moegen's output does not pass, with the reason, in ONE place.

A :class:`Waiver` names a checkov check, the condition under which moegen's output fails it,
and why that is what the deployment needs. The renderer puts the waivers that apply to a pod
on the object checkov reads as checkov's skip annotations (``checkov.io/skip<N>:
<check>=<reason>``, checkov/kubernetes/kubernetes_utils.py ``get_skipped_checks``), so a user
who runs checkov sees the reason on the object; docs/security.md lists them all, and
tests/test_checkov.py runs checkov over every example and target and fails on any check that is
neither passed nor waived here, and on a waiver no rendered tree uses.

What is fixed instead of waived (docs/security.md "What moegen sets"): service-account tokens
are not mounted where the pod does not call the API server; root filesystems are read-only,
with ``/tmp`` an emptyDir and ``HOME`` inside it (:data:`TMP_MOUNT`, :data:`HOME`); the
router's and the endpoint picker's containers run as a non-root user where their images allow
it; a NetworkPolicy admits only the traffic the plan computes (generator/manifests/netpol.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .spec.models import InferenceDeployment

#: The checkov release whose checks the waivers are written against (.ci/checkov-venv.sh).
CHECKOV_VERSION = "3.3.30"
#: Annotation key prefix checkov reads (checkov/kubernetes/kubernetes_utils.py
#: SKIP_ANNOTATION_PREFIXES); the value is ``<check id>=<reason>``, split on ``=``.
SKIP_PREFIX = "checkov.io/skip"

#: The writable scratch of every container with a read-only root filesystem: an emptyDir at
#: /tmp. ``HOME`` points into it: vLLM 0.33.0 and SGLang 0.5.23 write nowhere else outside
#: their mounted volumes (/dev/shm, the model, the compile cache): every other write is below
#: ``~`` (vllm/envs.py VLLM_CACHE_ROOT ~/.cache/vllm, VLLM_CONFIG_ROOT ~/.config/vllm,
#: VLLM_ASSETS_CACHE; vllm/v1/structured_output/utils.py; sglang/srt/model_loader/
#: expert_pack_runtime.py XDG_CACHE_HOME or ~/.cache; huggingface_hub HF_HOME ~/.cache/
#: huggingface; Triton ~/.triton) or in the temporary directory (vllm/envs.py
#: VLLM_RPC_BASE_PATH = tempfile.gettempdir(); torch inductor, Triton and nvcc build in it;
#: SGLang's profiler and dump defaults are /tmp). docs/security.md lists the search.
TMP_MOUNT = "/tmp"
HOME = "/tmp"
#: The same for the router and the endpoint picker (they write nothing: see below), MiB.
CONTROL_TMP_MIB = 64
#: The non-root user of the control containers whose images run as one or allow it:
#: llm-d/llm-d-router@v0.10.0:Dockerfile.epp and Dockerfile.sidecar (``USER 65532:65532``,
#: distroless nonroot); vllm-project/router Dockerfile.router (the binary in /usr/local/bin,
#: mode +x, no USER: any user runs it). At or above 10000 (checkov CKV_K8S_40).
NONROOT_UID = 65532


@dataclass(frozen=True)
class Waiver:
    """One checkov check moegen's output fails on purpose.

    Attributes:
        key: moegen's name of the exception (docs/security.md).
        check: checkov's check id (CKV_K8S_<n>, CKV2_K8S_<n>).
        reason: why, one line, shown in the skip annotation (no ``=``: checkov splits on it).
        source: where the fact comes from (an upstream file at a release, an issue, a page).
    """

    key: str
    check: str
    reason: str
    source: str


def _w(key: str, check: str, reason: str, source: str) -> Waiver:
    assert "=" not in reason, reason   # checkov splits the annotation value on "="
    return Waiver(key, check, reason, source)


_RDMA = ("RDMA memory registration pins pages: ib_umem_get needs CAP_IPC_LOCK above "
         "RLIMIT_MEMLOCK (network.rdma)")
_ROOT = ("the engine image runs as root (vLLM and SGLang images declare no USER); with "
         "network.rdma only root holds IPC_LOCK, which Kubernetes grants to no other user; set "
         "pod.securityContext.runAsUser for an image built to run as another")
_TAG = ("the spec names the image by tag: pin a digest (repo:tag@sha256:...) in the spec and "
        "this check passes")
_PULL = ("without a digest, Always would re-resolve the tag at every start and could mix two "
         "builds in one engine instance; pin a digest in the spec and this check passes")

#: Every exception, by key. The conditions are in :func:`engine_waivers`,
#: :func:`router_waivers` and :func:`picker_waivers`.
WAIVERS: dict[str, Waiver] = {w.key: w for w in (
    _w("rdma-ipc-lock", "CKV_K8S_25", "IPC_LOCK: " + _RDMA,
       "kernel drivers/infiniband/core/umem.c ib_umem_get; docs/platform-facts.md §5"),
    _w("engine-root", "CKV_K8S_23", _ROOT,
       "kubernetes/kubernetes#56374 (added capabilities are not ambient: a non-root process "
       "does not hold them)"),
    _w("engine-uid", "CKV_K8S_40", _ROOT,
       "kubernetes/kubernetes#56374"),
    _w("host-network", "CKV_K8S_19", "network.hostNetwork: true (the NICs of the node for "
       "NCCL, NVSHMEM and the KV transfer)", "docs/spec.md §2 network.hostNetwork"),
    _w("privileged", "CKV_K8S_16", "pod.privileged: true (GPU-initiated RDMA on platforms "
       "that need it)", "docs/platform-facts.md §5"),
    _w("privileged-escalation", "CKV_K8S_20", "pod.privileged: true implies privilege "
       "escalation", "https://kubernetes.io/docs/concepts/security/pod-security-standards/"),
    _w("privileged-capabilities", "CKV_K8S_37", "pod.privileged: true holds every capability",
       "https://kubernetes.io/docs/concepts/security/pod-security-standards/"),
    _w("privileged-net-raw", "CKV_K8S_28", "pod.privileged: true holds every capability",
       "https://kubernetes.io/docs/concepts/security/pod-security-standards/"),
    _w("image-digest", "CKV_K8S_43", _TAG,
       "https://kubernetes.io/docs/concepts/containers/images/#image-pull-policy"),
    _w("image-pull", "CKV_K8S_15", _PULL,
       "https://kubernetes.io/docs/concepts/containers/images/#image-pull-policy"),
    _w("rank-liveness", "CKV_K8S_8", "a rank pod without an HTTP server: its engine process "
       "exits on failure and the LeaderWorkerSet re-creates the group (restartPolicy "
       "RecreateGroupOnPodRestart or RecreateGroupAfterStart, by release); the leader's "
       "probes cover a hung group", "generator/facts/lws.py restart_policy"),
    _w("rank-readiness", "CKV_K8S_9", "a rank pod without an HTTP server takes no traffic: "
       "only pods that serve the API are endpoints", "generator/manifests/workloads.py"),
    _w("hub-token-env", "CKV_K8S_35", "HF_TOKEN comes from the Secret model.tokenSecret by "
       "reference (never inline): huggingface_hub and the engines read it from the "
       "environment", "huggingface_hub constants.py HF_TOKEN"),
    _w("router-api-token", "CKV_K8S_38", "the router discovers its engines by watching pods "
       "through the API server (--service-discovery) with its own ServiceAccount and Role",
       "generator/engines/routers.py"),
    _w("picker-api-token", "CKV_K8S_38", "the endpoint picker watches its InferencePool and "
       "the pool's pods through the API server",
       "llm-d/llm-d-router@v0.10.0:pkg/epp/server/controller_config.go"),
    _w("smg-root", "CKV_K8S_23", "lightseekorg/smg is built FROM the SGLang engine image, "
       "which declares no USER: moegen runs it as the image's user",
       "lightseekorg/smg@v1.9.0:docker/engine.Dockerfile"),
    _w("smg-uid", "CKV_K8S_40", "lightseekorg/smg is built FROM the SGLang engine image, "
       "which declares no USER: moegen runs it as the image's user",
       "lightseekorg/smg@v1.9.0:docker/engine.Dockerfile"),
    _w("no-network-policy", "CKV2_K8S_6", "network.networkPolicy: false: the cluster's own "
       "NetworkPolicies apply", "docs/security.md"),
    _w("controller-network-policy", "CKV2_K8S_6", "the platform controller owns these pods' "
       "labels and its own components' traffic: a policy moegen wrote could cut traffic it "
       "does not know", "docs/security.md"),
    _w("dynamo-api-token", "CKV_K8S_38", "Dynamo's runtime registers the worker through the "
       "API server (the operator sets DYN_DISCOVERY_BACKEND kubernetes)",
       "ai-dynamo/dynamo docs/pages/design-docs/discovery-plane.md"),
    _w("dynamo-writes", "CKV_K8S_22", "Dynamo's runtime (dynamo.vllm, dynamo.sglang, "
       "dynamo.frontend) writes below /root (the operator's compile cache default "
       "/root/.cache/vllm); moegen has not audited its other writes",
       "ai-dynamo/dynamo@e147cee:deploy/operator/internal/consts/consts.go:208"),
    _w("dynamo-frontend-root", "CKV_K8S_23", "Dynamo's runtime image runs as root "
       "(the operator's defaults write below /root)",
       "ai-dynamo/dynamo@e147cee:deploy/operator/internal/consts/consts.go:208"),
    _w("dynamo-frontend-uid", "CKV_K8S_40", "Dynamo's runtime image runs as root "
       "(the operator's defaults write below /root)",
       "ai-dynamo/dynamo@e147cee:deploy/operator/internal/consts/consts.go:208"),
    _w("dynamo-frontend-cpu-request", "CKV_K8S_10", "moegen does not size Dynamo's frontend "
       "(it tokenizes; no model of its load): set its resources in the DynamoGraphDeployment",
       "docs/security.md"),
    _w("dynamo-frontend-cpu-limit", "CKV_K8S_11", "moegen does not size Dynamo's frontend "
       "(it tokenizes; no model of its load): set its resources in the DynamoGraphDeployment",
       "docs/security.md"),
    _w("dynamo-frontend-memory-request", "CKV_K8S_12", "moegen does not size Dynamo's "
       "frontend (it tokenizes; no model of its load): set its resources in the "
       "DynamoGraphDeployment", "docs/security.md"),
    _w("dynamo-frontend-memory-limit", "CKV_K8S_13", "moegen does not size Dynamo's frontend "
       "(it tokenizes; no model of its load): set its resources in the DynamoGraphDeployment",
       "docs/security.md"),
    _w("dynamo-probes-liveness", "CKV_K8S_8", "the Dynamo operator adds the probes of every "
       "component (on its system port)", "generator/targets/dynamo.py"),
    _w("dynamo-probes-readiness", "CKV_K8S_9", "the Dynamo operator adds the probes of every "
       "component (on its system port)", "generator/targets/dynamo.py"),
)}


_PRESET = ("KServe merges this template over its preset's pod (config-llm-template.yaml) and "
           "owns the merged pod; moegen does not set this field over the preset's")
for _check, _name in (("CKV_K8S_8", "liveness"), ("CKV_K8S_9", "readiness"),
                      ("CKV_K8S_20", "escalation"), ("CKV_K8S_22", "root-filesystem"),
                      ("CKV_K8S_28", "net-raw"), ("CKV_K8S_30", "security-context"),
                      ("CKV_K8S_37", "capabilities"), ("CKV_K8S_38", "api-token")):
    WAIVERS[f"kserve-preset-{_name}"] = _w(f"kserve-preset-{_name}", _check, _PRESET,
                                           "kserve/kserve@v0.20.0:config/llmisvcconfig/"
                                           "config-llm-template.yaml")


def engine_waivers_of(annotations: dict[str, str]) -> list[Waiver]:
    """The waivers named by a pod template's checkov skip annotations, except those a platform
    target changes itself (the API token, the root filesystem: its own waivers say why)."""
    by_reason = {(w.check, w.reason): w for w in WAIVERS.values()}
    out = []
    for k, v in annotations.items():
        if k.startswith(SKIP_PREFIX):
            check, _, reason = v.partition("=")
            if check not in ("CKV_K8S_38", "CKV_K8S_22"):
                out.append(by_reason[(check, reason)])
    return out


def has_digest(image: str) -> bool:
    """Whether an image reference pins a digest (``@``: checkov CKV_K8S_43 and CKV_K8S_15)."""
    return "@" in image


def runs_as_root(pod_ctx: dict | None, container_ctx: dict | None = None) -> bool:
    """Whether checkov's CKV_K8S_23 sees a root container: neither ``runAsNonRoot: true`` nor
    a ``runAsUser`` above 0, at the pod or the container level."""
    for ctx in (container_ctx or {}, pod_ctx or {}):
        if ctx.get("runAsNonRoot") is True or (ctx.get("runAsUser") or 0) > 0:
            return False
    return True


def low_uid(pod_ctx: dict | None, container_ctx: dict | None = None) -> bool:
    """Whether checkov's CKV_K8S_40 fails: no ``runAsUser`` of 10000 or more."""
    for ctx in (container_ctx or {}, pod_ctx or {}):
        if "runAsUser" in ctx:
            return ctx["runAsUser"] < 10000
    return True


def engine_waivers(*, image: str, rdma: bool, host_network: bool, privileged: bool,
                   pod_ctx: dict | None, serves_api: bool, token_env: bool,
                   network_policy: str | None) -> list[Waiver]:
    """The waivers of an engine pod template.

    ``network_policy``: None when moegen renders a NetworkPolicy over the pod, else the key of
    the waiver that says why not (``no-network-policy``, ``controller-network-policy``).
    """
    keys: list[str] = []
    if privileged:
        keys += ["privileged", "privileged-escalation", "privileged-capabilities",
                 "privileged-net-raw"]
    elif rdma:
        keys.append("rdma-ipc-lock")
    if host_network:
        keys.append("host-network")
    if runs_as_root(pod_ctx):
        keys.append("engine-root")
    if low_uid(pod_ctx):
        keys.append("engine-uid")
    if not has_digest(image):
        keys += ["image-digest", "image-pull"]
    if not serves_api:
        keys += ["rank-liveness", "rank-readiness"]
    if token_env:
        keys.append("hub-token-env")
    if network_policy:
        keys.append(network_policy)
    return [WAIVERS[k] for k in keys]


def control_waivers(*, image: str, api_token: str | None, root: str | None,
                    network_policy: str | None) -> list[Waiver]:
    """The waivers of a router or endpoint-picker pod: ``api_token``/``root``: the keys of the
    token and root waivers when they apply (None: fixed)."""
    keys: list[str] = []
    if api_token:
        keys.append(api_token)
    if root:
        keys += [root, root.replace("-root", "-uid")]
    if not has_digest(image):
        keys += ["image-digest", "image-pull"]
    if network_policy:
        keys.append(network_policy)
    return [WAIVERS[k] for k in keys]


def network_policy_waiver(spec: InferenceDeployment) -> str | None:
    """Why no moegen NetworkPolicy selects the deployment's pods (a :data:`WAIVERS` key), or
    None when one does: only the kubernetes target renders them (a platform controller's pods
    carry its labels and talk to its components), unless ``network.networkPolicy: false``.
    ``spec``: an InferenceDeployment."""
    if spec.spec.target.name != "kubernetes":
        return "controller-network-policy"
    if not spec.spec.network.networkPolicy:
        return "no-network-policy"
    return None


def skip_annotations(waivers: list[Waiver]) -> dict[str, str]:
    """checkov's skip annotations for ``waivers``, numbered in check order:
    ``{"checkov.io/skip1": "CKV_K8S_15=<reason>", ...}`` (one per check; the first waiver of
    a check wins)."""
    by_check: dict[str, Waiver] = {}
    for w in waivers:
        by_check.setdefault(w.check, w)
    ordered = sorted(by_check.values(), key=lambda w: _check_order(w.check))
    return {f"{SKIP_PREFIX}{i}": f"{w.check}={w.reason}" for i, w in enumerate(ordered, 1)}


def _check_order(check: str) -> tuple[str, int]:
    prefix, _, number = check.rpartition("_")
    return prefix, int(number)
