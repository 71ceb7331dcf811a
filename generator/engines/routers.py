"""The prefill/decode routers in front of the engines: image, command and arguments.

Releases: ``router.version`` selects one of the releases in router-releases.json (vllm-router
0.1.15-0.1.17, smg 1.9.0-1.13.0, extracted from each release's router_args.py by
tools/extract_routers.py); unset, the newest. tests/test_gateway.py checks every option
rendered here against each release's parser.

* vLLM: ``vllm-router`` (vllm-project/router). Flags from its RouterArgs
  (py_src/vllm_router/router_args.py, 0.1.17): ``--vllm-pd-disaggregation``, ``--prefill URL
  [BOOTSTRAP_PORT]``, ``--decode URL``, ``--kv-connector {nixl,mooncake,moriio}``, ``--policy``,
  ``--host`` (default 127.0.0.1: must be 0.0.0.0 in a pod), ``--port``,
  ``--prometheus-host/--prometheus-port`` (29000), ``--worker-startup-timeout-secs`` (600).
* SGLang: ``smg`` (Shepherd Model Gateway, successor of sglang-router; smg 1.13.0
  py_src/smg/router_args.py), started as ``smg launch`` (its console script needs the
  subcommand, py_src/smg/cli.py): ``--pd-disaggregation``, ``--prefill URL BOOTSTRAP_PORT``,
  ``--decode URL``, ``--worker-startup-timeout-secs`` (1800), ``--health-check-timeout-secs``
  (default 5, below SGLang's generating ``/health``: :data:`SMG_HEALTH_MARGIN_S`),
  ``--shutdown-grace-period-secs`` (default 180; moegen renders the pod's drain).

Both routers bind their port only once the workers answer their health checks: moegen passes
the engines' startup budget as ``--worker-startup-timeout-secs``.

``spec.router.kind`` (docs/routing.md) picks one of three: the engine's own router as a
Deployment (the default), or ``inference-gateway`` (engines/gateway.py). A router of the other
engine is refused (rule RTR003), decided from the routers' sources:

* smg in front of vLLM: smg's parser takes ``--pd-disaggregation --prefill URL --decode URL``
  for any worker, but smg's vLLM prefill/decode flow runs over gRPC only (vLLM workers started
  as ``vllm.entrypoints.grpc_server``, ``grpc://`` URLs and ``--model-path``: lightseekorg/smg
  docs/getting-started/pd-disaggregation.md, "vLLM vs SGLang PD at a Glance"); moegen's vLLM
  pods serve HTTP (``vllm serve``), where smg sends SGLang's bootstrap protocol.
* vllm-router in front of SGLang: vllm-router 0.1.17 has no SGLang mode (its only PD flag is
  ``--vllm-pd-disaggregation``, ``--kv-connector {nixl,mooncake,moriio}``: prefill first, then
  decode with the ``kv_transfer_params`` vLLM returns; py_src/vllm_router/router_args.py), while
  SGLang pairs prefill and decode by a bootstrap room sent to both at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import sglang, vllm
from .router_releases import COMPONENT, RouterRelease, resolve

#: The routers' image repositories; the tag is the selected release's (``router.version``,
#: default the newest in router-releases.json): vllm-project/router README "Container Images"
#: (docker/Dockerfile.router, published as vllm/vllm-router); lightseekorg/smg
#: .github/workflows/_build-engine-image.yml at v1.9.0 and Docker Hub lightseekorg/smg.
ROUTER_IMAGE_REPOSITORY = {"vllm-router": "vllm/vllm-router", "smg": "lightseekorg/smg"}
#: How each router's image tag spells a release: smg tags its images with the bare version
#: (lightseekorg/smg@v1.9.0:.github/workflows/release-docker.yml:109
#: ``IMAGE="lightseekorg/smg:${VERSION}"``, VERSION from bindings/python/pyproject.toml; the
#: Helm chart's ``repository:AppVersion``, deploy/helm/smg/templates/_helpers.tpl:55);
#: vllm-router's as its git tags (``v0.1.17``): its README "Container Images" names the
#: Dockerfile (docker/Dockerfile.router) but no tag scheme; no registry listing confirms it.
ROUTER_IMAGE_TAG_PREFIX = {"vllm-router": "v", "smg": ""}
#: ``--prometheus-port``: both routers' default metrics port.
ROUTER_METRICS_PORT = 29000
#: The router kind each engine gets by default, and the engines each kind can route.
DEFAULT_KIND = {"vllm": "vllm-router", "sglang": "smg"}
KIND_ENGINES = {"vllm-router": ("vllm",), "smg": ("sglang",),
                "inference-gateway": ("vllm", "sglang")}
#: The kind that renders the Gateway API Inference Extension objects instead of a Deployment.
GATEWAY_KIND = "inference-gateway"
#: kvTransfer.connector -> vllm-router ``--kv-connector`` (its choices: nixl, mooncake, moriio).
VLLM_ROUTER_CONNECTORS = {"nixl": "nixl", "mooncake": "mooncake"}
#: How long each router keeps an idle upstream connection pooled, s: vllm-router builds its
#: reqwest client with ``pool_idle_timeout(50 s)``, fixed (vllm-project/router src/server.rs at
#: e17f94e); smg 1.13.0 ``--upstream-pool-idle-timeout-secs`` defaults to 3, below the engines'
#: 5 s keep-alive, since smg-project/smg PR#2162 found the same 50 s pool resetting requests
#: (py_src/smg/router_args.py). An engine that closes idle connections first makes the router's
#: next request on one fail.
POOL_IDLE_S = {"vllm-router": 50, "smg": 3}


#: Pod annotations the routers read a prefill pod's bootstrap port from when they discover
#: pods (smg 1.13.0 service_discovery/kubernetes.rs; vllm-router 0.1.17 src/main.rs).
SMG_BOOTSTRAP_ANNOTATION = "sglang.ai/bootstrap-port"
#: The router container's namespace (downward API), for ``--service-discovery-namespace``:
#: Kubernetes expands ``$(POD_NAMESPACE)`` in args, so the manifest names no namespace.
NAMESPACE_ENV = "POD_NAMESPACE"


@dataclass(frozen=True)
class Discovery:
    """Label selectors of the API pods of each mode, and the port the routers dial on them."""

    prefill: dict[str, str]
    decode: dict[str, str]
    port: int


def router_kind(engine: str, kind: str | None) -> str:
    """``spec.router.kind``, or the engine's own router when it is unset."""
    return kind or DEFAULT_KIND[engine]


def rendered_router(spec) -> str | None:
    """What the deployment renders in front of its engines (``spec``: a DeploymentSpec):
    ``"deployment"`` (vllm-router or smg, for prefill/decode roles), ``"gateway"`` (kind
    inference-gateway, any roles), or None (router disabled, or no prefill/decode pair)."""
    r = spec.router
    if not r.enabled:
        return None
    if router_kind(spec.engine.name, r.kind) == GATEWAY_KIND:
        return "gateway"
    modes = {role.mode for role in spec.roles}
    return "deployment" if {"prefill", "decode"} <= modes else None


def discovery_supported(engine: str, connector: str) -> bool:
    """The router can discover its engines: smg always; vllm-router with NIXL (its Mooncake
    mode reads each prefill's engine id once at start, for the static list only:
    src/routers/vllm_pd_router.rs, 0.1.17)."""
    return engine == "sglang" or connector == "nixl"


def _selector(labels: dict[str, str]) -> list[str]:
    return [f"{k}={v}" for k, v in sorted(labels.items())]


@dataclass(frozen=True)
class RouterLaunch:
    """How to start the router container: image, command, arguments, metrics port."""

    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    metrics_port: int = ROUTER_METRICS_PORT
    #: The release the arguments were written for (every option is one of its parser's).
    release: RouterRelease | None = None


#: smg's health check of a worker must outlast SGLang's ``/health``, which runs a one-token
#: generation and may take up to SGLANG_HEALTH_CHECK_TIMEOUT (engines/sglang.py
#: HEALTH_CHECK_TIMEOUT_S, 20 s) under load; smg's default 5 s (router_args.py
#: ``--health-check-timeout-secs``) marks busy workers unhealthy and drops them.
SMG_HEALTH_MARGIN_S = 5


#: Router replicas when ``router.replicas`` is unset: the router is the deployment's single
#: entry point, so two behind a PodDisruptionBudget (maxUnavailable 1) keep it serving through
#: a node drain or a rollout (Kubernetes "Specifying a Disruption Budget").
ROUTER_REPLICAS = 2
def router_release(engine: str, kind: str | None, version: str | None) -> RouterRelease:
    """The vllm-router or smg release a deployment renders (``router.version``; default the
    newest known; RTR010 refuses unknown ones before rendering)."""
    k = router_kind(engine, kind)
    return RouterRelease(COMPONENT[k], resolve(k, version))


def router_launch(engine: str, *, port: int, policy: str, connector: str,
                  prefill_urls: list[str], decode_urls: list[str], startup_s: int,
                  image: str | None = None, discovery: Discovery | None = None,
                  version: str | None = None, drain_s: int | None = None,
                  request_timeout_s: int = 1800) -> RouterLaunch:
    """The router of a PD deployment of ``engine`` (``connector``: the prefill roles'
    kvTransfer.connector; ``startup_s``: how long the engines may take to become healthy;
    ``version``: the router release, default the newest; ``drain_s``: how long the router
    waits for in-flight requests on SIGTERM where it has the option, smg
    ``--shutdown-grace-period-secs``; ``request_timeout_s``: how long one request may take,
    ``--request-timeout-secs`` of both routers, default 1800; generator/durations.py derives
    the drain from the mean request and the timeout from the longest).

    With ``discovery`` the router watches the pods of its namespace (``--service-discovery``,
    smg 1.13.0 / vllm-router 0.1.17: a pod joins when Ready and leaves when it is not) and the
    URL lists are not rendered: a new replica needs no re-render. smg then runs in its IGW mode,
    where requests name their ``model`` (OpenAI-style requests do).
    """
    common = ["--host", "0.0.0.0", "--port", str(port), "--policy", policy]
    metrics = ["--prometheus-host", "0.0.0.0", "--prometheus-port", str(ROUTER_METRICS_PORT)]
    wait = ["--worker-startup-timeout-secs", str(startup_s),
            "--request-timeout-secs", str(request_timeout_s)]
    found = []
    if discovery is not None:
        found = ["--service-discovery", "--service-discovery-namespace", f"$({NAMESPACE_ENV})",
                 "--service-discovery-port", str(discovery.port),
                 "--prefill-selector", *_selector(discovery.prefill),
                 "--decode-selector", *_selector(discovery.decode)]
        prefill_urls = decode_urls = []
    release = router_release(engine, None, version)
    tag = (f"{ROUTER_IMAGE_REPOSITORY[release.component]}:"
           f"{ROUTER_IMAGE_TAG_PREFIX[release.component]}{release.version}")
    if engine == "sglang":
        health = ["--health-check-timeout-secs",
                  str(sglang.HEALTH_CHECK_TIMEOUT_S + SMG_HEALTH_MARGIN_S)]
        drain = ["--shutdown-grace-period-secs", str(drain_s)] if drain_s else []
        args = ["--pd-disaggregation", *common, *wait, *health, *drain, *found]
        for url in prefill_urls:
            args += ["--prefill", url, str(sglang.BOOTSTRAP_PORT)]
        for url in decode_urls:
            args += ["--decode", url]
        return RouterLaunch(image or tag, ("smg", "launch"), tuple(args + metrics),
                            release=release)
    args = ["--vllm-pd-disaggregation", *common, "--kv-connector",
            VLLM_ROUTER_CONNECTORS[connector], *wait, *found]
    for url in prefill_urls:
        args += ["--prefill", url]
        if connector == "mooncake":
            args.append(str(vllm.MOONCAKE_BOOTSTRAP_PORT))
    for url in decode_urls:
        args += ["--decode", url]
    return RouterLaunch(image or tag, ("vllm-router",), tuple(args + metrics), release=release)
