"""Rules about the router kind (docs/routing.md): which router routes which engine, and what
``inference-gateway`` needs (a Gateway, a decode sidecar protocol, one set of pool ports)."""

from __future__ import annotations

from ..engines import router_releases as rr
from ..engines.gateway import (SIDECAR_ENGINE_PORT, engine_api_ports, has_sidecar, rank_blocker,
                               release_for, sidecar_connector, sglang_metrics_unreadable)
from ..engines.routers import (DEFAULT_KIND, GATEWAY_KIND, KIND_ENGINES, rendered_router,
                               router_kind)
from ..layout import Spread
from ..naming import client_service
from .pod import _image_tag, _release
from .registry import Context, E, Hit, W, role_path, rule, serving_path

#: Why a router kind cannot route an engine's prefill/decode pairs (engines/routers.py).
_WHY_NOT = {
    ("smg", "vllm"): "smg routes vLLM prefill/decode pairs over gRPC only (workers started as "
                     "vllm.entrypoints.grpc_server, grpc:// URLs); moegen's vLLM pods serve "
                     "HTTP, where smg speaks SGLang's bootstrap protocol",
    ("vllm-router", "sglang"): "vllm-router speaks only vLLM's prefill/decode protocol "
                               "(--vllm-pd-disaggregation: decode reads the kv_transfer_params "
                               "prefill returns); SGLang pairs prefill and decode by a "
                               "bootstrap room sent to both",
}


def _gateway(ctx: Context) -> bool:
    r = ctx.spec.spec.router
    return r.enabled and router_kind(ctx.engine, r.kind) == GATEWAY_KIND


def _pool_roles(ctx: Context):
    """(index, role) of the roles an InferencePool selects (none without the gateway)."""
    return ctx.role_items() if _gateway(ctx) else iter(())


@rule("RTR001", E, "kind inference-gateway names the Gateway that routes to it",
      "docs/routing.md; Gateway API HTTPRoute spec.parentRefs "
      "(kubernetes-sigs/gateway-api@v1.6.1:apis/v1/httproute_types.go): the route attaches to an "
      "existing Gateway")
def _parent_ref(ctx: Context):
    r = ctx.spec.spec.router
    if _gateway(ctx) and (r.gateway is None or r.gateway.parentRef is None):
        yield Hit(("spec", "router", "gateway", "parentRef"),
                  "router kind inference-gateway renders an HTTPRoute but names no Gateway for "
                  "it to attach to",
                  "set router.gateway.parentRef: {name: <your Gateway>, namespace: <its "
                  "namespace>}")


@rule("RTR002", E, "router.gateway is given only with kind inference-gateway",
      "docs/routing.md: vllm-router and smg are Deployments with a Service; only "
      "inference-gateway attaches to a Gateway")
def _gateway_other_kind(ctx: Context):
    r = ctx.spec.spec.router
    if r.gateway is None:
        return
    kind = router_kind(ctx.engine, r.kind)
    if kind != GATEWAY_KIND:
        default = "" if r.kind else f" (the default for {ctx.engine})"
        yield Hit(("spec", "router", "gateway"),
                  f"router.gateway is set but the router kind is {kind}{default}: it would be "
                  "ignored", "set router.kind: inference-gateway, or remove router.gateway")


@rule("RTR003", E, "the router kind routes the engine",
      "smg: https://github.com/lightseekorg/smg/blob/main/docs/getting-started/"
      "pd-disaggregation.md (vLLM PD over gRPC only); "
      "vllm-router 0.1.17 py_src/vllm_router/router_args.py (--vllm-pd-disaggregation only); "
      "generator/engines/routers.py")
def _kind_engine(ctx: Context):
    r = ctx.spec.spec.router
    if not r.enabled or r.kind is None or ctx.engine in KIND_ENGINES[r.kind]:
        return
    yield Hit(("spec", "router", "kind"),
              f"router kind {r.kind} cannot route {ctx.engine} prefill/decode pairs: "
              f"{_WHY_NOT[(r.kind, ctx.engine)]}",
              f"use kind: {DEFAULT_KIND[ctx.engine]} (the default for {ctx.engine}) or "
              "inference-gateway")


@rule("RTR004", E, "inference-gateway has a decode sidecar protocol for the KV connector",
      "llm-d/llm-d-inference-scheduler@10df70b:cmd/pd-sidecar/main.go (--connector: nixlv2, "
      "lmcache, sglang); generator/engines/gateway.py")
def _sidecar_protocol(ctx: Context):
    if not _gateway(ctx):
        return
    modes = {r.mode for r in ctx.spec.spec.roles}
    if not {"prefill", "decode"} <= modes:
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        kvt = role.kvTransfer
        # LMCache pairs are refused for every router kind (PD006).
        if role.mode != "prefill" or kvt is None or kvt.connector == "lmcache":
            continue
        if sidecar_connector(ctx.engine, kvt.connector) is None:
            yield Hit(role_path(i, "kvTransfer", "connector"),
                      f"the inference gateway's decode sidecar (llm-d routing sidecar) has no "
                      f"protocol for {ctx.engine} with {kvt.connector} (it speaks nixlv2, "
                      "lmcache and sglang)",
                      "use connector: nixl, or router kind vllm-router")


@rule("RTR005", E, "the InferencePool's pods serve the API on one port",
      "InferencePool spec.targetPorts apply to every selected pod "
      "(kubernetes-sigs/gateway-api-inference-extension@v1.6.0:api/v1/inferencepool_types.go: "
      "each port is an endpoint podIP:port)")
def _one_port(ctx: Context):
    first: tuple[int, str] | None = None
    for i, r in _pool_roles(ctx):
        if first is None:
            first = (r.serving.port, r.name)
        elif r.serving.port != first[0]:
            yield Hit(serving_path(ctx, i, "port"),
                      f"role {r.name!r} serves on port {r.serving.port} but role {first[1]!r} "
                      f"on {first[0]}: the InferencePool would send requests to ports a pod "
                      "does not serve", "give every role the same serving.port")


@rule("RTR006", E, "the InferencePool's target ports fit its CRD",
      "kubernetes-sigs/gateway-api-inference-extension@v1.6.0:config/crd/bases/"
      "inference.networking.k8s.io_inferencepools.yaml:190 (targetPorts maxItems 8, read per "
      "release into generator/engines/data/router-releases.json; one port per local DP rank: "
      "kubernetes-sigs/gateway-api-inference-extension#1336)")
def _port_count(ctx: Context):
    if not _gateway(ctx) or not _known_release(ctx):
        return
    bound = release_for(ctx.spec.spec).pool_ports["maxItems"]
    for i, r in _pool_roles(ctx):
        ports = engine_api_ports(r)
        if len(ports) > bound:
            yield Hit(role_path(i, "parallel"),
                      f"role {r.name!r} serves {len(ports)} HTTP ports per pod (one per local "
                      f"DP rank); an InferencePool targets at most {bound}",
                      f"place at most {bound} DP ranks per pod (workload pod-per-rank), or "
                      "set router.gateway.rankEndpoints: false")


def _known_release(ctx: Context) -> bool:
    r = ctx.spec.spec.router
    kind = router_kind(ctx.engine, r.kind)
    return r.version is None or rr.normalise(r.version) in rr.known(rr.COMPONENT[kind])


@rule("RTR010", E, "router.version is a release moegen has read",
      "generator/engines/data/router-releases.json (tools/extract_routers.py reads each "
      "release's tagged source: llm-d-router, vllm-router, smg); docs/routing.md")
def _router_version(ctx: Context):
    r = ctx.spec.spec.router
    if r.version is None or (r.enabled is False) or ctx.engine not in DEFAULT_KIND:
        return
    kind = router_kind(ctx.engine, r.kind)
    if kind not in KIND_ENGINES or ctx.engine not in KIND_ENGINES[kind]:
        return   # RTR003
    if _known_release(ctx):
        return
    component = rr.COMPONENT[kind]
    known = rr.known(component)
    yield Hit(("spec", "router", "version"),
              f"router kind {kind} renders {component}, whose releases moegen has read are "
              f"{', '.join(known)}; {r.version} is not one of them (its plugins, flags and "
              "configuration schema are unknown)",
              f"set router.version to one of {', '.join(known)}, or leave it out for the "
              f"newest ({known[-1]})")


def _pool_layouts(ctx: Context):
    roles = [r for _, r in _pool_roles(ctx)]
    if not roles or any(r is None or r.layout.problem for r in ctx.roles):
        return None
    return [r.layout for r in roles]


@rule("RTR011", E, "rankEndpoints: true can serve one endpoint per DP rank",
      "vllm-project/vllm@v0.33.0:vllm/entrypoints/launchers/dp_supervisor.py (0.22.0+: "
      "--data-parallel-multi-port-external-lb, --data-parallel-size-local >= 2); InferencePool "
      "targetPorts apply to every selected pod (kubernetes-sigs/gateway-api-inference-extension"
      "@v1.5.0:api/v1/inferencepool_types.go); "
      "generator/engines/gateway.py rank_ports", engines=("vllm", "sglang"))
def _rank_endpoints(ctx: Context):
    gw = ctx.spec.spec.router.gateway
    if not _gateway(ctx) or gw is None or gw.rankEndpoints is not True or ctx.dialect is None:
        return
    layouts = _pool_layouts(ctx)
    if layouts is None:
        return
    why = rank_blocker(ctx.spec.spec, ctx.dialect.has, layouts)
    if why is not None:
        yield Hit(("spec", "router", "gateway", "rankEndpoints"),
                  f"one pool endpoint per DP rank is not possible: {why}",
                  "give every role the same 2-8 DP ranks per pod on vLLM >= 0.22.0, or drop "
                  "rankEndpoints")


@rule("RTR015", W, "a router asked for is rendered, or the spec is told why not",
      "generator/engines/routers.py rendered_router (vllm-router and smg are rendered for "
      "prefill/decode pairs); both also route a plain worker list, which moegen does not "
      "render: vllm-router 0.1.17 py_src/vllm_router/router_args.py:138 --worker-urls, smg "
      "1.13.0 py_src/smg/router_args.py:523 --worker-urls; docs/routing.md")
def _router_not_rendered(ctx: Context):
    spec = ctx.spec.spec
    r = spec.router
    if not r.enabled or not r.model_fields_set or rendered_router(spec) is not None:
        return
    kind = router_kind(ctx.engine, r.kind)
    modes = sorted({role.mode for role in spec.roles})
    apis = ", ".join(client_service(ctx.spec.metadata.name, role.name) for role in spec.roles
                     if role.mode == "unified")
    where = f"; clients reach each role's Service ({apis}), which spreads connections over " \
        "its pods, not requests by load or cache" if apis else ""
    yield Hit(("spec", "router"),
              f"router kind {kind} is rendered only in front of a prefill/decode pair, and the "
              f"roles are {'/'.join(modes)}: no router is rendered{where}",
              "router kind inference-gateway renders an InferencePool and its endpoint picker "
              "in front of unified roles (router.gateway.parentRef names the Gateway); or "
              "remove spec.router")


@rule("RTR012", W, "the endpoint picker sees every vLLM engine it routes to",
      "kubernetes-sigs/gateway-api-inference-extension#2950; getLatestMetric keeps one series per "
      "family (llm-d/llm-d-router@v0.10.0:pkg/epp/framework/plugins/datalayer/extractor/metrics/"
      "spec.go:103); vLLM labels its series per engine "
      "(vllm-project/vllm@v0.33.0:vllm/v1/metrics/loggers.py)",
      engines=("vllm",))
def _one_engine_scored(ctx: Context):
    if not _gateway(ctx) or ctx.engine != "vllm" or not _known_release(ctx):
        return
    release = release_for(ctx.spec.spec)
    selection = release.metrics_selection
    if not selection or selection["selection"] != "latest-timestamp":
        return
    for i, r in _pool_roles(ctx):
        if r is None or r.rank_ports > 1 or r.layout.spread is Spread.PER_RANK:
            continue
        if r.layout.data > 1:
            yield Hit(role_path(i, "parallel", "data"),
                      f"role {r.name!r} puts {r.layout.data} DP engines behind one API server "
                      "per instance; the endpoint picker keeps one series per metric and "
                      f"endpoint (the latest timestamp: llm-d-router {release.tag} "
                      f"{selection['source']}), so its queue "
                      "and KV-cache scorers see engine 0 only and keep sending traffic to a "
                      "busy instance",
                      "give every role of the pool the same 2-8 DP ranks per pod (one endpoint "
                      "per rank, vLLM >= 0.22.0: router.gateway.rankEndpoints), or workload "
                      "pod-per-rank")


@rule("RTR014", E, "the endpoint picker can read SGLang's metrics at router.version",
      "kubernetes-sigs/gateway-api-inference-extension@v1.4.0:pkg/epp/server/options.go:249 "
      "(the metric flags are refused at start: \"deprecated and cannot be used\") and "
      "kubernetes-sigs/gateway-api-inference-extension@v1.4.0:cmd/epp/runner/runner.go:319 "
      "(the legacy collector, vLLM's metric names, unless the "
      "dataLayer gate); llm-d-router 0.7.0 pins v1.4.0 (generator/engines/data/"
      "router-releases.json)", engines=("sglang",))
def _sglang_metrics_readable(ctx: Context):
    if not _gateway(ctx) or ctx.engine != "sglang" or not _known_release(ctx):
        return
    release = release_for(ctx.spec.spec)
    if sglang_metrics_unreadable(release):
        yield Hit(("spec", "router", "version"),
                  f"llm-d-router {release.tag} refuses the metric flags that name SGLang's series "
                  f"({release.refused('total-queued-requests-metric')}), and its default "
                  f"collector reads vLLM's names ({release.metrics_collector['source']}): the "
                  "picker would score every SGLang pod as idle",
                  "use router.version 0.6.0, or 0.8.0 or later (the metrics extractor reads "
                  "the engine from a pod label moegen renders)")


@rule("RTR013", E, "router.image is the release router.version renders for",
      "opendatahub-io/kserve#1445 (the routing sidecar's --connector -> --kv-connector rename "
      "had to follow the image tag); generator/engines/data/router-releases.json: flags, "
      "plugin types and the config group change between releases")
def _router_image_release(ctx: Context):
    r = ctx.spec.spec.router
    if not r.enabled or r.image is None or ctx.engine not in DEFAULT_KIND:
        return
    kind = router_kind(ctx.engine, r.kind)
    if kind not in rr.COMPONENT or not _known_release(ctx):
        return
    tag = _release(_image_tag(r.image))
    selected = rr.resolve(kind, r.version)
    if tag and tag != selected:
        what = "the endpoint picker's" if kind == GATEWAY_KIND else f"{kind}'s"
        yield Hit(("spec", "router", "image"),
                  f"router.image tag {_image_tag(r.image)!r} is {rr.COMPONENT[kind]} {tag}, but "
                  f"{what} arguments{' and configuration' if kind == GATEWAY_KIND else ''} are "
                  f"rendered for {selected}"
                  + ("" if r.version else " (the newest known: router.version is unset)"),
                  f"set router.version: \"{tag}\" (releases: {', '.join(rr.known(rr.COMPONENT[kind]))}), "
                  f"or use the {selected} image")


@rule("RTR020", W, "with hostNetwork, the engine behind the routing sidecar listens beyond the pod",
      "llm-d/llm-d-router@v0.10.0:pkg/sidecar/proxy/options.go:399 (the sidecar dials its "
      "engine at localhost) and llm-d/llm-d-router@v0.10.0:pkg/sidecar/proxy/proxy_helpers.go:33 "
      "(it listens on every interface); the kubelet's probes and the PodMonitor reach the engine at the pod IP "
      "(https://kubernetes.io/docs/concepts/workloads/pods/#pod-networking); "
      "generator/manifests/addresses.py")
def _sidecar_bind(ctx: Context):
    net = ctx.spec.spec.network
    if not (net.hostNetwork and net.bindAddress == "podIP"):
        return
    for i, r in ctx.role_items():
        if has_sidecar(ctx.spec.spec, r.mode):
            yield Hit(("spec", "network", "bindAddress"),
                      f"role {r.name!r}: bindAddress podIP cannot hold behind the routing "
                      "sidecar, which dials its engine at localhost while the kubelet's probes "
                      "and the PodMonitor dial the pod IP: moegen binds that engine "
                      f"(port {SIDECAR_ENGINE_PORT}) on every interface, and with hostNetwork "
                      "those are the node's (the sidecar on port "
                      f"{r.serving.port} listens on all of them anyway)",
                      f"firewall ports {r.serving.port} and {SIDECAR_ENGINE_PORT} on the decode "
                      "nodes to the Gateway and Prometheus, or run the pool without hostNetwork")
            return
