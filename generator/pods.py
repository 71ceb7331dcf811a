"""What every engine pod gets beyond its GPUs, derived from the spec (shared by the checks and
the deployment plan, so both see the same numbers).

Pod settings come from ``spec.pod`` (defaults of every role) overridden key by key by a role's
``pod``: ``labels`` and ``annotations`` merge (the role's keys win); every other key is taken
whole from the role when the role sets it (docs/spec.md §6).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .spec.models import DeploymentSpec, Role
from .spec.operations import Cache, Pod, PodLimits

#: Startup probe period, s (the startup budget is a whole number of periods).
STARTUP_PERIOD_S = 10

#: Graceful shutdown, s. preStop waits PRESTOP_S before the engine gets SIGTERM, so endpoint
#: controllers and routers stop sending it new requests first (Kubernetes "termination of pods":
#: removal from EndpointSlices races with SIGTERM); the engine then drains in-flight requests
#: for up to DRAIN_S (vLLM ``--shutdown-timeout``, >= 0.18.0; SGLang drains until done,
#: sglang/srt/managers/tokenizer_manager.py sigterm_watchdog) and its processes exit within
#: TEARDOWN_S (SGLang _SCHEDULER_EXIT_TIMEOUT_SECS = 15; vLLM
#: VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS = 5). terminationGracePeriodSeconds covers the sum + 5.
PRESTOP_S, DRAIN_S, TEARDOWN_S = 10, 60, 15


def termination_grace(drain_s: int = DRAIN_S) -> int:
    """terminationGracePeriodSeconds of an engine pod that drains for ``drain_s`` seconds
    (generator/durations.py derives it from the mean request): preStop + drain + teardown + 5."""
    return PRESTOP_S + drain_s + TEARDOWN_S + 5


TERMINATION_GRACE_S = termination_grace()

#: /dev/shm default, GiB: Dynamo's operator default and KServe's DP default are 8Gi
#: (production-stack#276: NCCL fails with the 64 MiB container default; dynamo PR#2616).
SHM_DEFAULT_GIB = 8


@dataclass(frozen=True)
class PodSettings:
    """A role's effective pod settings (``spec.pod`` < ``roles[].pod``); see :class:`Pod`.

    Resource fields are the user's Kubernetes quantities, ``None`` when moegen derives them.
    """

    cpu: str | None = None
    memory: str | None = None
    ephemeral_storage: str | None = None
    limits: PodLimits | None = None
    shm_gib: int = SHM_DEFAULT_GIB
    privileged: bool = False
    image_pull_secrets: tuple[str, ...] = ()
    service_account: str | None = None
    priority_class: str | None = None
    scheduler_name: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    affinity: dict[str, Any] | None = None
    security_context: dict[str, Any] | None = None
    extra_volumes: tuple[dict[str, Any], ...] = ()
    extra_volume_mounts: tuple[dict[str, Any], ...] = ()
    cache: Cache = field(default_factory=Cache)
    #: Where each key was set: ``"role"`` or ``"spec"`` (for findings' field paths).
    origin: dict[str, str] = field(default_factory=dict)


#: Pod keys whose maps merge (spec's, then the role's keys); every other key is replaced.
_MERGED = ("labels", "annotations")


def effective_pod(spec: DeploymentSpec, role: Role) -> PodSettings:
    """The pod settings of ``role``: ``spec.pod`` overridden per key by ``role.pod``."""
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for where, layer in (("spec", spec.pod), ("role", role.pod)):
        if layer is None:
            continue
        for key in Pod.model_fields:
            value = getattr(layer, key)
            if value is None:
                continue
            if key in _MERGED:
                values[key] = {**values.get(key, {}), **value}
            else:
                values[key] = value
            origin[key] = where
    return PodSettings(
        cpu=values.get("cpu"),
        memory=values.get("memory"),
        ephemeral_storage=values.get("ephemeralStorage"),
        limits=values.get("limits"),
        shm_gib=values.get("shmSizeGiB", SHM_DEFAULT_GIB),
        privileged=bool(values.get("privileged", False)),
        image_pull_secrets=tuple(values.get("imagePullSecrets", ())),
        service_account=values.get("serviceAccountName"),
        priority_class=values.get("priorityClassName"),
        scheduler_name=values.get("schedulerName"),
        labels=dict(values.get("labels", {})),
        annotations=dict(values.get("annotations", {})),
        affinity=values.get("affinity"),
        security_context=values.get("securityContext"),
        extra_volumes=tuple(values.get("extraVolumes", ())),
        extra_volume_mounts=tuple(values.get("extraVolumeMounts", ())),
        cache=values.get("cache") or Cache(),
        origin=origin,
    )


def pod_path(settings: PodSettings, role_index: int, key: str) -> tuple:
    """The field path that set pod key ``key`` of a role (its ``pod`` block or ``spec.pod``)."""
    if settings.origin.get(key) == "spec":
        return ("spec", "pod", key)
    return ("spec", "roles", role_index, "pod", key)


#: Kubernetes quantity suffixes (apimachinery pkg/api/resource): binary and decimal, bytes.
_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
          "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}


def quantity_gib(q: str) -> float:
    """A Kubernetes byte quantity (``512Gi``, ``1Ti``, ``100G``, plain bytes) in GiB (2^30 B)."""
    for suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "k", "M", "G", "T", "P"):
        if q.endswith(suffix):
            return float(q[: -len(suffix)]) * _UNITS[suffix] / 2**30
    return float(q) / 2**30


def quantity_cpu(q: str) -> float:
    """A Kubernetes CPU quantity (``32``, ``500m``, ``1.5``) in cores."""
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


#: Capabilities Pod Security "baseline" lets a container add (kubernetes/kubernetes
#: staging/src/k8s.io/pod-security-admission/policy/check_capabilities_baseline.go).
BASELINE_CAPS = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
                           "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID",
                           "SYS_CHROOT"})
#: Volume types Pod Security "restricted" allows (check_restrictedVolumes.go).
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                "persistentVolumeClaim", "projected", "secret"})
_LEVELS = ("restricted", "baseline", "privileged")


def pod_security(spec: DeploymentSpec, pod: PodSettings) -> tuple[str, list[tuple[str, str]]]:
    """The lowest Pod Security Standards level (https://kubernetes.io/docs/concepts/security/
    pod-security-standards/) a role's engine pods pass, and why they need more than
    ``restricted``: ``(level, [(level it forces, reason)])``.

    moegen's pods drop every capability, forbid privilege escalation and use the RuntimeDefault
    seccomp profile; what is left is what the spec asks for: RDMA (IPC_LOCK), hostNetwork,
    ``pod.privileged``, hostPath volumes, and for ``restricted`` a non-root user and the
    restricted volume types.
    """
    reasons: list[tuple[str, str]] = []
    net = spec.network
    if pod.privileged:
        reasons.append(("privileged", "pod.privileged runs the engine container privileged"))
    if net.hostNetwork:
        reasons.append(("privileged", "network.hostNetwork: true"))
    if net.rdma is not None:
        reasons.append(("privileged", "network.rdma needs capability IPC_LOCK (RDMA memory "
                        "registration pins pages)"))
    volumes = [("model.volume", spec.model.volume.sources()) if spec.model.volume else None,
               ("pod.cache.volume", pod.cache.volume.sources()) if pod.cache.volume else None]
    volumes += [(f"pod.extraVolumes[{v.get('name', '?')}]", v) for v in pod.extra_volumes]
    for where, vol in filter(None, volumes):
        kinds = [k for k in vol if k != "name"]
        if "hostPath" in kinds:
            reasons.append(("privileged", f"{where} is a hostPath volume"))
        elif not set(kinds) <= RESTRICTED_VOLUMES:
            reasons.append(("baseline", f"{where} is a {', '.join(kinds)} volume"))
    ctx = pod.security_context or {}
    if not ctx.get("runAsNonRoot") or ctx.get("runAsUser") == 0:
        reasons.append(("baseline", "the engine runs as root (set pod.securityContext."
                        "runAsNonRoot and runAsUser for an image that runs as another user)"))
    level = max((lvl for lvl, _ in reasons), key=_LEVELS.index, default="restricted")
    return level, reasons


def security_rank(level: str) -> int:
    """0 restricted, 1 baseline, 2 privileged."""
    return _LEVELS.index(level)
