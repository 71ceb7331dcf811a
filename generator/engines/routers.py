"""The prefill/decode routers in front of the engines: image, command and arguments.

* vLLM: ``vllm-router`` (vllm-project/router, pinned 0.1.17). Flags from its RouterArgs
  (py_src/vllm_router/router_args.py, 0.1.17): ``--vllm-pd-disaggregation``, ``--prefill URL
  [BOOTSTRAP_PORT]``, ``--decode URL``, ``--kv-connector {nixl,mooncake,moriio}``, ``--policy``,
  ``--host`` (default 127.0.0.1: must be 0.0.0.0 in a pod), ``--port``,
  ``--prometheus-host/--prometheus-port`` (29000), ``--worker-startup-timeout-secs`` (600).
* SGLang: ``smg`` (Shepherd Model Gateway, successor of sglang-router; smg 1.13.0
  py_src/smg/router_args.py), started as ``smg launch`` (its console script needs the
  subcommand, py_src/smg/cli.py): ``--pd-disaggregation``, ``--prefill URL BOOTSTRAP_PORT``,
  ``--decode URL``, ``--worker-startup-timeout-secs`` (1800).

Both routers bind their port only once the workers answer their health checks: moegen passes
the engines' startup budget as ``--worker-startup-timeout-secs``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import sglang, vllm

#: The vLLM PD router image, pinned.
VLLM_ROUTER_IMAGE = "vllm/vllm-router:v0.1.17"
#: SGLang's PD router image (smg), pinned.
SGLANG_ROUTER_IMAGE = "lightseekorg/smg:v1.13.0"
#: ``--prometheus-port``: both routers' default metrics port.
ROUTER_METRICS_PORT = 29000
#: kvTransfer.connector -> vllm-router ``--kv-connector`` (its choices: nixl, mooncake, moriio).
VLLM_ROUTER_CONNECTORS = {"nixl": "nixl", "mooncake": "mooncake"}


@dataclass(frozen=True)
class RouterLaunch:
    """How to start the router container: image, command, arguments, metrics port."""

    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    metrics_port: int = ROUTER_METRICS_PORT


def router_launch(engine: str, *, port: int, policy: str, connector: str,
                  prefill_urls: list[str], decode_urls: list[str], startup_s: int,
                  image: str | None = None) -> RouterLaunch:
    """The router of a PD deployment of ``engine`` (``connector``: the prefill roles'
    kvTransfer.connector; ``startup_s``: how long the engines may take to become healthy)."""
    common = ["--host", "0.0.0.0", "--port", str(port), "--policy", policy]
    metrics = ["--prometheus-host", "0.0.0.0", "--prometheus-port", str(ROUTER_METRICS_PORT)]
    wait = ["--worker-startup-timeout-secs", str(startup_s)]
    if engine == "sglang":
        args = ["--pd-disaggregation", *common, *wait]
        for url in prefill_urls:
            args += ["--prefill", url, str(sglang.BOOTSTRAP_PORT)]
        for url in decode_urls:
            args += ["--decode", url]
        return RouterLaunch(image or SGLANG_ROUTER_IMAGE, ("smg", "launch"), tuple(args + metrics))
    args = ["--vllm-pd-disaggregation", *common, "--kv-connector",
            VLLM_ROUTER_CONNECTORS[connector], *wait]
    for url in prefill_urls:
        args += ["--prefill", url]
        if connector == "mooncake":
            args.append(str(vllm.MOONCAKE_BOOTSTRAP_PORT))
    for url in decode_urls:
        args += ["--decode", url]
    return RouterLaunch(image or VLLM_ROUTER_IMAGE, ("vllm-router",), tuple(args + metrics))
