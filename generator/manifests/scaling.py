"""KEDA ScaledObjects of the autoscaled roles (``roles[].autoscaling``).

One ScaledObject (keda.sh/v1alpha1) per role targets the role's LeaderWorkerSet, whose /scale
subresource counts instances (kubernetes-sigs/lws leaderworkerset_types.go,
``+kubebuilder:subresource:scale``). KEDA's Prometheus scaler asks the deployment's Prometheus
(``spec.monitoring.prometheusUrl``) for the role's engines, selected by the PodMonitor's target
labels (never by namespace):

* ``waiting``: ``sum`` of the requests queued in the role's engines, metricType ``AverageValue``:
  the HPA divides by the LeaderWorkerSet's ``status.replicas`` (its groups), so it keeps queued
  requests per instance at ``target``. A vLLM decode role (0.20+) counts only the requests
  waiting for capacity, not those waiting for their KV from prefill (``reason="capacity"``);
* ``kvUsage``: ``avg`` of the engines' KV cache usage, metricType ``Value``: desired instances =
  ready leaders x usage / ``target`` (the HPA counts the Ready pods of the scale's selector, the
  LeaderWorkerSet's ``hpaPodSelector``: its leaders; an instance still loading is not counted).

Bounds are moegen's numbers: ``maxReplicas`` defaults to the instances the pool's nodes hold
beside the other roles (``generator.layout.RoleLayout.most_instances``; rule AUT001), and the scaling
behaviour follows the role's cold start (sizing/host.py startup budget: checkpoint load, warm-up,
rendezvous): at most one instance added per cold start, and the scale-down stabilization window
at least one cold start, so a dip shorter than a restart does not drop an instance that would
take that long to come back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engines.metrics import (
    METRICS,
    VLLM_WAITING_BY_REASON,
    VLLM_WAITING_BY_REASON_SINCE,
)
from ..facts.versions import parse_version

#: HPA limits on the behaviour fields (k8s.io/api autoscaling/v2 types.go HPAScalingRules:
#: stabilizationWindowSeconds <= 3600, HPAScalingPolicy periodSeconds <= 1800; validated in
#: kubernetes pkg/apis/autoscaling/validation/validation.go).
MAX_STABILIZATION_S, MAX_PERIOD_S = 3600, 1800
#: The HPA's default scale-down stabilization window, the floor moegen keeps
#: (https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#default-behavior:
#: 300 s).
DEFAULT_SCALE_DOWN_S = 300
#: KEDA's polling interval of the Prometheus query, s: KEDA's default
#: (https://keda.sh/docs/2.16/reference/scaledobject-spec/#pollinginterval: 30), written out.
POLLING_S = 30
#: The LeaderWorkerSet API the scale target names.
LWS_API = "leaderworkerset.x-k8s.io/v1"


@dataclass(frozen=True)
class ScaledObjectPlan:
    """One ScaledObject: name, file and its ``spec``."""

    name: str
    file: str
    role: str
    spec: dict[str, Any]


def scaled_object(base: str, engine: str, role_spec, target_name: str, layout, pool,
                  free_nodes: int, startup_s: int, prometheus_url: str,
                  engine_version: str = "0.33.0") -> ScaledObjectPlan:
    """The ScaledObject of one autoscaled role (``role_spec``: its spec Role; ``layout``: its
    RoleLayout; ``free_nodes``: the pool's nodes the other roles leave; ``startup_s``: its
    pods' startup budget, s)."""
    from .monitoring import P_INSTANCE, P_ROLE, _q   # PromQL of the monitored: autoscaled roles only
    a = role_spec.autoscaling
    m = METRICS[engine]
    sel = _q({P_INSTANCE: base, P_ROLE: role_spec.name})
    if a.metric == "waiting":
        query, metric_type = f"sum({m.waiting}{sel})", "AverageValue"
        if engine == "vllm" and role_spec.mode == "decode" and role_spec.kvTransfer is not None \
                and parse_version(engine_version) >= VLLM_WAITING_BY_REASON_SINCE:
            capacity = _q({P_INSTANCE: base, P_ROLE: role_spec.name, "reason": "capacity"})
            query = f"sum({VLLM_WAITING_BY_REASON}{capacity})"
    else:
        query, metric_type = f"avg({m.kv_usage}{sel})", "Value"
    most = a.maxReplicas or layout.most_instances(free_nodes)
    cold = max(1, int(startup_s))
    spec = {
        "scaleTargetRef": {"apiVersion": LWS_API, "kind": "LeaderWorkerSet",
                           "name": target_name},
        "minReplicaCount": a.minReplicas or role_spec.replicas,
        "maxReplicaCount": most,
        "pollingInterval": POLLING_S,
        "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 0,
                        "policies": [{"type": "Pods", "value": 1,
                                      "periodSeconds": min(cold, MAX_PERIOD_S)}]},
            "scaleDown": {"stabilizationWindowSeconds":
                          min(max(cold, DEFAULT_SCALE_DOWN_S), MAX_STABILIZATION_S),
                          "policies": [{"type": "Pods", "value": 1,
                                        "periodSeconds": min(cold, MAX_PERIOD_S)}]}}}},
        "triggers": [{"type": "prometheus", "metricType": metric_type,
                      "metadata": {"serverAddress": prometheus_url, "query": query,
                                   "threshold": f"{a.target:g}"}}],
    }
    name = f"{target_name}"
    return ScaledObjectPlan(name, f"{role_spec.name}-scaledobject.yaml", role_spec.name, spec)
