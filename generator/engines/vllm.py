"""The vLLM dialect: ``vllm serve`` flags and ``VLLM_*`` variables for every release 0.11.0..0.33.x.

Per-release facts (option names, ``--all2all-backend`` choices, EPLB keys, connectors, env
defaults) come from ``data/vllm-releases.json``, extracted by ``tools/extract_vllm_dialects.py``
from each release's own parser and sources. The
switches that change how a flag is written:

=========================  ===========  ===============================================
concern                    releases     form (source file in the vLLM release)
=========================  ===========  ===============================================
all-to-all backend         0.11.0       env ``VLLM_ALL2ALL_BACKEND`` (vllm/envs.py)
                           >= 0.11.1    ``--all2all-backend`` (vllm/config/parallel.py)
EPLB                       all          ``--enable-eplb --eplb-config '{json}'``
                                        (vllm/config/parallel.py EPLBConfig); the legacy
                                        ``--num-redundant-experts``/``--eplb-*`` flags were
                                        removed in 0.12.0 and are never rendered
multi-node TP/PP (no Ray)  >= 0.11.1    ``--nnodes --node-rank --master-addr --master-port``
NIXL side-channel port     0.11.0       base 5557 + DP rank x TP (vllm/envs.py, nixl connector)
                           >= 0.11.1    base 5600 + DP rank
MooncakeConnector          >= 0.13.0    ``VLLM_MOONCAKE_BOOTSTRAP_PORT`` (8998)
engine ready timeout       >= 0.14.0    ``VLLM_ENGINE_READY_TIMEOUT_S`` (default 600 s)
KV load failure policy     >= 0.13.0    ``kv_load_failure_policy`` in --kv-transfer-config
                                        (vllm/config/kv_transfer.py; default recompute,
                                        ``fail`` from 0.17.0): decode renders ``recompute``
NIXL compatibility hash    >= 0.13.0    ``compute_nixl_compatibility_hash``: model, dtype,
                                        KV dtype, attention backend, vLLM version, HMA
                                        (vllm/distributed/kv_transfer/kv_connector/v1/
                                        nixl/metadata.py, NIXL_CONNECTOR_VERSION 2)
                           >= 0.28.0    + the EAGLE/MTP speculative config
                                        (``_get_speculative_compatibility_factors``,
                                        NIXL_CONNECTOR_VERSION 6-7)
=========================  ===========  ===============================================

Where each flag is defined (vLLM 0.33.0; ``EngineArgs.add_cli_args`` in
vllm/engine/arg_utils.py builds the parser from the config dataclasses):

* ``--tensor-parallel-size``, ``--pipeline-parallel-size``, ``--data-parallel-size``,
  ``--data-parallel-size-local``, ``--data-parallel-start-rank``, ``--data-parallel-rank``,
  ``--data-parallel-address``, ``--data-parallel-rpc-port``, ``--enable-expert-parallel``,
  ``--all2all-backend``, ``--enable-eplb``, ``--eplb-config``, ``--expert-placement-strategy``,
  ``--nnodes``, ``--node-rank``, ``--master-addr``, ``--master-port``: ParallelConfig,
  vllm/config/parallel.py.
* ``--max-model-len``, ``--served-model-name``, ``--enforce-eager``: ModelConfig,
  vllm/config/model.py.
* ``--gpu-memory-utilization``, ``--kv-cache-dtype``: CacheConfig, vllm/config/cache.py.
* ``--max-num-seqs``, ``--max-num-batched-tokens``: SchedulerConfig, vllm/config/scheduler.py.
* ``--kv-transfer-config``: KVTransferConfig, vllm/config/kv_transfer.py.
* ``--speculative-config``: SpeculativeConfig, vllm/config/speculative.py.
* ``--headless``: vllm/entrypoints/cli/serve.py; ``--port``: vllm/entrypoints/openai/cli_args.py.
* ``VLLM_*`` variables: vllm/envs.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

from ..facts.deepep import qp_depth as deepep_qp_depth
from ..facts.requirements import required_flags
from ..facts.versions import SupportedRange, parse_version, select_known
from ..layout import Spread
from ..pods import DRAIN_S
from ..resources import package_text
from ..roles import RoleInput
from ..roles import max_len as role_max_len
from ..sizing import RoleSizing
from ..sizing.host import PodProcesses
from .base import DERIVED_BY_LAYOUT as _LAYOUT
from .base import DERIVED_LISTENER as _LISTENER
from .base import POD_IP, EngineLaunch, Port, offload_args
from .network import nic_family
from .options import release_options
from .vllm_ranks import DP_SUPERVISOR_PORT, rank_args

#: vLLM releases moegen supports: 0.11.0 up to the 0.33.x series (docs/spec.md §2).
SUPPORTED = [SupportedRange((0, 11, 0), (0, 34, 0))]

#: ``VLLM_NIXL_SIDE_CHANNEL_PORT``: the >= 0.11.1 default, pinned so the 0.11.0 default (5557)
#: and docs that still say 5557 never disagree with what the pods open (vllm/envs.py).
NIXL_SIDE_CHANNEL_PORT = 5600
#: ``VLLM_MOONCAKE_BOOTSTRAP_PORT``: vLLM's default (vllm/envs.py, >= 0.13.0).
MOONCAKE_BOOTSTRAP_PORT = 8998
#: ``VLLM_ENGINE_READY_TIMEOUT_S``: how long the API servers wait for the engine cores' READY,
#: which with several API servers covers weight load, compile and graph capture
#: (vllm/v1/engine/core_client.py; docs/platform-facts.md §4). The default 600 s is shorter than a
#: DeepSeek load over DP16 across nodes (7-10 min in llm-d's wide-EP guide, docs/design.md §4): moegen sets
#: the role's startup budget (sizing/host.py); 1800 s when there is none.
ENGINE_READY_TIMEOUT_S = 1800

#: First release whose NixlConnector lets a decode instance run a smaller tensor-parallel size
#: than prefill (P TP > D TP, vllm PR#27274: the ``tp_ratio < 0`` paths of
#: nixl_connector.py:1576-1693 in 0.14.0). 0.11.0-0.13.0 assert "Decode TP cannot be smaller
#: than prefill TP" in the handshake (nixl_connector.py:968 at 0.11.0, :1577 at 0.13.0; 0.11.1
#: and 0.12.0 already fail tp_ratio's "is not divisible" assertion, :726-730): read in each
#: release's wheel. vllm-project/vllm#43523.
NIXL_SMALLER_DECODE_TP = (0, 14, 0)
#: vLLM's switch that lets DeepEP's low-latency kernels use multi-node NVLink (vllm/envs.py, in
#: every release 0.11.0-0.33.0: data/vllm-releases.json env).
MNNVL_SWITCH = "VLLM_DEEPEP_LOW_LATENCY_USE_MNNVL"
#: moegen's kvTransfer.connector -> vLLM connector class (registered names, vLLM
#: vllm/distributed/kv_transfer/kv_connector/factory.py).
CONNECTORS = {"nixl": "NixlConnector", "mooncake": "MooncakeConnector",
              "lmcache": "LMCacheConnectorV1"}
#: Role mode -> kv_role. Producer/consumer, not kv_both: docs/design.md §3.
KV_ROLES = {"prefill": "kv_producer", "decode": "kv_consumer", "unified": "kv_both"}
#: What a decode engine does when the KV of a request cannot be loaded from its prefill (the
#: prefill instance went away: scale-down, rollout, group re-creation, node failure; its NIXL
#: handshake failed, e.g. a prefill of another vLLM version mid-upgrade; its blocks expired):
#: ``recompute`` the missing blocks locally (vllm/v1/core/sched/scheduler.py
#: ``recompute_kv_load_failures``) instead of failing the request, the default from 0.17.0
#: (vllm PR#34896). Rendered on decode roles of the releases that have the key (>= 0.13.0,
#: vllm PR#26813). generator/lifecycle.py lists the paths it covers.
KV_LOAD_FAILURE_POLICY = "recompute"
#: First release whose NIXL compatibility hash covers the speculative (EAGLE/MTP) config, so a
#: prefill without the decode's MTP refuses the handshake. Read from every release's sdist:
#: ``NIXL_CONNECTOR_VERSION`` 5 in 0.27.1, 7 in 0.28.0 (version 6 = "Validate EAGLE/MTP
#: speculative configuration compatibility"), vllm/distributed/kv_transfer/kv_connector/v1/
#: nixl/metadata.py.
NIXL_HASHES_SPECULATIVE = (0, 28, 0)


#: Options that change what a request may contain or which tokens its prompt becomes: in
#: prefill/decode disaggregation each leg renders and validates the request itself, so both must
#: run them alike (rule PD090). vllm@0.33.0 vllm/renderers/online_renderer.py: tool_choice
#: "auto" without --enable-auto-tool-choice and --tool-call-parser is a 400 (and "required" or a
#: named tool without a parser); the chat template, its content format and default kwargs, the
#: tools left in the prompt (exclude_tools_when_tool_choice_none) and the tokenizer make the
#: prompt's tokens, whose KV the decode leg pulls by block; --max-logprobs and
#: --enable-prompt-embeds bound what a request may ask (vllm/sampling_params.py "greater than max
#: allowed"; vllm/renderers/base.py "You must set `--enable-prompt-embeds`").
REQUEST_SHAPING = ("--enable-auto-tool-choice", "--tool-call-parser", "--tool-parser-plugin",
                   "--chat-template", "--chat-template-content-format",
                   "--default-chat-template-kwargs", "--trust-request-chat-template",
                   "--exclude-tools-when-tool-choice-none", "--tokenizer", "--tokenizer-mode",
                   "--trust-remote-code", "--max-logprobs", "--enable-prompt-embeds")


@cache
def _releases() -> dict:
    text = package_text("engines", "data", "vllm-releases.json")
    return json.loads(text)["releases"]


def max_num_seqs(role: RoleInput) -> int | None:
    """The ``--max-num-seqs`` moegen renders (per DP rank: vllm/config/scheduler.py
    max_num_seqs): ``serving.maxNumSeqs``, else ceil(sizing.concurrency / data), what the HBM
    check guarantees each rank holds at maxModelLen; None: the engine's default."""
    if role.serving.maxNumSeqs is not None:
        return role.serving.maxNumSeqs
    if role.admission is not None:
        return -(-role.admission // role.layout.data)
    return None


def known_versions() -> list[str]:
    """Every vLLM release moegen has read (0.11.0 .. 0.33.0)."""
    return list(_releases())


#: Flags moegen derives for vLLM, by canonical name (``engines/options.py`` folds aliases such as
#: ``-tp``), with the spec field that sets each: ``roles[].engineArgs`` may not set them (rule
#: ENG005). Options are those of vllm/engine/arg_utils.py and entrypoints/openai/cli_args.py.
DERIVED_FLAGS: dict[str, str] = {
    "--model": "spec.model.path",
    "--served-model-name": "spec.model.name",
    "--port": "serving.port",
    "--host": "network.bindAddress",
    "--tensor-parallel-size": "roles[].parallel.tensor",
    "--pipeline-parallel-size": "roles[].parallel.pipeline",
    "--data-parallel-size": "roles[].parallel.data",
    "--enable-expert-parallel": "roles[].parallel.expert",
    "--decode-context-parallel-size": "roles[].parallel.context",
    "--prefill-context-parallel-size": "roles[].parallel.context",
    **{f: _LAYOUT for f in (
        "--data-parallel-size-local", "--data-parallel-start-rank", "--data-parallel-rank",
        "--data-parallel-address", "--data-parallel-rpc-port", "--data-parallel-backend",
        "--data-parallel-hybrid-lb", "--data-parallel-external-lb", "--headless", "--nnodes",
        "--node-rank", "--master-addr", "--master-port")},
    "--distributed-executor-backend": "roles[].parallel.executor",
    **{f: "router.gateway.rankEndpoints (one endpoint per DP rank behind the inference gateway)"
       for f in ("--data-parallel-multi-port-external-lb", "--data-parallel-supervisor-port")},
    "--all2all-backend": "roles[].moe.all2all",
    "--enable-eplb": "roles[].moe.eplb",
    "--eplb-config": "roles[].moe.eplb",
    "--enable-dbo": "roles[].moe.overlap",
    "--num-redundant-experts": "roles[].moe.eplb.redundantExperts",
    "--eplb-window-size": "roles[].moe.eplb.windowSize",
    "--eplb-step-interval": "roles[].moe.eplb.stepInterval",
    "--eplb-log-balancedness": "roles[].moe.eplb.logBalancedness",
    "--expert-placement-strategy": "roles[].moe.placement",
    "--kv-transfer-config": "roles[].kvTransfer",
    "--speculative-config": "roles[].speculative",
    "--max-model-len": "serving.maxModelLen",
    "--kv-cache-dtype": "serving.kvCacheDtype",
    "--gpu-memory-utilization": "serving.gpuMemoryUtilization",
    "--kv-cache-memory-bytes": "serving.kvCacheMemoryBytes",
    "--cpu-offload-gb": "serving.weightOffload.cpuGiB",
    "--offload-group-size": "serving.weightOffload.groupSize",
    "--offload-num-in-group": "serving.weightOffload.numInGroup",
    "--offload-prefetch-step": "serving.weightOffload.prefetchStep",
    "--max-num-seqs": "serving.maxNumSeqs (or roles[].sizing.concurrency)",
    "--max-num-batched-tokens": "serving.maxNumBatchedTokens",
    "--enforce-eager": "serving.enforceEager",
    "--quantization": "spec.model.weights",
    "--shutdown-timeout": "(derived: the pod's graceful shutdown, terminationGracePeriodSeconds)",
    **{f: _LISTENER for f in ("--uds", "--grpc", "--ssl-keyfile", "--ssl-certfile",
                              "--ssl-ca-certs")},
}


@dataclass(frozen=True)
class VllmDialect:
    """The flag/env dialect of one known vLLM release (``version``), selected for ``requested``."""

    requested: str
    version: str
    engine: ClassVar[str] = "vllm"
    label: ClassVar[str] = "vLLM"
    derived_flags: ClassVar[dict[str, str]] = DERIVED_FLAGS

    @property
    def facts(self) -> dict:
        """The release's facts from ``data/vllm-releases.json``."""
        return _releases()[self.version]

    def _v(self) -> tuple[int, int, int]:
        return parse_version(self.version)

    # -- what the release supports (used by the rules) --------------------------------------
    @property
    def all2all_choices(self) -> list[str]:
        """Accepted all-to-all backends (flag choices, or the env choices in 0.11.0)."""
        a2a = self.facts["all2all"]
        return a2a["flagChoices"] or a2a["envChoices"]

    @property
    def all2all_by_env(self) -> bool:
        """True when the backend is set by ``VLLM_ALL2ALL_BACKEND`` (0.11.0 has no flag)."""
        return not self.facts["all2all"]["flagChoices"]

    @property
    def multinode(self) -> bool:
        """``--nnodes/--node-rank/--master-addr`` exist (>= 0.11.1)."""
        return self.facts["multinodeFlags"]

    @property
    def kv_load_failure_policy(self) -> bool:
        """``--kv-transfer-config`` takes ``kv_load_failure_policy`` (>= 0.13.0)."""
        return "kv_load_failure_policy" in self.facts["kvTransfer"]["keys"]

    @property
    def connector_classes(self) -> list[str]:
        """Registered KV connector classes of the release (factory.py)."""
        return self.facts["kvTransfer"]["connectors"]

    @property
    def connectors(self) -> list[str]:
        """Engine-neutral ``kvTransfer.connector`` names whose class the release registers."""
        return [name for name, cls in CONNECTORS.items() if cls in self.connector_classes]

    def has(self, option: str) -> bool:
        """The release has command-line option ``option``."""
        return option in self.options

    @property
    def kv_cache_dtypes(self) -> list[str]:
        """Accepted ``--kv-cache-dtype`` values."""
        return self.facts["kvCacheDtypes"]

    @property
    def speculative_methods(self) -> list[str]:
        """Accepted ``method`` values of ``--speculative-config``."""
        return self.facts["speculativeMethods"]

    @property
    def gpu_memory_utilization_default(self) -> float:
        """``--gpu-memory-utilization`` default: 0.9, 0.92 from 0.20.0."""
        return float(self.facts["gpuMemoryUtilizationDefault"])

    @property
    def options(self) -> frozenset[str]:
        """Options of the release: every one when moegen ships its full list
        (``engines/options.py``), else the ones it tracks (plus the serve-level ``--port``)."""
        full = release_options("vllm", self.version)
        return full.options if full is not None else frozenset(self.facts["options"]) | {"--port"}

    @property
    def nixl_smaller_decode_tp(self) -> bool:
        """NIXL transfers KV from a prefill TP group to a smaller decode TP group (>= 0.14.0)."""
        return self._v() >= NIXL_SMALLER_DECODE_TP

    @property
    def nixl_hash_covers_speculative(self) -> bool:
        """The NIXL handshake compares prefill's and decode's speculative configs (>= 0.28.0)."""
        return self._v() >= NIXL_HASHES_SPECULATIVE

    def _nixl_scale(self, tensor: int) -> int:
        """Port step per DP rank: 1 from 0.11.1 (``data_parallel_index``;
        vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_scheduler.py); TP in 0.11.0
        (nixl_connector.py)."""
        return tensor if self._v() < (0, 11, 1) else 1

    def nixl_base(self, ranks: tuple[int, ...], tensor: int) -> int:
        """The ``VLLM_NIXL_SIDE_CHANNEL_PORT`` a pod hosting DP ``ranks`` runs with: the engine of
        rank r binds base + r x step, so a pod whose first rank is s gets base - s x step and its
        engines bind :data:`NIXL_SIDE_CHANNEL_PORT` onward, the same ports on every pod of a
        role (one LWS worker template declares them for all workers). The port is advertised in
        the request's ``kv_transfer_params`` (remote_port), so no peer assumes a base."""
        return NIXL_SIDE_CHANNEL_PORT - min(ranks or (0,)) * self._nixl_scale(tensor)

    def nixl_ports(self, ranks: tuple[int, ...], tensor: int) -> list[int]:
        """NIXL side-channel ports the engines of DP ``ranks`` open on their pod (one per rank;
        :meth:`nixl_base`)."""
        base, step = self.nixl_base(ranks, tensor), self._nixl_scale(tensor)
        return [base + r * step for r in (ranks or (0,))]

    def nixl_port_range(self, layout) -> tuple[int, int]:
        """NIXL side-channel ports a pod of ``layout`` opens, ``[first, last]`` (inclusive)."""
        ports = [p for pod in layout.pods for p in self.nixl_ports(pod.dp_ranks, layout.tensor)]
        return min(ports), max(ports)

    # -- rendering --------------------------------------------------------------------------
    def launch(self, role: RoleInput, sizing: RoleSizing | None = None,
               startup_s: int | None = None, drain_s: int = DRAIN_S) -> EngineLaunch:
        """Build the launch of one instance of ``role`` (the role must have passed the rules).

        ``sizing``: the role's memory plan; its ``batched_tokens`` (vLLM's own
        ``--max-num-batched-tokens`` default for that GPU and backend when the spec leaves it
        unset) is rendered, which pins the activation budget the plan was computed with.
        ``startup_s``: the role's cold-start budget (``sizing/host.py``), for
        VLLM_ENGINE_READY_TIMEOUT_S (else :data:`ENGINE_READY_TIMEOUT_S`). ``drain_s``: how long
        the engine drains in-flight requests on SIGTERM (``--shutdown-timeout``, >= 0.18.0;
        generator/durations.py).
        """
        batched_tokens = sizing.batched_tokens if sizing is not None else None
        lay = role.layout
        s = role.serving
        common: list[str] = [
            "--served-model-name", role.model.name,
            *(["--host", POD_IP] if role.network.bindAddress == "podIP" else []),
            "--port", str(s.port),
            "--tensor-parallel-size", str(lay.tensor),
            "--pipeline-parallel-size", str(lay.pipeline),
        ]
        # What the model needs on every command line (facts/requirements.py).
        common += required_flags(self.engine, self.version, role.arch)
        env: dict[str, str] = {}
        notes: list[str] = []
        if lay.data > 1:
            common += ["--data-parallel-size", str(lay.data)]
        if role.parallel.executor == "ray":
            # Without it vLLM >= 0.11.1 refuses a world size above the node's GPUs instead of
            # picking Ray (vllm-project/vllm#25775, #30140; vllm/config/parallel.py).
            common += ["--distributed-executor-backend", "ray"]
        if lay.expert_parallel:
            common += ["--enable-expert-parallel"]
        moe = role.moe
        common += self._moe_args(role, env)
        common += self._kv_transfer_args(role, env)
        if role.speculative is not None:
            spec = {"method": "mtp", "num_speculative_tokens": role.speculative.numSpeculativeTokens}
            common += ["--speculative-config", _json(spec)]
        max_len = role_max_len(role, "vllm")
        gmu = s.gpuMemoryUtilization or self.gpu_memory_utilization_default
        common += ["--max-model-len", str(max_len),
                   "--gpu-memory-utilization", _num(gmu),
                   "--kv-cache-dtype", s.kvCacheDtype]
        seqs = max_num_seqs(role)
        if seqs is not None:
            common += ["--max-num-seqs", str(seqs)]
        planned = s.maxNumBatchedTokens or batched_tokens
        if planned is not None:
            common += ["--max-num-batched-tokens", str(planned)]
        if s.enforceEager:
            common += ["--enforce-eager"]
        if moe is not None and moe.all2all == "deepep_low_latency" and planned \
                and self._v() >= (0, 20, 0):
            # DeepEP's low-latency buffer takes max_num_batched_tokens dispatch tokens per rank
            # (fused_moe/all2all_utils.py moe.max_num_tokens; before 0.20 VLLM_MOE_DP_CHUNK_SIZE
            # 256), and vLLM leaves NVSHMEM_QP_DEPTH at DeepEP's 1024 (facts/deepep.py).
            depth = deepep_qp_depth(planned)
            if depth is not None:
                env["NVSHMEM_QP_DEPTH"] = str(depth)
        if s.kvCacheMemoryBytes:
            common += ["--kv-cache-memory-bytes", str(s.kvCacheMemoryBytes)]
        common += offload_args(s.weightOffload)
        if self._v() >= (0, 18, 0):
            # Drain in-flight requests on SIGTERM (default 0 aborts them; vllm/config/vllm.py).
            common += ["--shutdown-timeout", str(drain_s)]
        if self._v() >= (0, 14, 0):
            env["VLLM_ENGINE_READY_TIMEOUT_S"] = str(startup_s or ENGINE_READY_TIMEOUT_S)

        if role.speculative is not None and role.speculative_from:
            notes.append(f"speculative config of decode role {role.speculative_from!r}: the NIXL "
                         "handshake compares it (vLLM >= 0.28.0) and prefill computes the MTP "
                         "layer's KV")
        per_pod, serves, rendezvous = rank_args(role, notes)
        ports = [Port("http", s.port)]
        if role.rank_ports > 1:   # the DP supervisor: one API server per local rank
            ports += [Port(f"http-{i}", s.port + i) for i in range(1, role.rank_ports)]
            ports.append(Port("dp-supervisor", DP_SUPERVISOR_PORT))
        pod_ports, pod_env = self._pod_ports(role, rendezvous, notes)
        ray = rendezvous is not None and rendezvous[0] == "ray-gcs"
        if ray:
            # Each node's own IP, as its Ray node registers (ray start --node-ip-address): vLLM
            # keeps VLLM_HOST_IP per worker (WORKER_SPECIFIC_ENV_VARS, vLLM 0.11.0
            # vllm/executor/ray_distributed_executor.py; 0.33.0 vllm/v1/executor/ray_utils.py),
            # and up to the releases that pin the driver's bundle to "node:<VLLM_HOST_IP>"
            # (0.11.0 vllm/executor/ray_utils.py) a driver IP no Ray node has never schedules
            # (vllm-project/vllm#13388); 0.33.0 finds the driver's node by its node ID.
            pod_env = [tuple(sorted({**dict(e), "VLLM_HOST_IP": POD_IP}.items()))
                       for e in pod_env]
        return EngineLaunch(
            program=("vllm", "serve", role.model.argument()),
            common=tuple(common),
            per_pod=tuple(tuple(a) for a in per_pod),
            serves_api=tuple(serves),
            env=env,
            ports=tuple(ports),
            pod_ports=tuple(pod_ports),
            pod_env=tuple(pod_env) if any(pod_env) else (),
            rendezvous_port=rendezvous[1] if rendezvous and len(role.layout.pods) > 1 else None,
            probe_port="dp-supervisor" if role.rank_ports > 1 else "http",
            notes=tuple(notes),
            ray_port=rendezvous[1] if ray else None,
        )

    def _moe_args(self, role: RoleInput, env: dict[str, str]) -> list[str]:
        """The MoE flags of ``role`` (all-to-all backend, MNNVL switch, dual-batch overlap, EPLB,
        expert placement); environment they need goes into ``env``."""
        moe = role.moe
        common: list[str] = []
        if moe is not None and moe.all2all is not None:
            if self.all2all_by_env:
                env["VLLM_ALL2ALL_BACKEND"] = moe.all2all
            else:
                common += ["--all2all-backend", moe.all2all]
        if role.mnnvl and moe is not None and moe.all2all == "deepep_low_latency" \
                and self.facts["env"].get(MNNVL_SWITCH) is not None:
            # DeepEP's low-latency kernels over the NVL72 fabric: off by default (vllm/envs.py
            # VLLM_DEEPEP_LOW_LATENCY_USE_MNNVL False; all2all.py passes it as allow_mnnvl and
            # DeepEP then sets NVSHMEM_DISABLE_MNNVL=1, deep_ep/buffers/legacy.py:124-126);
            # vllm PR#27328.
            env[MNNVL_SWITCH] = "1"
        if moe is not None and moe.overlap == "two_batch":
            # Dual batch overlap: two micro-batches when DP > 1 (ParallelConfig.enable_dbo,
            # vllm/config/parallel.py; vllm/v1/worker/gpu/ubatch_utils.py). No single-batch
            # form exists in vLLM (OVL002).
            common += ["--enable-dbo"]
        if moe is not None and moe.eplb is not None and moe.eplb.enabled:
            eplb = {"window_size": moe.eplb.windowSize, "step_interval": moe.eplb.stepInterval,
                    "num_redundant_experts": moe.eplb.redundantExperts,
                    "log_balancedness": moe.eplb.logBalancedness}
            common += ["--enable-eplb", "--eplb-config", _json(eplb)]
        if moe is not None and moe.placement is not None:
            common += ["--expert-placement-strategy", moe.placement]
        return common

    def _kv_transfer_args(self, role: RoleInput, env: dict[str, str]) -> list[str]:
        """``--kv-transfer-config`` of a PD role (connector, KV role, the decode's load-failure
        policy, the NIC's NIXL backend / Mooncake devices and protocol); its ports go into
        ``env``."""
        common: list[str] = []
        if role.kv_transfer is None:
            return common
        kvt = {"kv_connector": CONNECTORS[role.kv_transfer.connector],
               "kv_role": KV_ROLES[role.mode]}
        policy = role.kv_transfer.loadFailurePolicy
        if (role.mode == "decode" or policy is not None) and self.kv_load_failure_policy:
            kvt["kv_load_failure_policy"] = policy or KV_LOAD_FAILURE_POLICY
        extra = kv_connector_extra(role.kv_transfer.connector, role.network.rdma)
        if extra is not None:
            kvt["kv_connector_extra_config"] = extra
        common += ["--kv-transfer-config", _json(kvt)]
        if role.kv_transfer.connector == "nixl":
            env["VLLM_NIXL_SIDE_CHANNEL_PORT"] = str(NIXL_SIDE_CHANNEL_PORT)
        if role.kv_transfer.connector == "mooncake":
            env["VLLM_MOONCAKE_BOOTSTRAP_PORT"] = str(MOONCAKE_BOOTSTRAP_PORT)
        return common

    def _pod_ports(self, role: RoleInput, rendezvous, notes: list[str]):
        """(extra ports, extra env) of each pod of one instance: the leader's rendezvous port,
        the Mooncake bootstrap server, and the NIXL side channel of each DP rank the pod hosts
        at a per-pod base (:meth:`nixl_base`; a note appended to ``notes``)."""
        mooncake = role.kv_transfer is not None and role.kv_transfer.connector == "mooncake"
        pod_ports, pod_env = [], []
        for pod in role.layout.pods:
            extra = [Port(rendezvous[0], rendezvous[1])] if rendezvous and pod.index == 0 else []
            # The Mooncake bootstrap server runs on DP rank 0 (internal LB) or on every rank's
            # pod (external LB) (mooncake_connector.py should_launch_bootstrap_server).
            if mooncake and (pod.index == 0 or role.layout.spread is Spread.PER_RANK):
                extra.insert(0, Port("kv-bootstrap", MOONCAKE_BOOTSTRAP_PORT))
            env_of_pod: dict[str, str] = {}
            if role.kv_transfer is not None and role.kv_transfer.connector == "nixl":
                nixl = self.nixl_ports(pod.dp_ranks, role.layout.tensor)
                extra += [Port(f"nixl-{k}" if role.layout.data > 1 else "nixl", p)
                          for k, p in enumerate(nixl)]
                base = self.nixl_base(pod.dp_ranks, role.layout.tensor)
                if base != NIXL_SIDE_CHANNEL_PORT:
                    env_of_pod["VLLM_NIXL_SIDE_CHANNEL_PORT"] = str(base)
            pod_ports.append(tuple(extra))
            pod_env.append(tuple(sorted(env_of_pod.items())))
        if any(pod_env):
            notes.append(f"VLLM_NIXL_SIDE_CHANNEL_PORT per pod = {NIXL_SIDE_CHANNEL_PORT} - its "
                         "first DP rank: rank r binds that + r, so every pod binds "
                         f"{NIXL_SIDE_CHANNEL_PORT} onward (nixl/base_scheduler.py)")
        return pod_ports, pod_env

    def processes(self, role: RoleInput, api_servers: int | None) -> tuple[PodProcesses, ...]:
        """The processes of each pod (vLLM 0.33 vllm/entrypoints/cli/serve.py, v1/engine/utils.py,
        v1/executor/multiproc_executor.py):

        * one worker per GPU (``VllmWorker``); with one GPU and no DP the engine core runs the
          model itself;
        * one engine core per local DP rank (``EngineCore_DP``) besides its workers when the
          multiprocess executor runs (TP x PP > 1, or any DP: vllm/config/parallel.py);
        * API servers: ``--api-server-count``, default (from 0.16.0) the global DP size on the
          pod that serves the API with internal load balancing, 1 with external load balancing,
          0 on headless pods; before 0.16.0 one;
        * one DP coordinator on the DP-rank-0 pod when DP > 1 (MoE wave coordination,
          vllm/v1/engine/utils.py ``needs_dp_coordinator``).
        """
        lay = role.layout
        local_world = lay.tensor * lay.pipeline
        dp_default = lay.data if self._v() >= (0, 16, 0) else 1
        out = []
        for pod in lay.pods:
            serves = pod.index == 0 or lay.spread is Spread.PER_RANK or role.rank_ports > 1
            if role.rank_ports > 1:   # the DP supervisor starts one API server per rank
                api = role.rank_ports
            elif lay.spread is Spread.PER_RANK:
                api = api_servers or 1
            elif lay.spread is Spread.MODEL:
                api = (api_servers or 1) if serves else 0
            else:
                api = (api_servers or dp_default) if serves else 0
            gpus = pod.gpus
            if lay.spread is Spread.MODEL:
                cores = 1 if pod.index == 0 else 0
            elif lay.data == 1 and local_world == 1:
                cores = 0   # the engine core is the GPU process
            else:
                cores = len(pod.dp_ranks)
            coordinator = 1 if lay.data > 1 and pod.index == 0 else 0
            out.append(PodProcesses(gpu=gpus, api=api, other=cores + coordinator))
        return tuple(out)


def _json(obj: dict) -> str:
    """Compact JSON for a flag value (stable key order as given)."""
    return json.dumps(obj, separators=(",", ":"))


def _num(x: float) -> str:
    """Shortest decimal form of a float (0.92, not 0.9200000000000002)."""
    return repr(round(float(x), 6))


def dialect(requested: str) -> VllmDialect:
    """The dialect for ``requested`` (raises versions.UnsupportedVersion outside 0.11.0..0.33.x)."""
    return VllmDialect(requested, select_known(requested, known_versions(), SUPPORTED))


def kv_connector_extra(connector: str, rdma) -> dict | None:
    """``kv_connector_extra_config`` of a PD role's ``--kv-transfer-config`` (None: none), from
    the spec's connector (``nixl``/``mooncake``) and ``network.rdma`` (a ``Rdma`` or None).

    NixlConnector's default backends ["UCX"] (nixl/base_worker.py:624-626) cannot do RDMA on EFA
    (vllm-project/vllm#41814, ai-dynamo/nixl#909): LIBFABRIC can. Mooncake gets the spec's HCAs, as SGLang's
    --disaggregation-ib-device gives them: it otherwise opens every device it finds
    ("device_name" "" = all; mooncake_connector.py register_kv_caches, engine.initialize), and
    the NIC's protocol ("mooncake_protocol", default "rdma": EFA needs "efa")."""
    nic = nic_family(rdma)
    if connector == "nixl" and nic is not None and nic.nixl_backend != "UCX":
        return {"backends": [nic.nixl_backend]}
    if connector == "mooncake" and rdma is not None:
        extra = {"device_name": ",".join(rdma.devices)} if rdma.devices else {}
        if nic.mooncake_protocol != "rdma":
            extra["mooncake_protocol"] = nic.mooncake_protocol
        return extra or None
    return None
