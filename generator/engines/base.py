"""What an engine dialect receives and returns (engine-neutral types).

A dialect turns one role (:class:`~generator.roles.RoleInput`: the validated spec pieces plus
the computed :class:`~generator.layout.RoleLayout`) into an :class:`EngineLaunch`: the program, the arguments
every pod of an instance shares, the arguments that differ per pod (ranks, addresses, headless),
the static environment (rendered into the role's env file) and the ports. Leader and worker
arguments therefore come from one source.

Runtime values that only the pod knows are written as shell references to variables the pod
template defines from the downward API (:data:`POD_IP`, :data:`LEADER_IP`); the launcher script
expands them. Everything else is a literal computed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..roles import RoleInput
from ..sizing import RoleSizing
from ..sizing.host import PodProcesses
from ..spec.models import WeightOffload

#: The pod's own IP (downward API ``status.podIP``), for addresses a process binds on.
POD_IP = "${MOEGEN_POD_IP}"
#: The leader pod's IP, resolved by the launcher from the leader's DNS name with a bounded retry
#: (a DNS name given to a ZMQ bind crashes vLLM: kserve PR#5155, llm-d-modelservice#7).
LEADER_IP = "${MOEGEN_LEADER_IP}"
#: What sets a derived flag (the engines' DERIVED_FLAGS tables, rule ENG005): the layout, and
#: for listener options, the HTTP port the probes, Services and router speak to.
DERIVED_BY_LAYOUT = "the layout (roles[].parallel, workload and the pool)"
DERIVED_LISTENER = "(the probes, Services and router speak HTTP on serving.port)"
#: Placeholders and the example values conformance tests substitute for them.
PLACEHOLDER_EXAMPLES = {POD_IP: "10.0.0.11", LEADER_IP: "10.0.0.10"}


@dataclass(frozen=True)
class Port:
    """A container port (name <= 15 chars, IANA_SVC_NAME)."""

    name: str
    port: int


@dataclass(frozen=True)
class EngineLaunch:
    """How to start one instance of a role.

    Attributes:
        program: argv prefix, e.g. ``("vllm", "serve", "/models/DeepSeek-V3")``.
        common: arguments of every pod.
        per_pod: extra arguments of pod ``i`` (index = pod index; leader first).
        serves_api: whether pod ``i`` runs the HTTP API (probes, client Service).
        http_pods: whether pod ``i`` binds the HTTP port (``serving.port``), API or not:
            SGLang's nodes with ``node_rank >= 1`` serve ``/health`` and their schedulers'
            ``/metrics`` there (sglang/srt/entrypoints/engine.py, 0.5.23:
            ``launch_dummy_health_check_server(host, port, enable_metrics)``). Empty: the pods
            that serve the API.
        env: static environment of the engine (engine variables; network ones are added by
            the plan), rendered into the role's env file.
        ports: container ports of every pod.
        pod_ports: extra ports of pod ``i`` (index = pod index): the leader's rendezvous port,
            the NIXL side channel of each DP rank the pod hosts.
        pod_env: environment that differs per pod (index = pod index; sorted name/value pairs),
            exported by the launcher before the engine starts (e.g. vLLM's NIXL base port, so
            every pod of a role binds the same side-channel ports). Empty: none.
        rendezvous_port: the port on the leader that the other pods of an instance dial at
            start (vLLM DP RPC or torch.distributed master, SGLang dist-init); workers wait,
            bounded, until it accepts connections. ``None`` for single-pod instances and for
            instances whose pods do not dial the leader.
        health_timeout_s: how long a ``/health`` request may take before a probe counts it as
            failed, s (vLLM's answers at once; SGLang's runs a one-token generation).
        notes: one-line explanations rendered as comments in the launcher.
        probe_port: the container port name the probes' ``/health`` requests go to
            (``http``; vLLM's DP supervisor answers for all its ranks on its own port).
        ray_port: the Ray head's port (GCS) when the instance's pods form a Ray cluster
            (vLLM ``parallel.executor: ray`` across pods): the leader starts the head and
            waits until every pod's node is alive before the engine starts; the other pods run
            a Ray node only (``ray start --block``), no engine. ``None`` otherwise.
    """

    program: tuple[str, ...]
    common: tuple[str, ...]
    per_pod: tuple[tuple[str, ...], ...]
    serves_api: tuple[bool, ...]
    env: dict[str, str] = field(default_factory=dict)
    http_pods: tuple[bool, ...] = ()
    ports: tuple[Port, ...] = ()
    pod_ports: tuple[tuple[Port, ...], ...] = ()
    pod_env: tuple[tuple[tuple[str, str], ...], ...] = ()
    rendezvous_port: int | None = None
    health_timeout_s: int = 5
    notes: tuple[str, ...] = ()
    probe_port: str = "http"
    ray_port: int | None = None

    def binds_http(self, pod: int) -> bool:
        """Whether pod ``pod`` listens on the HTTP port (the API, or a health and metrics
        server): where the engine serves ``/metrics``."""
        return self.http_pods[pod] if self.http_pods else self.serves_api[pod]

    def ports_of(self, pod: int) -> tuple[Port, ...]:
        """Every container port pod ``pod`` opens (common ports first)."""
        extra = self.pod_ports[pod] if pod < len(self.pod_ports) else ()
        return (*self.ports, *extra)

    def argv(self, pod: int, substitute: bool = False) -> list[str]:
        """Full argv of pod ``pod``; with ``substitute`` the placeholders get example IPs."""
        args = [*self.program, *self.common, *self.per_pod[pod]]
        if substitute:
            for key, value in PLACEHOLDER_EXAMPLES.items():
                args = [a.replace(key, value) for a in args]
        return args


class Dialect(Protocol):
    """The flags and facts of one known engine release (vLLM or SGLang), selected for the
    version a spec pins (``engines.registry.dialect_for``). Rules read its facts; the plan calls
    :meth:`launch`.

    Attributes:
        engine: ``vllm`` | ``sglang``; label: how people write it (``vLLM``, ``SGLang``).
        requested: the version the spec pins; version: the known release whose dialect applies.
    """

    engine: str
    label: str
    requested: str
    version: str
    #: Flags moegen derives (canonical name -> the spec field that sets it).
    derived_flags: dict[str, str]

    @property
    def gpu_memory_utilization_default(self) -> float | None:
        """vLLM's default ``--gpu-memory-utilization`` at this release; None for SGLang."""
        ...

    @property
    def options(self) -> frozenset[str]:
        """Command-line options of the release that moegen renders or checks."""
        ...

    def has(self, option: str) -> bool:
        """The release has command-line option ``option``."""
        ...

    @property
    def all2all_choices(self) -> list[str]:
        """Engine-neutral ``moe.all2all`` names the release can run."""
        ...

    @property
    def connectors(self) -> list[str]:
        """Engine-neutral ``kvTransfer.connector`` names the release can run."""
        ...

    def launch(self, role: RoleInput, sizing: RoleSizing | None,
               startup_s: int | None = None, drain_s: int = 60) -> EngineLaunch:
        """How to start one instance of ``role`` (``sizing``: the role's memory plan, whose
        numbers the command pins: vLLM's batched tokens, SGLang's mem_fraction_static;
        ``startup_s``: the role's cold-start budget, for the engine's own readiness waits;
        ``drain_s``: its graceful drain on SIGTERM, generator/durations.py)."""
        ...

    def processes(self, role: RoleInput, api_servers: int | None) -> tuple[PodProcesses, ...]:
        """The processes of each pod of one instance (leader first); ``api_servers``: the
        user's ``--api-server-count`` / ``--tokenizer-worker-num`` from engineArgs, if any."""
        ...


def offload_args(wo: WeightOffload | None) -> list[str]:
    """The weight-offloading flags of ``serving.weightOffload`` (the same spelling in vLLM,
    vllm/engine/arg_utils.py OffloadConfig fields, and SGLang, python/sglang/srt/server_args.py);
    SRV009 checks the release has them."""
    if wo is None:
        return []
    out = []
    if wo.groupSize:
        out += ["--offload-group-size", str(wo.groupSize), "--offload-num-in-group",
                str(wo.numInGroup), "--offload-prefetch-step", str(wo.prefetchStep)]
    if wo.cpuGiB:
        out += ["--cpu-offload-gb", repr(round(float(wo.cpuGiB), 6))]
    return out
