"""Monitoring objects of a deployment (``spec.monitoring.enabled``): a PodMonitor over the engine
pods that serve the API (every DP rank's metrics come through its pod's HTTP port), a
ServiceMonitor over the router's metrics port, and a PrometheusRule whose alerts cover the
failure modes of docs/field-failures.md and moegen's own sizing:

* ``EngineStalled``: requests running but no token generated for 10 minutes (a hung collective:
  a DeepEP/NCCL peer lost, docs/field-failures.md #5/#6);
* ``KVTransferFailures``: the KV connector reports failed transfers (docs/field-failures.md #7,
  #17, #24: side-channel host, UCX devices, mismatched connectors);
* ``KVCacheAboveSizing``: a rank's KV usage above what moegen's HBM check planned for the role's
  ``sizing.concurrency`` (the load exceeds the plan; preemptions follow);
* ``EngineGroupRestarts``: engine containers restarted (LeaderWorkerSet then re-creates the whole
  group; kube-state-metrics ``kube_pod_container_status_restarts_total``).

Series are selected by the pod labels the monitors copy onto them (``app_kubernetes_io_instance``,
``moegen_dev_role``: Prometheus label names of ``podTargetLabels``), never by namespace, so a
kustomize ``namespace:`` override keeps the rules working. Objects are checked against the
prometheus-operator CRDs (monitoring.coreos.com/v1, operator 0.93.0) in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engines.metrics import METRICS
from ..naming import L_API, L_COMPONENT, L_INSTANCE, L_ROLE, router_name
from ..sizing import RoleSizing

#: The Prometheus label names of moegen's pod labels (``podTargetLabels`` sanitises the keys).
P_INSTANCE, P_ROLE = "app_kubernetes_io_instance", "moegen_dev_role"
#: Alert windows: a stall must last 10 minutes (a long prefill or a rebalance pauses output for
#: seconds, a lost peer forever); transfer failures over 10 minutes; KV usage over 15 minutes.
STALL_FOR, TRANSFER_WINDOW, KV_FOR = "10m", "10m", "15m"
#: Margin over the planned KV usage before alerting (the plan is per rank at maxModelLen; real
#: sequences are shorter, so reaching the plan already means more sequences than sized).
KV_MARGIN = 1.1


@dataclass(frozen=True)
class MonitoringPlan:
    """The monitoring objects: each a dict rendered as YAML by its template."""

    name: str
    router_name: str
    pod_monitor: dict[str, Any]
    service_monitor: dict[str, Any] | None
    rule_groups: list[dict[str, Any]] = field(default_factory=list)


def _q(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def monitoring_plan(base: str, engine: str, interval: str,
                    roles: list[tuple[str, str, str, bool]], sizing: dict[str, RoleSizing],
                    router: bool) -> MonitoringPlan:
    """``roles``: (name, mode, connector or "", sizing.concurrency set) per role: the KV alert
    covers the roles whose concurrency the spec sizes; ``sizing``: the roles' memory plans."""
    m = METRICS[engine]
    pod_monitor = {
        "selector": {"matchLabels": {L_INSTANCE: base, L_API: "true"}},
        "podTargetLabels": [L_INSTANCE, L_ROLE],
        "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": interval}],
    }
    service_monitor = None
    if router:
        service_monitor = {
            "selector": {"matchLabels": {L_INSTANCE: base, L_COMPONENT: "router"}},
            "targetLabels": [L_INSTANCE],
            "endpoints": [{"port": "metrics", "path": "/metrics", "interval": interval}],
        }
    rules = []
    every = _q({P_INSTANCE: base})
    rules.append({
        "alert": "EngineStalled",
        "expr": f"sum by (pod) ({m.running}{every}) > 0 and "
                f"sum by (pod) (rate({m.generated_total}{every}[5m])) == 0",
        "for": STALL_FOR, "labels": {"severity": "critical"},
        "annotations": {"summary": f"{base}: requests are running on {{{{ $labels.pod }}}} "
                                   "but no token was generated for 10 minutes",
                        "description": "A hung collective (a lost DeepEP/NCCL peer) stalls the "
                                       "whole instance; restart the group."}})
    connectors = sorted({c for _, _, c, _ in roles if c})
    for c in connectors:
        failed = m.transfer_failed_total.get(c)
        if failed:
            rules.append({
                "alert": "KVTransferFailures",
                "expr": f"sum by (pod) (increase({failed}{every}[{TRANSFER_WINDOW}])) > 0",
                "labels": {"severity": "warning", "connector": c},
                "annotations": {"summary": f"{base}: {c} KV transfers fail on "
                                           "{{ $labels.pod }}",
                                "description": "Check the side-channel host, the RDMA devices "
                                               "(UCX_NET_DEVICES) and that prefill and decode "
                                               "use the same connector."}})
    for name, _, _, sized in roles:
        z = sizing.get(name)
        if not sized or z is None or z.kv_tokens_per_rank <= 0:
            continue
        planned = z.per_rank_required * z.max_model_len / z.kv_tokens_per_rank
        threshold = round(min(0.98, planned * KV_MARGIN), 2)
        rules.append({
            "alert": "KVCacheAboveSizing",
            "expr": f"max by (pod) ({m.kv_usage}{_q({P_INSTANCE: base, P_ROLE: name})}) "
                    f"> {threshold}",
            "for": KV_FOR, "labels": {"severity": "warning", "role": name},
            "annotations": {"summary": f"{base}/{name}: KV cache usage above the sized "
                                       f"{threshold:.0%} on {{{{ $labels.pod }}}}",
                            "description": f"moegen sized {z.per_rank_required} sequences of "
                                           f"{z.max_model_len} tokens per rank in "
                                           f"{z.kv_tokens_per_rank:,} KV tokens; more load than "
                                           "that preempts requests. Raise sizing.concurrency "
                                           "and re-render, or add replicas."}})
    rules.append({
        "alert": "EngineGroupRestarts",
        "expr": "sum by (pod) (increase(kube_pod_container_status_restarts_total"
                f'{{pod=~"{base}-.*",container="engine"}}[15m])) > 0',
        "labels": {"severity": "warning"},
        "annotations": {"summary": f"{base}: engine container restarted on {{{{ $labels.pod }}}}",
                        "description": "LeaderWorkerSet re-creates the whole group; each "
                                       "restart reloads the weights and recompiles without a "
                                       "cache volume."}})
    return MonitoringPlan(base, router_name(base), pod_monitor, service_monitor,
                          [{"name": f"{base}.moegen", "rules": rules}])

