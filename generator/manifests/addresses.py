"""The address model: every connection the rendered deployment makes, against the address and
port its peer listens on (issue 34; docs/design.md §12).

Computed from the deployment plan (the engines' argv, the pod templates' env, ports and probes,
the sidecar's arguments, the router's URLs, the pool, Services and monitors), never from the
rendered files, and per target through its :class:`AddressForm`: how the target hands the engine
its arguments and which connections its controller makes instead of moegen's.

A :class:`Listener` is a process bound to a port of a pod: on every interface, the pod's IP or
loopback (or an address that never resolves: a placeholder the target does not expand). A
:class:`Dial` is a client connecting to a pod's port at the pod's IP (a Service, a pod name, a
discovered or advertised address, the kubelet, Prometheus) or at ``localhost`` (from the same
pod). :meth:`AddressModel.mismatches`: the dials no listener accepts; NET100 (pipeline) errors.

Facts (each at the release moegen renders):

* vLLM's API binds ``--host`` (default ``None``: every interface, vllm-project/vllm@v0.33.0:
  vllm/entrypoints/common/cli_args.py); its DP supervisor binds ``--host`` or every interface
  and dials its per-rank servers at ``--host`` (``127.0.0.1`` for a wildcard) (vLLM 0.33.0
  vllm/entrypoints/launchers/dp_supervisor.py _child_base_url, _start_server); the DP
  handshake binds ``--data-parallel-address`` on the DP-rank-0 pod (vLLM 0.33.0
  vllm/v1/engine/utils.py handshake_address); the NIXL side channel binds
  ``VLLM_NIXL_SIDE_CHANNEL_HOST`` (default ``localhost``, vLLM 0.33.0 vllm/envs.py) and is
  advertised to decode at that host; the Mooncake bootstrap server binds ``0.0.0.0``
  (vLLM 0.33.0 vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py
  MooncakeBootstrapServer).
* SGLang's API binds ``--host`` (default ``127.0.0.1``: SGLang 0.5.23
  python/sglang/srt/arg_groups/fields/serving.py), nodes ``>= 1`` their health/metrics server
  there too (python/sglang/srt/entrypoints/engine.py launch_dummy_health_check_server); the
  prefill's bootstrap server binds ``--host`` on ``--disaggregation-bootstrap-port`` (default
  8998; python/sglang/srt/managers/disagg_service.py), where the other nodes of the instance
  register at the ``--dist-init-addr`` host (python/sglang/srt/disaggregation/common/conn.py
  register_to_bootstrap).
* torch.distributed's TCPStore master (SGLang ``--dist-init-addr``, vLLM ``--master-port``)
  listens on every address (PyTorch 2.13.0 torch/csrc/distributed/c10d/socket.cpp
  SocketListenOp::tryListen: getaddrinfo(nullptr, port, AI_PASSIVE)).
* The routing sidecar listens on ``--port`` (+ rank) on every interface and dials its engine at
  ``localhost:--model-server-port`` (+ rank) (llm-d/llm-d-router@v0.10.0:
  pkg/sidecar/proxy/proxy_helpers.go:33, options.go:399, data_parallel.go:57,68), the prefill at
  the address the picker names, SGLang's bootstrap at ``SGLANG_BOOTSTRAP_PORT`` (default 8998:
  llm-d/llm-d-routing-sidecar internal/proxy/connector_sglang.go).
* vllm-router and smg bind ``--host 0.0.0.0`` (engines/routers.py); the endpoint picker's Go
  servers every interface (kubernetes-sigs/gateway-api-inference-extension cmd/epp/runner).
* The Ray head of a ``parallel.executor: ray`` instance listens on its GCS port (6379) at the
  leader's IP (``ray start --head --node-ip-address``), where the other pods' ``ray start
  --address`` dial it (https://docs.ray.io/en/latest/cluster/cli.html#ray-start).
* The kubelet's probes, Services and Prometheus's scrapes reach a pod at its IP
  (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#Probe:
  httpGet host "defaults to the pod IP"); with ``hostNetwork`` that is the node's IP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..engines import sglang as sg
from ..engines.base import LEADER_IP, POD_IP
from ..naming import L_MODE, LWS_WORKER_INDEX_LABEL, lws_pod, statefulset_pod
from .plan import DeploymentPlan
from .pods import LEADER_HOST_ENV

#: Where a listener accepts connections.
ALL, POD_ADDR, LOOPBACK = "every interface", "the pod IP", "loopback"
#: How a client addresses its peer.
VIA_POD, VIA_LOCALHOST = "the pod IP", "localhost"

#: Connection kinds (a target's controller may make some of them instead of moegen).
ROUTER, SIDECAR, POOL, KV, RANKS, PROBE, SCRAPE, SERVICE = (
    "router", "sidecar", "pool", "kv", "ranks", "probe", "scrape", "service")
KINDS = (ROUTER, SIDECAR, POOL, KV, RANKS, PROBE, SCRAPE, SERVICE)


@dataclass(frozen=True)
class AddressForm:
    """How a target renders what the address model reads (each target's ``address_form``).

    Attributes:
        name: the target.
        expands: how the engine's arguments reach it: ``shell`` (a launcher script or the
            presets' ``eval`` expands ``${VAR}``) or ``kubelet`` (the container's args as given:
            only ``$(VAR)`` of a variable the container defines is expanded, Kubernetes
            "Define a Command and Arguments for a Container").
        placeholders: how the target writes each placeholder (``${MOEGEN_POD_IP}`` ->
            ``$(MOEGEN_POD_IP)``); a placeholder not listed is written as it is.
        env_dropped: pod-template variables the target leaves out (its controller's own).
        owned: connection kinds the target's controller makes instead of moegen's (not checked:
            what the controller renders is its own).
        leader_vars: variables the controller injects that name the leader's address.
        leader_address: the leader's name as the target writes it (None: the plan's
            ``MOEGEN_LEADER_HOST``).
        fronted: role modes whose engine the controller's own routing sidecar fronts (it dials
            the engine's ``--port`` at localhost).
        dropped: (mode, option) pairs the target leaves out of those roles' engine arguments.
    """

    name: str
    expands: str = "shell"
    placeholders: tuple[tuple[str, str], ...] = ()
    env_dropped: frozenset[str] = frozenset()
    owned: frozenset[str] = frozenset()
    leader_vars: frozenset[str] = frozenset({"LWS_LEADER_ADDRESS"})
    leader_address: str | None = None
    fronted: frozenset[str] = frozenset()
    dropped: tuple[tuple[str, str], ...] = ()

    def written(self, arg: str) -> str:
        """``arg`` as the target writes it into the container."""
        for placeholder, form in self.placeholders:
            arg = arg.replace(placeholder, form)
        return arg

    def kept(self, env: str) -> bool:
        """The pod template keeps variable ``env``."""
        return env not in self.env_dropped

    def argv(self, rp, pod: int) -> list[str]:
        """Role ``rp``'s engine arguments on pod ``pod`` as the target passes them."""
        argv = rp.launch.argv(pod)
        for mode, option in self.dropped:
            if rp.mode == mode and option in argv:
                i = argv.index(option)
                argv = argv[:i] + argv[i + 2:]
        return argv


#: The kubernetes target (LWS injects LWS_LEADER_ADDRESS: kubernetes-sigs/lws@v0.10.0:
#: pkg/utils/pod/pod_utils.go addEnvVarsIfNotExists).
KUBERNETES = AddressForm("kubernetes")


@dataclass(frozen=True)
class Listener:
    """A process listening on ``port`` of pod ``pod`` (``role/index`` or a component)."""

    pod: str
    port: int
    bind: str
    what: str


@dataclass(frozen=True)
class Dial:
    """A client connecting to ``port`` of pod ``pod`` at ``address`` (``VIA_POD``,
    ``VIA_LOCALHOST`` or a literal that never resolves); ``local``: from the same pod."""

    client: str
    pod: str
    port: int | None
    address: str
    what: str
    kind: str
    local: bool = False


@dataclass(frozen=True)
class AddressModel:
    """Every listener and dial of one rendering."""

    listeners: tuple[Listener, ...]
    dials: tuple[Dial, ...]

    def mismatches(self) -> list[tuple[Dial, tuple[Listener, ...]]]:
        """Each dial no listener accepts, with what listens on its pod."""
        out = []
        for d in self.dials:
            on_pod = tuple(x for x in self.listeners if x.pod == d.pod)
            if not any(x.port == d.port and accepts(x.bind, d) for x in on_pod):
                out.append((d, on_pod))
        return out


def accepts(bind: str, dial: Dial) -> bool:
    """A listener bound to ``bind`` accepts ``dial``."""
    if dial.address == VIA_LOCALHOST:
        return dial.local and bind in (ALL, LOOPBACK)
    if dial.address == VIA_POD:
        return bind in (ALL, POD_ADDR)
    return False


# -- the plan's pods -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Pod:
    key: str
    role: str
    index: int
    labels: dict
    annotations: dict
    spec: object
    sidecar: dict | None = None

    def container_port(self, name_or_number) -> int | None:
        """The number a container or probe port name resolves to on this pod."""
        if isinstance(name_or_number, int):
            return name_or_number
        ports = list(self.spec.ports) if self.spec is not None else []
        if self.sidecar is not None:
            ports += self.sidecar.get("ports", [])
        return next((p["containerPort"] for p in ports if p["name"] == name_or_number), None)


def _pods(plan: DeploymentPlan) -> list[_Pod]:
    """One entry per pod of one instance of every role (every instance is alike)."""
    out = []
    for w in plan.workloads:
        for i in range(w.size):
            tpl = w.leader if i == 0 or w.worker is None else w.worker
            labels = {**tpl.labels, **({LWS_WORKER_INDEX_LABEL: str(i)}
                                       if w.kind == "LeaderWorkerSet" else {})}
            sidecar = next((c for c in tpl.spec.init_containers
                            if c.get("name") == "routing-sidecar"), None)
            out.append(_Pod(f"{w.role}/{i}", w.role, i, labels, tpl.annotations, tpl.spec,
                            sidecar))
    return out


def _selects(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == val for k, val in selector.items())


def _flag(argv: list[str], name: str) -> str | None:
    """The value of ``name`` in ``argv`` (the last one given), or None."""
    values = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == name]
    for a in argv:
        if a.startswith(name + "="):
            values.append(a.split("=", 1)[1])
    return values[-1] if values else None


def _env_value(pod: _Pod, items: dict[str, str], name: str, form: AddressForm):
    """(kind, value) of variable ``name`` in ``pod``: ``("pod-ip", None)`` from the downward
    API, ``("value", text)`` from the template or the env file, ``(None, None)`` unset."""
    for e in pod.spec.env:
        if e["name"] == name and form.kept(name):
            ref = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            return ("pod-ip", None) if ref == "status.podIP" else ("value", e.get("value"))
    if name in items:
        return "value", items[name]
    return None, None


def _bind(value: str | None, default: str, pod: _Pod, form: AddressForm) -> str:
    """Where a process given ``value`` as its bind address listens on ``pod`` (``default``: the
    process's own default when the argument is absent)."""
    if value is None:
        return default
    written = form.written(value)
    if written in ("0.0.0.0", "::", ""):
        return ALL
    if written in ("127.0.0.1", "localhost", "::1"):
        return LOOPBACK
    ref = (re.fullmatch(r"\$\{(\w+)\}", written) if form.expands == "shell" else None) \
        or re.fullmatch(r"\$\((\w+)\)", written)
    if ref is not None and _env_value(pod, {}, ref.group(1), form)[0] == "pod-ip":
        return POD_ADDR
    return written   # an address that is not expanded: no client reaches it


# -- listeners -------------------------------------------------------------------------------------

def _engine_listeners(plan, pods: list[_Pod], form: AddressForm) -> list[Listener]:
    out, engine = [], plan.engine
    items = {e.role: dict(e.items) for e in plan.env_files}
    for rp in plan.roles:
        launch, env = rp.launch, items.get(rp.name, {})
        for pod in (p for p in pods if p.role == rp.name):
            i, argv = pod.index, form.argv(rp, pod.index)
            host = _flag(argv, "--host")
            api_bind = _bind(host, ALL if engine == "vllm" else LOOPBACK, pod, form)
            port = int(_flag(argv, "--port") or 8000)
            if launch.binds_http(i):
                for k in range(_ranks(argv)):
                    out.append(Listener(pod.key, port + k, api_bind, f"{rp.name} engine API"))
            sup = _flag(argv, "--data-parallel-supervisor-port")
            if sup is not None:
                out.append(Listener(pod.key, int(sup), api_bind if host else ALL,
                                    f"{rp.name} DP supervisor"))
            if engine == "sglang" and _flag(argv, "--disaggregation-mode") == "prefill" \
                    and i == 0:
                out.append(Listener(pod.key, int(_flag(argv, "--disaggregation-bootstrap-port")
                                                  or sg.BOOTSTRAP_PORT),
                                    api_bind, f"{rp.name} KV bootstrap server"))
            if RANKS not in form.owned:
                out += _rank_listeners(rp.name, pod, argv, form)
                if launch.ray_port is not None and i == 0:
                    out.append(Listener(pod.key, launch.ray_port, POD_ADDR,
                                        f"{rp.name} Ray head (GCS)"))
            out += _kv_listeners(rp, pod, env, form)
    return out


def _rank_listeners(role: str, pod: _Pod, argv: list[str], form: AddressForm):
    """The leader's rendezvous: TCPStore masters (SGLang dist-init, vLLM's torch master) on
    every interface, vLLM's DP handshake on ``--data-parallel-address``."""
    init, rpc = _flag(argv, "--dist-init-addr"), _flag(argv, "--data-parallel-rpc-port")
    rank0 = _flag(argv, "--node-rank") == "0"
    if init is not None and rank0:
        yield Listener(pod.key, int(init.rsplit(":", 1)[1]), ALL, f"{role} dist-init (TCPStore)")
    if rank0 and _flag(argv, "--master-port"):
        yield Listener(pod.key, int(_flag(argv, "--master-port")), ALL, f"{role} torch master")
    if rpc is not None and POD_IP in (_flag(argv, "--data-parallel-address") or ""):
        yield Listener(pod.key, int(rpc), _bind(_flag(argv, "--data-parallel-address"), ALL,
                                                pod, form), f"{role} DP handshake")


def _ranks(argv: list[str]) -> int:
    """API servers on consecutive ports of one pod (vLLM's DP supervisor: one per local rank)."""
    if "--data-parallel-multi-port-external-lb" in argv:
        return int(_flag(argv, "--data-parallel-size-local") or 1)
    return 1


def _side_channel(pod: _Pod, env: dict, form: AddressForm) -> str:
    """Where vLLM's NIXL side channel of ``pod`` binds (and what it advertises)."""
    kind, value = _env_value(pod, env, "VLLM_NIXL_SIDE_CHANNEL_HOST", form)
    if kind == "pod-ip":
        return POD_ADDR
    if kind is None and not form.kept("VLLM_NIXL_SIDE_CHANNEL_HOST"):
        return POD_ADDR   # the controller sets it to the pod IP (see the target's form)
    return _bind(value or "localhost", LOOPBACK, pod, form)


def _kv_listeners(rp, pod: _Pod, env: dict, form: AddressForm) -> list[Listener]:
    out = []
    for p in rp.launch.ports_of(pod.index):
        if p.name.startswith("nixl"):
            out.append(Listener(pod.key, p.port, _side_channel(pod, env, form),
                                f"{rp.name} NIXL side channel"))
        if p.name == "kv-bootstrap" and "VLLM_MOONCAKE_BOOTSTRAP_PORT" in env:
            out.append(Listener(pod.key, int(env["VLLM_MOONCAKE_BOOTSTRAP_PORT"]), ALL,
                                f"{rp.name} Mooncake bootstrap server"))
    return out


def _control_listeners(plan: DeploymentPlan, pods: list[_Pod]) -> list[Listener]:
    out = []
    for pod in pods:
        if pod.sidecar is not None:
            args = pod.sidecar["args"]
            port = int(_flag(args, "--port"))
            n = int(_flag(args, "--data-parallel-size") or 1)
            out += [Listener(pod.key, port + k, ALL, f"{pod.role} routing sidecar")
                    for k in range(n)]
    if plan.router is not None:
        out += [Listener("router", plan.router.port,
                         ALL if _flag(plan.router.args, "--host") == "0.0.0.0" else LOOPBACK,
                         "router"),
                Listener("router", plan.router.metrics_port,
                         ALL if _flag(plan.router.args, "--prometheus-host") == "0.0.0.0"
                         else LOOPBACK, "router metrics")]
    if plan.gateway is not None:
        out += [Listener("endpoint-picker", p["containerPort"], ALL, f"endpoint picker {p['name']}")
                for p in plan.gateway.ports]
    return out


# -- dials -----------------------------------------------------------------------------------------

def _probe_dials(plan: DeploymentPlan, pods: list[_Pod]) -> list[Dial]:
    """The kubelet's probes of every container (at the pod IP)."""
    out = []

    def port_of(probe: dict):
        for kind in ("httpGet", "tcpSocket", "grpc"):
            if kind in probe:
                return probe[kind]["port"]
        return None
    for pod in pods:
        for name, probe in sorted(pod.spec.probes.items()):
            out.append(Dial("kubelet", pod.key, pod.container_port(port_of(probe)), VIA_POD,
                            f"{name} of the {pod.role} engine", PROBE))
        if pod.sidecar is not None:
            for name in ("readinessProbe", "livenessProbe", "startupProbe"):
                if name in pod.sidecar:
                    out.append(Dial("kubelet", pod.key,
                                    pod.container_port(port_of(pod.sidecar[name])), VIA_POD,
                                    f"{name} of the {pod.role} routing sidecar", PROBE))
    if plan.router is not None:
        named = {"http": plan.router.port, "metrics": plan.router.metrics_port}
        out += [Dial("kubelet", "router", named.get(port_of(p), port_of(p)), VIA_POD,
                     f"{name} of the router", PROBE)
                for name, p in sorted(plan.router.probes.items())]
    if plan.gateway is not None:
        out += [Dial("kubelet", "endpoint-picker", port_of(p), VIA_POD,
                     f"{name} of the endpoint picker", PROBE)
                for name, p in sorted(plan.gateway.probes.items())]
    return out


def _service_dials(plan: DeploymentPlan, pods: list[_Pod]) -> list[Dial]:
    """Services (and the monitors that scrape through them, and the PodMonitor) to their pods."""
    out = []
    for svc in plan.services:
        for pod in (p for p in pods if _selects(svc.selector, p.labels)):
            out += [Dial(f"Service {svc.name}", pod.key, pod.container_port(sp["targetPort"]),
                         VIA_POD, f"port {sp['name']}", SERVICE) for sp in svc.ports]
    mon = plan.monitoring
    if mon is not None:
        selector = mon.pod_monitor["selector"]["matchLabels"]
        for pod in (p for p in pods if _selects(selector, p.labels)):
            out += [Dial("Prometheus (PodMonitor)", pod.key, pod.container_port(ep["port"]),
                         VIA_POD, f"{ep['path']} of the {pod.role} engine", SCRAPE)
                    for ep in mon.pod_monitor["podMetricsEndpoints"]]
    if plan.router is not None:
        out.append(Dial(f"Service {plan.router.name}", "router", plan.router.port, VIA_POD,
                        "port http", SERVICE))
        if mon is not None and mon.service_monitor is not None:
            out.append(Dial("Prometheus (ServiceMonitor)", "router", plan.router.metrics_port,
                            VIA_POD, "/metrics of the router", SCRAPE))
    if plan.gateway is not None:
        named = {p["name"]: p["containerPort"] for p in plan.gateway.ports}
        by_service = {sp["name"]: named.get(sp["targetPort"])
                      for sp in plan.gateway.service_ports}
        out += [Dial(f"Service {plan.gateway.epp}", "endpoint-picker",
                     named.get(sp["targetPort"]), VIA_POD, f"port {sp['name']}", SERVICE)
                for sp in plan.gateway.service_ports]
        if mon is not None and mon.epp_monitor is not None:
            out += [Dial("Prometheus (ServiceMonitor)", "endpoint-picker",
                         by_service.get(ep["port"]), VIA_POD, "/metrics of the endpoint picker",
                         SCRAPE) for ep in mon.epp_monitor["endpoints"]]
    return out


def _hosts(plan: DeploymentPlan) -> dict[str, str]:
    """Pod DNS names (``<pod>.<headless service>``) -> pod key."""
    out = {}
    for w in plan.workloads:
        for g in range(w.replicas):
            for i in range(w.size):
                pod = lws_pod(plan.name, w.role, g, i) if w.kind == "LeaderWorkerSet" \
                    else statefulset_pod(plan.name, w.role, g)
                out[f"{pod}.{w.name}"] = f"{w.role}/{i}"
    return out


def _options(args: list[str], flag: str) -> list[list[str]]:
    """The values after each occurrence of ``flag`` up to the next option."""
    out = []
    for i, a in enumerate(args):
        if a == flag:
            vals = []
            for b in args[i + 1:]:
                if b.startswith("--"):
                    break
                vals.append(b)
            out.append(vals)
    return out


def _router_dials(plan: DeploymentPlan, pods: list[_Pod]) -> list[Dial]:
    """The router to the engines it lists or discovers; decode to the prefill bootstrap port the
    router hands it (SGLang; vLLM's Mooncake)."""
    if plan.router is None:
        return []
    args, hosts, out = list(plan.router.args), _hosts(plan), []
    decode = ", ".join(r.name for r in plan.roles if r.mode == "decode")
    for flag in ("--prefill", "--decode"):
        for vals in _options(args, flag):
            m = re.fullmatch(r"https?://([^:/]+):(\d+)", vals[0])
            key = hosts.get(m.group(1), f"? {m.group(1)}") if m else f"? {vals[0]}"
            out.append(Dial("router", key, int(m.group(2)) if m else None, VIA_POD,
                            f"{flag[2:]} URL", ROUTER))
            if len(vals) > 1:
                out.append(Dial(f"{decode} engine", key, int(vals[1]), VIA_POD,
                                "the prefill's KV bootstrap (the port the router hands out)", KV))
    port = _flag(args, "--service-discovery-port")
    if port is not None:
        for flag, mode in (("--prefill-selector", "prefill"), ("--decode-selector", "decode")):
            selector = dict(x.split("=", 1) for vals in _options(args, flag) for x in vals)
            for pod in (p for p in pods if _selects(selector, p.labels)):
                out.append(Dial("router (discovered)", pod.key, int(port), VIA_POD,
                                f"{mode} engine", ROUTER))
                boot = pod.annotations.get("sglang.ai/bootstrap-port")
                if mode == "prefill" and boot is not None:
                    out.append(Dial(f"{decode} engine", pod.key, int(boot), VIA_POD,
                                    "the prefill's KV bootstrap (its pod annotation)", KV))
    return out


def _gateway_dials(plan: DeploymentPlan, pods: list[_Pod]) -> list[Dial]:
    """The Gateway and the endpoint picker to the pool's target ports; each routing sidecar to
    its engine (localhost), to the prefill the picker names and, for SGLang, to its bootstrap."""
    g = plan.gateway
    if g is None:
        return []
    out = []
    ports = [t["number"] for t in g.pool_spec["targetPorts"]]
    pool = [p for p in pods if _selects(g.pool_spec["selector"]["matchLabels"], p.labels)]
    for pod in pool:
        out += [Dial("Gateway and endpoint picker", pod.key, port, VIA_POD,
                     "an InferencePool target port", POOL) for port in ports]
    prefill = [p for p in pool if p.labels.get(L_MODE) == "prefill"]
    for pod in (p for p in pods if p.sidecar is not None):
        args = pod.sidecar["args"]
        engine = int(_flag(args, "--model-server-port") or _flag(args, "--vllm-port"))
        n = int(_flag(args, "--data-parallel-size") or 1)
        out += [Dial(f"{pod.role} routing sidecar", pod.key, engine + k, VIA_LOCALHOST,
                     "its local engine", SIDECAR, local=True) for k in range(n)]
        for p in prefill:
            out += [Dial(f"{pod.role} routing sidecar", p.key, port, VIA_POD,
                         "the prefill the picker names", SIDECAR) for port in ports]
        if _flag(args, "--kv-connector") == "sglang" or _flag(args, "--connector") == "sglang":
            env = {e["name"]: e.get("value") for e in pod.sidecar.get("env", [])}
            boot = int(env.get("SGLANG_BOOTSTRAP_PORT") or sg.BOOTSTRAP_PORT)
            out += [Dial(f"{pod.role} routing sidecar", p.key, boot, VIA_POD,
                         "the prefill's KV bootstrap (SGLANG_BOOTSTRAP_PORT)", SIDECAR)
                    for p in prefill]
    return out


def _leader_address(pod: _Pod, form: AddressForm) -> str:
    """How the launcher of ``pod`` reaches its leader: the pod IP when the leader's name is made
    of variables the controller injects, else the literal name (never resolved)."""
    if form.leader_address is not None:
        value = form.leader_address
    else:
        value = next((e.get("value") for e in pod.spec.env if e["name"] == LEADER_HOST_ENV), "")
    refs = set(re.findall(r"\$\((\w+)\)", value or ""))
    return VIA_POD if refs and refs <= form.leader_vars else (value or "an unset leader name")


def _rank_dials(plan: DeploymentPlan, pods: list[_Pod], form: AddressForm) -> list[Dial]:
    """The pods of a multi-pod instance to their leader (DP handshake, dist-init, torch master;
    SGLang prefill nodes to the bootstrap server on node 0), and vLLM's NIXL handshake from decode
    to every prefill pod's side channel, at the host the prefill advertises."""
    out = []
    items = {e.role: dict(e.items) for e in plan.env_files}
    for rp in plan.roles:
        for pod in (p for p in pods if p.role == rp.name and p.index > 0):
            argv = form.argv(rp, pod.index)
            addr = _leader_address(pod, form)
            for host_flag, port_flag in (("--data-parallel-address", "--data-parallel-rpc-port"),
                                         ("--master-addr", "--master-port")):
                if LEADER_IP in (_flag(argv, host_flag) or "") and _flag(argv, port_flag):
                    out.append(Dial(f"{rp.name} pod {pod.index}", f"{rp.name}/0",
                                    int(_flag(argv, port_flag)), addr,
                                    f"{host_flag[2:]}:{port_flag[2:]}", RANKS))
            if rp.launch.ray_port is not None:
                out.append(Dial(f"{rp.name} pod {pod.index}", f"{rp.name}/0",
                                rp.launch.ray_port, addr, "ray start --address", RANKS))
            init = _flag(argv, "--dist-init-addr") or ""
            if LEADER_IP in init:
                out.append(Dial(f"{rp.name} pod {pod.index}", f"{rp.name}/0",
                                int(init.rsplit(":", 1)[1]), addr, "dist-init-addr", RANKS))
                if _flag(argv, "--disaggregation-mode") == "prefill":
                    out.append(Dial(f"{rp.name} pod {pod.index}", f"{rp.name}/0",
                                    int(_flag(argv, "--disaggregation-bootstrap-port")
                                        or sg.BOOTSTRAP_PORT), addr,
                                    "its bootstrap registration (at the dist-init host)", KV))
    decode = [r.name for r in plan.roles if r.mode == "decode"]
    for rp in (r for r in plan.roles if r.mode == "prefill"):
        argv = form.argv(rp, 0)
        if _flag(argv, "--disaggregation-mode") == "prefill":
            out.append(Dial(f"{', '.join(decode)} engine", f"{rp.name}/0",
                            int(_flag(argv, "--disaggregation-bootstrap-port")
                                or sg.BOOTSTRAP_PORT), VIA_POD,
                            "the KV bootstrap at the prefill's own port", KV))
        for pod in (p for p in pods if p.role == rp.name):
            bind = _side_channel(pod, items.get(rp.name, {}), form)
            address = VIA_POD if bind in (POD_ADDR, ALL) else (
                VIA_LOCALHOST if bind == LOOPBACK else bind)
            out += [Dial(f"{', '.join(decode)} engine", pod.key, p.port, address,
                         "the NIXL side channel the prefill advertises", KV)
                    for p in rp.launch.ports_of(pod.index) if p.name.startswith("nixl")]
    return out


def address_model(plan: DeploymentPlan, form: AddressForm = KUBERNETES) -> AddressModel:
    """Every listener and every dial of ``plan`` as target ``form`` renders it; the dials of
    the kinds the target's controller makes (``form.owned``) are left out."""
    pods = _pods(plan)
    listeners = _engine_listeners(plan, pods, form) + _control_listeners(plan, pods)
    dials = (_probe_dials(plan, pods) + _service_dials(plan, pods) + _router_dials(plan, pods)
             + _gateway_dials(plan, pods) + _rank_dials(plan, pods, form))
    for rp in (r for r in plan.roles if r.mode in form.fronted):
        for pod in (p for p in pods if p.role == rp.name and rp.launch.serves_api[p.index]):
            port = int(_flag(form.argv(rp, pod.index), "--port") or 8000)
            dials.append(Dial(f"{form.name}'s routing sidecar", pod.key, port, VIA_LOCALHOST,
                              "its local engine", "controller", local=True))
    return AddressModel(tuple(listeners), tuple(d for d in dials if d.kind not in form.owned))

