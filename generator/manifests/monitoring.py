"""Monitoring objects of a deployment (``spec.monitoring.enabled``): a PodMonitor over the engine
pods that serve ``/metrics`` on their ``http`` port (label ``moegen.dev/metrics``: vLLM's API
pods, whose front end aggregates every DP rank of the instance; every pod of an SGLang instance,
since nodes with ``node_rank >= 1`` export their own schedulers' metrics, sglang/srt/entrypoints/
engine.py 0.5.23), a ServiceMonitor over the router's metrics port, and a PrometheusRule whose
alerts cover failures the checks cannot see before the pods run (docs/design.md §6) and moegen's
own sizing:

* ``EngineStalled``: requests running or waiting but no token generated for 10 minutes (a hung
  collective: a DeepEP/NCCL peer lost: vllm-project/vllm#32136, gpustack/gpustack#6221; the
  waiting gauge too, since a wedged engine's running gauge can read 0 while requests queue:
  vllm-project/vllm#46811);
* ``KVTransferFailures``: the KV connector reports failed transfers (side-channel host:
  ai-dynamo/dynamo#2706; UCX devices: ai-dynamo/nixl#299; mismatched connectors: kserve/kserve#5987);
* ``KVCacheAboveSizing``: a rank's KV usage above what moegen's HBM check planned for the role's
  ``sizing.concurrency`` (the load exceeds the plan; preemptions follow);
* ``EngineGroupRestarts``: an engine container restarted (kube-state-metrics
  ``kube_pod_container_status_restarts_total``), or an engine pod was re-created under its own
  name outside a rollout. LeaderWorkerSet re-creates the whole group when a container restarts
  (its replacement pods start at 0 restarts, in new series) or a pod is deleted, evicted or lost
  with its node; the StatefulSets then re-create the pods under the same names, so the creation
  time of a pod name changes (``kube_pod_created``, one series per pod uid). Rollouts re-create
  pods too: they are left out while, and 15 minutes after, a StatefulSet of the deployment is
  between revisions (``kube_statefulset_status_update_revision`` not the current one; every
  LWS rollout moves its leader StatefulSet). Limits: pods are selected by the name prefix
  ``<name>-`` (kube-state-metrics exports pod labels only for an allowlist,
  ``--metric-labels-allowlist``), so another workload whose name starts so is counted too; a
  rollout anywhere in the namespace's matching StatefulSets hides re-creations during it; an
  instance scaled in and out again within 15 minutes looks re-created.

Series are selected by the pod labels the monitors copy onto them (``app_kubernetes_io_instance``,
``moegen_dev_role``: Prometheus label names of ``podTargetLabels``), never by namespace, so a
kustomize ``namespace:`` override keeps the rules working. Objects are checked against the
prometheus-operator CRDs (monitoring.coreos.com/v1, operator 0.93.0) in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engines.metrics import METRICS
from ..naming import L_COMPONENT, L_INSTANCE, L_METRICS, L_ROLE, router_name
from ..sizing import RoleSizing

#: The Prometheus label names of moegen's pod labels (``podTargetLabels`` sanitises the keys).
P_INSTANCE, P_ROLE = "app_kubernetes_io_instance", "moegen_dev_role"
#: Alert windows: a stall must last 10 minutes (a long prefill or a rebalance pauses output for
#: seconds, a lost peer forever); transfer failures over 10 minutes; KV usage over 15 minutes.
STALL_FOR, TRANSFER_WINDOW, KV_FOR = "10m", "10m", "15m"
#: The rate window of every query moegen renders (alerts, dashboard): long enough for two
#: samples at the slowest scrape interval rule SRV007 allows (150 s).
RATE_WINDOW = "5m"
#: Restarts and re-creations are reported for 15 minutes (a group reloads its weights longer).
RESTART_WINDOW = "15m"
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
    #: ServiceMonitor over the endpoint picker's metrics (router kind inference-gateway).
    epp_monitor: dict[str, Any] | None = None
    epp_monitor_name: str = ""
    #: The deployment's labels and ``spec.monitoring.labels`` (monitoring objects only).
    labels: dict[str, str] = field(default_factory=dict)


def _q(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def monitoring_plan(base: str, engine: str, interval: str,
                    roles: list[tuple[str, str, str, bool]], sizing: dict[str, RoleSizing],
                    router: bool, epp: bool = False) -> MonitoringPlan:
    """``roles``: (name, mode, connector or "", sizing.concurrency set) per role: the KV alert
    covers the roles whose concurrency the spec sizes; ``sizing``: the roles' memory plans."""
    m = METRICS[engine]
    pod_monitor = {
        "selector": {"matchLabels": {L_INSTANCE: base, L_METRICS: "true"}},
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
    epp_monitor = None
    if epp:   # the EPP Service's metrics port (gateway-api-inference-extension chart epp-service)
        epp_monitor = {
            "selector": {"matchLabels": {L_INSTANCE: base, L_COMPONENT: "endpoint-picker"}},
            "targetLabels": [L_INSTANCE],
            "endpoints": [{"port": "http-metrics", "path": "/metrics", "interval": interval}],
        }
    rules = []
    every = _q({P_INSTANCE: base})
    rules.append({
        "alert": "EngineStalled",
        "expr": f"(sum by (pod) ({m.running}{every}) > 0 or "
                f"sum by (pod) ({m.waiting}{every}) > 0) and "
                f"sum by (pod) (rate({m.generated_total}{every}[{RATE_WINDOW}])) == 0",
        "for": STALL_FOR, "labels": {"severity": "critical"},
        "annotations": {"summary": f"{base}: requests are running or waiting on "
                                   "{{ $labels.pod }} but no token was generated for 10 "
                                   "minutes",
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
    pods, sets = f'pod=~"{base}-.*"', f'statefulset=~"{base}-.*"'
    rolling = (f"kube_statefulset_status_update_revision{{{sets}}} unless on "
               f"(namespace, statefulset, revision) "
               f"kube_statefulset_status_current_revision{{{sets}}}")
    rules.append({
        "alert": "EngineGroupRestarts",
        "expr": "sum by (namespace, pod) (increase(kube_pod_container_status_restarts_total"
                f'{{{pods},container="engine"}}[{RESTART_WINDOW}])) > 0 or '
                f"(changes((max by (namespace, pod) (kube_pod_created{{{pods}}}))"
                f"[{RESTART_WINDOW}:1m]) > 0 unless on (namespace) "
                f"max_over_time((count by (namespace) ({rolling}))[{RESTART_WINDOW}:1m]))",
        "labels": {"severity": "warning"},
        "annotations": {"summary": f"{base}: engine pod {{{{ $labels.pod }}}} restarted or "
                                   "was re-created",
                        "description": "LeaderWorkerSet re-creates the whole group when a "
                                       "container restarts or a pod is lost (evicted, deleted, "
                                       "its node gone); each re-creation reloads the weights "
                                       "and recompiles without a cache volume. Pods re-created "
                                       "by a rollout are not counted."}})
    return MonitoringPlan(base, router_name(base), pod_monitor, service_monitor,
                          [{"name": f"{base}.moegen", "rules": rules}], epp_monitor=epp_monitor,
                          epp_monitor_name=f"{base}-epp" if epp_monitor else "")

