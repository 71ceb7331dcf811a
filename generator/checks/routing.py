"""Rules about the router kind (docs/routing.md): which router routes which engine, and what
``inference-gateway`` needs (a Gateway, a decode sidecar protocol, one set of pool ports)."""

from __future__ import annotations

from ..engines.gateway import MAX_TARGET_PORTS, engine_api_ports, sidecar_connector
from ..engines.routers import DEFAULT_KIND, GATEWAY_KIND, KIND_ENGINES, router_kind
from .registry import Context, E, Hit, role_path, rule, serving_path

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
      "kubernetes-sigs/gateway-api-inference-extension@v1.6.0:config/crd/bases/inference.networking.k8s.io_inferencepools.yaml:190 "
      "(targetPorts maxItems 8; one port per local DP rank: "
      "kubernetes-sigs/gateway-api-inference-extension#1336)")
def _port_count(ctx: Context):
    for i, r in _pool_roles(ctx):
        ports = engine_api_ports(r)
        if len(ports) > MAX_TARGET_PORTS:
            yield Hit(role_path(i, "parallel"),
                      f"role {r.name!r} serves {len(ports)} HTTP ports per pod (one per local "
                      f"DP rank); an InferencePool targets at most {MAX_TARGET_PORTS}",
                      f"place at most {MAX_TARGET_PORTS} DP ranks per pod (workload "
                      "pod-per-rank), or use router kind vllm-router/smg")
