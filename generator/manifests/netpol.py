"""The deployment's NetworkPolicies (kubernetes target, ``network.networkPolicy``, default on):
ingress to every pod moegen renders admits only the traffic the plan computes; egress is left
open (the engines download from the Hub, reach the KV store, DNS). docs/security.md.

Engine pods (selector: the deployment's pods with a ``moegen.dev/mode``):

* from each other, every port: NCCL and Gloo bind ephemeral ports for their bootstrap and
  socket transports, UCX's TCP transport (NIXL) too, so no port list holds them
  (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html names no port range for
  NCCL's sockets); the fixed ones (NIXL side channel, DP RPC, SGLang bootstrap, dist-init) are
  among them;
* from the router or the endpoint picker: the API ports of the pods that serve it (container
  ports ``http``, ``http-<k>`` and the routing sidecar's);
* from the Gateway's namespace (router kind inference-gateway): the InferencePool's target
  ports; the Gateway's own namespace by name, or every pod of the deployment's namespace;
* from Prometheus (``monitoring.enabled``): the ``http`` port (/metrics); from
  ``monitoring.scrapeNamespace``, or any namespace when it is unset.

The router: its port from anywhere (its clients), its metrics port from Prometheus. The
endpoint picker: its ext-proc port from the Gateway's namespace, its metrics port from
Prometheus.

Policies do not apply to hostNetwork pods (they are rendered all the same), and kubelet probes
come from the node, which the common CNIs admit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engines import gateway as gw
from ..naming import L_COMPONENT, L_INSTANCE, L_MODE, L_ROLE
from ..spec.models import InferenceDeployment

#: Namespace label every namespace carries (Kubernetes >= 1.22, NamespaceDefaultLabelName).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class NetworkPolicyPlan:
    """One NetworkPolicy: ``spec`` is the object's spec as a dict."""

    name: str
    file: str
    labels: dict[str, str]
    spec: dict[str, Any]


def _ports(numbers) -> list[dict[str, Any]]:
    return [{"port": p, "protocol": "TCP"} for p in sorted(set(numbers))]


def _namespace(name: str | None) -> dict[str, Any]:
    """A peer: every pod of namespace ``name``; of any namespace when None."""
    if name is None:
        return {"namespaceSelector": {}}
    return {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: name}}}


def api_ports(workloads) -> list[int]:
    """The API ports of the engine pods that serve the API: container ports named ``http``,
    ``http-<k>`` (vLLM's DP supervisor, one per rank) and the routing sidecar's."""
    out = set()
    for w in workloads:
        for pod in (w.leader, w.worker):
            if pod is None:
                continue
            out |= {p["containerPort"] for p in pod.spec.ports
                    if p["name"] == "http" or p["name"].startswith("http-")}
            out |= {p["containerPort"] for c in pod.spec.init_containers
                    for p in c.get("ports", [])}
    return sorted(out)


def network_policies(spec: InferenceDeployment, base: str, labels: dict[str, str], workloads,
                     router, gateway) -> list[NetworkPolicyPlan]:
    """The NetworkPolicies of a deployment (none when ``network.networkPolicy`` is false).

    ``workloads``: the roles' WorkloadPlans; ``router``: the RouterPlan or None; ``gateway``:
    the GatewayPlan or None.
    """
    if not spec.spec.network.networkPolicy:
        return []
    mon = spec.spec.monitoring
    scrape = _namespace(mon.scrapeNamespace) if mon is not None and mon.enabled else None
    engines = {"matchLabels": {L_INSTANCE: base},
               "matchExpressions": [{"key": L_MODE, "operator": "Exists"}]}
    api = api_ports(workloads)
    rules: list[dict[str, Any]] = [{"from": [{"podSelector": engines}]}]
    gateway_peer = None
    if gateway is not None:
        ref = spec.spec.router.gateway.parentRef
        gateway_peer = _namespace(ref.namespace) if ref.namespace else {"podSelector": {}}
    if router is not None:
        rules.append({"from": [{"podSelector": {"matchLabels": dict(router.selector)}}],
                      "ports": _ports(api)})
    if gateway is not None:
        rules.append({"from": [{"podSelector": {"matchLabels": dict(gateway.selector)}}],
                      "ports": _ports(api)})
        rules.append({"from": [gateway_peer], "ports": _ports(
            t["number"] for t in gateway.pool_spec["targetPorts"])})
    if scrape is not None:
        http = {p["containerPort"] for w in workloads for pod in (w.leader, w.worker)
                if pod is not None for p in pod.spec.ports if p["name"] == "http"}
        rules.append({"from": [scrape], "ports": _ports(http)})
    out = [NetworkPolicyPlan(f"{base}-engines", "networkpolicy-engines.yaml", dict(labels),
                             {"podSelector": engines, "policyTypes": ["Ingress"],
                              "ingress": rules})]
    if router is not None:
        rrules: list[dict[str, Any]] = [{"ports": _ports([router.port])}]
        if scrape is not None:
            rrules.append({"from": [scrape], "ports": _ports([router.metrics_port])})
        out.append(NetworkPolicyPlan(
            f"{router.name}", "networkpolicy-router.yaml",
            {**labels, L_COMPONENT: "router", L_ROLE: "router"},
            {"podSelector": {"matchLabels": dict(router.selector)}, "policyTypes": ["Ingress"],
             "ingress": rrules}))
    if gateway is not None:
        grules: list[dict[str, Any]] = [{"from": [gateway_peer],
                                         "ports": _ports([gw.EPP_GRPC_PORT])}]
        if scrape is not None:
            grules.append({"from": [scrape], "ports": _ports([gw.EPP_METRICS_PORT])})
        out.append(NetworkPolicyPlan(
            gateway.epp, "networkpolicy-epp.yaml", dict(gateway.epp_labels),
            {"podSelector": {"matchLabels": dict(gateway.selector)}, "policyTypes": ["Ingress"],
             "ingress": grules}))
    return out
